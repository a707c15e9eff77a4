#include "driver/tune.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <numeric>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "ir/text.h"

namespace mugraph::driver {

namespace {

std::vector<codegen::NamedGraph> named(const std::vector<const ir::KernelGraph*>& graphs) {
  std::vector<codegen::NamedGraph> out;
  for (size_t i = 0; i < graphs.size(); ++i) out.push_back({"t" + std::to_string(i), graphs[i]});
  return out;
}

int threads_for(const TuneOptions& o) {
  return o.cpu_threads > 0 ? o.cpu_threads : runtime::idle_cores(0.2);
}

struct ThreadScope {
  explicit ThreadScope(int n) { runtime::set_cpu_threads(n); }
  ~ThreadScope() { runtime::set_cpu_threads(0); }
};

std::string us(double s) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(s < 1e-3 ? 1 : 0) << s * 1e6 << " us";
  return os.str();
}

}  // namespace

search::MeasureBatch cpu_measure_batch(const ir::KernelGraph& program, const TuneOptions& o,
                                       int threads) {
  return [&program, &o, threads](const std::vector<const ir::KernelGraph*>& graphs) -> Result<std::vector<double>> {
    MG_ASSIGN_OR_RETURN(auto mod, compile_cpu(named(graphs), o.jit));
    ThreadScope scope(threads);
    std::vector<double> out;
    for (size_t i = 0; i < graphs.size(); ++i) {
      CpuBuffers b = make_buffers(*graphs[i], o.seed, &program);
      // One timed call sizes the rest: o.runs calls, more for a fast kernel (about 10 ms in
      // all), the median taken.
      MG_ASSIGN_OR_RETURN(double first, mod->time(i, b.in(), b.out(), 1));
      const int runs = static_cast<int>(std::clamp(std::ceil(0.01 / std::max(first, 1e-9)),
                                                   static_cast<double>(o.runs), 200.0));
      MG_ASSIGN_OR_RETURN(double t, mod->time(i, b.in(), b.out(), runs));
      out.push_back(t);
    }
    return out;
  };
}

Result<TuneReport> tune(const ir::KernelGraph& program, const TuneOptions& o) {
  TuneReport r;
  MG_RETURN_IF_ERROR(validate(program, o.target));
  r.measured = o.target.kind == target::Kind::kCpu;
  // Threads counted once, before any compiler runs beside this process.
  const int threads = r.measured ? threads_for(o) : 0;
  search::MeasureBatch measure;
  if (r.measured) {
    measure = cpu_measure_batch(program, o, threads);
    r.notes.push_back("measured on the CPU with " + std::to_string(threads) + " OpenMP thread(s)");
  }
  else
    r.notes.push_back("target " + o.target.name +
                      ": tilings ranked by the cost model alone (tuning measures on the CPU only)");
  MG_ASSIGN_OR_RETURN(r.search, search::tune_chain(program, o.target, o.search, measure));

  // Step 2: the fastest tilings first (the model's best when nothing was measured).
  std::vector<int> order(r.search.measured.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return r.search.measured[static_cast<size_t>(a)].measured_s <
           r.search.measured[static_cast<size_t>(b)].measured_s;
  });
  if (order.empty()) order.push_back(-1);
  auto tiling = [&](int i) -> const search::TunedTiling& {
    return i < 0 ? r.search.model_best : r.search.measured[static_cast<size_t>(i)];
  };
  std::unique_ptr<runtime::CpuModule> mod;
  std::vector<std::vector<float>> program_run;
  RunReference want;
  const double tolerance = cpu_tolerance(program);
  if (r.measured) {
    std::vector<const ir::KernelGraph*> graphs{&program};
    for (int i : order) graphs.push_back(&tiling(i).graph);
    MG_ASSIGN_OR_RETURN(mod, compile_cpu(named(graphs), o.jit));
    CpuBuffers pb = make_buffers(program, o.seed);
    MG_RETURN_IF_ERROR(mod->run(0, pb.in(), pb.out()));
    for (const runtime::Buffer& b : pb.outputs) program_run.push_back(b.values());
    MG_ASSIGN_OR_RETURN(want, run_reference(program, o.seed, program_run));
    if (!want.note.empty()) r.notes.push_back(want.note);
  }
  verify::VerifyOptions vo = o.certify;
  vo.mode = verify::Mode::kCertify;
  int tries = 0;
  size_t entry = 0;
  for (int i : order) {
    ++entry;
    const search::TunedTiling& t = tiling(i);
    const std::string label = t.tiles.to_string();
    if (tries >= o.certify_tries) {
      r.notes.push_back("certified " + std::to_string(o.certify_tries) +
                        " tilings (certify_tries); slower ones were not tried");
      break;
    }
    if (mod) {
      CpuBuffers b = make_buffers(t.graph, o.seed, &program);
      MG_RETURN_IF_ERROR(mod->run(entry, b.in(), b.out()));
      double rel = 0;
      for (size_t k = 0; k < b.outputs.size(); ++k) {
        const std::vector<float> got = b.outputs[k].values();
        const OutputDiff d = diff_values("", want.outputs[k], std::vector<double>(got.begin(), got.end()));
        rel = std::isnan(d.max_rel) ? d.max_rel : std::max(rel, d.max_rel);
      }
      if (!(rel <= tolerance)) {
        r.notes.push_back(want.differs(label, rel, tolerance));
        continue;
      }
      r.max_rel = rel;
    }
    ++tries;
    const verify::Verdict c = verify::check(program, t.graph, vo);
    if (c.kind != verify::VerdictKind::kVerified) {
      r.notes.push_back(label + ": " + std::string(verify::verdict_name(c.kind)) +
                        " (certify): " + c.summary + "; not handed out");
      continue;
    }
    r.chosen = i;
    r.best = t.graph;
    r.certified = c;
    break;
  }
  if (!r.best || !mod) return r;
  // Step 3: the kernel against the program, interleaved rounds.
  ThreadScope scope(threads);
  std::vector<CpuBuffers> bufs;
  bufs.push_back(make_buffers(program, o.seed));
  bufs.push_back(make_buffers(*r.best, o.seed, &program));
  const size_t entries[2] = {0, static_cast<size_t>(std::find(order.begin(), order.end(), r.chosen) - order.begin()) + 1};
  // Calls per sample so that a sample lasts about 20 ms (a timer tick is then a small share).
  int calls[2] = {1, 1};
  for (size_t i = 0; i < 2; ++i) {
    MG_ASSIGN_OR_RETURN(double t, mod->time(entries[i], bufs[i].in(), bufs[i].out(), 3));
    calls[i] = static_cast<int>(std::clamp(std::ceil(0.02 / std::max(t, 1e-9)), 1.0, 1000.0));
  }
  Sampler sample = [&](size_t i) -> Result<double> {
    const auto t0 = std::chrono::steady_clock::now();
    for (int c = 0; c < calls[i]; ++c) MG_RETURN_IF_ERROR(mod->run(entries[i], bufs[i].in(), bufs[i].out()));
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / calls[i];
  };
  MG_ASSIGN_OR_RETURN(RoundsResult rounds, time_rounds(2, sample, o.compare));
  r.program_timing = rounds.stats[0];
  r.best_timing = rounds.stats[1];
  r.speedup = 1 / compare(r.best_timing, r.program_timing).median;
  return r;
}

std::string format_tune_report(const TuneReport& r) {
  std::ostringstream s;
  s << search::format_tune(r.search);
  for (const std::string& n : r.notes) s << "note: " << n << "\n";
  if (!r.best) {
    s << "NOT TUNED: no tiling was VERIFIED; nothing handed out\n";
    return s.str();
  }
  const search::TunedTiling& t = r.chosen < 0 ? r.search.model_best
                                              : r.search.measured[static_cast<size_t>(r.chosen)];
  s << "best: " << t.tiles.to_string() << ": " << verify::verdict_name(r.certified.kind)
    << " (certify): " << r.certified.summary << "\n";
  if (r.speedup > 0) {
    std::ostringstream q;
    q << std::fixed << std::setprecision(2) << r.speedup;
    s << "timed against the program (interleaved rounds, median): kernel " << us(r.best_timing.median)
      << ", program " << us(r.program_timing.median) << ": " << q.str() << "x\n";
  }
  return s.str();
}

std::string tune_report_json(const TuneReport& r) {
  using nlohmann::json;
  const search::TuneResult& t = r.search;
  const opt::ChainDims& d = t.chain.dims;
  json j;
  j["chain"] = {{"batch", d.batch}, {"m", d.m}, {"n", d.n}, {"k", d.k}, {"h", d.h},
                {"row_normalization", t.chain.softmax_like}};
  const search::SpaceCounts& c = t.space.counts;
  j["space"] = {{"expressions", c.expressions}, {"after_rule1", c.after_rule1},
                {"after_rule2", c.after_rule2}, {"candidates", c.candidates},
                {"after_rule1_2", c.after_rule1_2}, {"after_rule3", c.after_rule3},
                {"after_rule4", c.after_rule4}, {"not_one_block_graph", c.nested_loops},
                {"lowerable", c.lowerable}, {"fit_memory", t.estimated}};
  json m = json::array();
  for (const search::TunedTiling& x : t.measured)
    m.push_back({{"tm", x.tiles.m}, {"th", x.tiles.h}, {"tn", x.tiles.n}, {"model_s", x.model_s},
                 {"measured_s", x.measured_s}, {"round", x.round + 1}});
  j["measured"] = m;
  j["rounds"] = t.rounds;
  j["stop"] = t.stop_reason;
  j["tune_seconds"] = t.seconds;
  j["measure_seconds"] = t.measure_seconds;
  j["rank_correlation"] = t.measured.size() >= 2 ? json(t.rank_correlation) : json(nullptr);
  j["measured_on_cpu"] = r.measured;
  if (r.best) {
    const search::TunedTiling& b = r.chosen < 0 ? t.model_best : t.measured[static_cast<size_t>(r.chosen)];
    j["chosen"] = {{"tm", b.tiles.m}, {"th", b.tiles.h}, {"tn", b.tiles.n}, {"model_s", b.model_s}};
    j["verdict"] = std::string(verify::verdict_name(r.certified.kind));
    j["verdict_summary"] = r.certified.summary;
    j["max_rel"] = r.max_rel;
  } else {
    j["chosen"] = nullptr;
  }
  if (r.speedup > 0) {
    j["kernel_s"] = r.best_timing.median;
    j["program_s"] = r.program_timing.median;
    j["speedup"] = r.speedup;
  }
  j["notes"] = r.notes;
  return j.dump(1) + "\n";
}

}  // namespace mugraph::driver
