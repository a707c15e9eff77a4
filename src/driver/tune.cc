#include "driver/tune.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <numeric>
#include <sstream>
#include <functional>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include "driver/cuda_backend.h"
#include "ir/text.h"
#include "runtime/cuda_driver.h"

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
    const CpuThreadScope scope(threads);
    std::vector<double> out;
    CpuBuffers drawn;  // graph 0's buffers: the others copy its inputs
    for (size_t i = 0; i < graphs.size(); ++i) {
      CpuBuffers b = i > 0 ? make_buffers_like(*graphs[i], drawn, o.seed, &program)
                           : make_buffers(*graphs[i], o.seed, &program);
      // One timed call sizes the rest: o.runs calls, more for a fast kernel (about 10 ms in
      // all), the median taken.
      MG_ASSIGN_OR_RETURN(double first, mod->time(i, b.in(), b.out(), 1));
      const int runs = static_cast<int>(std::clamp(std::ceil(0.01 / std::max(first, 1e-9)),
                                                   static_cast<double>(o.runs), 200.0));
      MG_ASSIGN_OR_RETURN(double t, mod->time(i, b.in(), b.out(), runs));
      out.push_back(t);
      if (i == 0) drawn.inputs = std::move(b.inputs);  // the outputs are not needed
    }
    return out;
  };
}

search::MeasureBatch gpu_measure_batch(const ir::KernelGraph& program, const TuneOptions& o,
                                       std::shared_ptr<runtime::CudaDevice> dev) {
  return [&program, &o, dev](const std::vector<const ir::KernelGraph*>& graphs) -> Result<std::vector<double>> {
    MG_ASSIGN_OR_RETURN(auto mods, load_cuda_each(named(graphs), o.target, o.cuda_jit, dev));
    std::vector<double> out;
    for (size_t i = 0; i < graphs.size(); ++i) {
      MG_ASSIGN_OR_RETURN(GpuBuffers b, make_gpu_buffers(*graphs[i], o.seed, dev, &program));
      MG_ASSIGN_OR_RETURN(double t, mods[i]->time(0, b.in(), b.out(), std::max(o.runs, 10), true));
      out.push_back(t);
    }
    return out;
  };
}

namespace {

// Steps 2 and 3 on the backend at hand: the program and the candidate graphs compiled together,
// an entry run on make_buffers(g, seed, &program) (its outputs returned, its buffers kept), and
// one timing sample of an entry that ran.
struct Runner {
  std::function<Result<std::vector<std::vector<float>>>(size_t, const ir::KernelGraph&)> run;
  std::function<Result<double>(size_t)> sample;
  double tolerance = 0;
};

Result<Runner> cpu_runner(const std::vector<const ir::KernelGraph*>& graphs, const ir::KernelGraph& program,
                          const TuneOptions& o, int threads) {
  MG_ASSIGN_OR_RETURN(std::shared_ptr<runtime::CpuModule> mod, compile_cpu(named(graphs), o.jit));
  auto bufs = std::make_shared<std::vector<CpuBuffers>>(graphs.size());
  auto calls = std::make_shared<std::vector<int>>(graphs.size(), 1);
  Runner r;
  r.tolerance = cpu_tolerance(program);
  r.run = [mod, bufs, calls, &program, &o, threads](size_t i, const ir::KernelGraph& g)
      -> Result<std::vector<std::vector<float>>> {
    const CpuThreadScope scope(threads);
    const CpuBuffers& drawn = (*bufs)[0];  // the inputs of entry 0 when it ran before this one
    (*bufs)[i] = i > 0 && !drawn.inputs.empty() ? make_buffers_like(g, drawn, o.seed, &program)
                                                : make_buffers(g, o.seed, &program);
    MG_RETURN_IF_ERROR(mod->run(i, (*bufs)[i].in(), (*bufs)[i].out()));
    std::vector<std::vector<float>> out;
    for (const runtime::Buffer& b : (*bufs)[i].outputs) out.push_back(b.values());
    // Calls per sample so that a sample lasts about 20 ms (a timer tick is then a small share).
    MG_ASSIGN_OR_RETURN(double t, mod->time(i, (*bufs)[i].in(), (*bufs)[i].out(), 3));
    (*calls)[i] = calls_per_sample(t, 0.02);
    return out;
  };
  r.sample = [mod, bufs, calls, threads](size_t i) -> Result<double> {
    const CpuThreadScope scope(threads);
    const auto t0 = std::chrono::steady_clock::now();
    for (int c = 0; c < (*calls)[i]; ++c) MG_RETURN_IF_ERROR(mod->run(i, (*bufs)[i].in(), (*bufs)[i].out()));
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / (*calls)[i];
  };
  return r;
}

Result<Runner> gpu_runner(const std::vector<const ir::KernelGraph*>& graphs, const ir::KernelGraph& program,
                          const TuneOptions& o, std::shared_ptr<runtime::CudaDevice> dev) {
  MG_ASSIGN_OR_RETURN(auto loaded, load_cuda_each(named(graphs), o.target, o.cuda_jit, dev));
  auto mods = std::make_shared<std::vector<std::unique_ptr<runtime::CudaModule>>>(std::move(loaded));
  auto bufs = std::make_shared<std::vector<std::unique_ptr<GpuBuffers>>>(graphs.size());
  Runner r;
  r.tolerance = gpu_tolerance(program);
  r.run = [mods, bufs, dev, &program, &o](size_t i, const ir::KernelGraph& g)
      -> Result<std::vector<std::vector<float>>> {
    MG_ASSIGN_OR_RETURN(GpuBuffers b, make_gpu_buffers(g, o.seed, dev, &program));
    (*bufs)[i] = std::make_unique<GpuBuffers>(std::move(b));
    MG_RETURN_IF_ERROR((*mods)[i]->run(0, (*bufs)[i]->in(), (*bufs)[i]->out()));
    MG_RETURN_IF_ERROR((*bufs)[i]->download(*dev));
    std::vector<std::vector<float>> out;
    for (const runtime::Buffer& x : (*bufs)[i]->host.outputs) out.push_back(x.values());
    return out;
  };
  r.sample = [mods, bufs](size_t i) -> Result<double> {  // CUDA events, as a CUDA graph
    return (*mods)[i]->time(0, (*bufs)[i]->in(), (*bufs)[i]->out(), 1, true);
  };
  return r;
}

}  // namespace

Result<TuneReport> tune(const ir::KernelGraph& program, const TuneOptions& o) {
  TuneReport r;
  MG_RETURN_IF_ERROR(validate(program, o.target));
  // The backend at hand: the CPU for target cpu, the GPU for a GPU target when one is present.
  // Threads counted once, before any compiler runs beside this process.
  const bool cpu = o.target.kind == target::Kind::kCpu;
  const int threads = cpu ? threads_for(o) : 0;
  std::shared_ptr<runtime::CudaDevice> gpu;
  search::MeasureBatch measure;
  if (cpu) {
    measure = cpu_measure_batch(program, o, threads);
    r.device = "cpu";
    r.notes.push_back("measured on the CPU with " + std::to_string(threads) + " OpenMP thread(s)");
  } else if (auto dev = runtime::open_cuda_device(0); dev.ok()) {
    gpu = dev.value();
    measure = gpu_measure_batch(program, o, gpu);
    r.device = gpu->name();
    r.notes.push_back("measured on " + gpu->name() + " (sm_" + std::to_string(gpu->sm_arch()) +
                      "), CUDA events, each kernel launched as a CUDA graph");
  } else {
    r.notes.push_back("target " + o.target.name + ": " + dev.status().message() +
                      "; tilings ranked by the cost model alone, nothing measured");
  }
  r.measured = static_cast<bool>(measure);
  search::TuneOptions so = o.search;
  so.accepts = backend_accepts(o.target);
  MG_ASSIGN_OR_RETURN(r.search, search::tune_chain(program, o.target, so, measure));

  // Step 2: the fastest tilings first (the model's best when nothing was measured).
  std::vector<int> order(r.search.measured.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return r.search.measured[static_cast<size_t>(a)].measured_s <
           r.search.measured[static_cast<size_t>(b)].measured_s;
  });
  if (order.empty()) order.push_back(-1);
  if (static_cast<int>(order.size()) > o.certify_tries) order.resize(static_cast<size_t>(o.certify_tries));
  auto tiling = [&](int i) -> const search::TunedTiling& {
    return i < 0 ? r.search.model_best : r.search.measured[static_cast<size_t>(i)];
  };
  std::optional<Runner> runner;
  RunReference want;
  if (r.measured) {
    std::vector<const ir::KernelGraph*> graphs{&program};
    for (int i : order) graphs.push_back(&tiling(i).graph);
    MG_ASSIGN_OR_RETURN(runner, cpu ? cpu_runner(graphs, program, o, threads) : gpu_runner(graphs, program, o, gpu));
    MG_ASSIGN_OR_RETURN(const auto program_run, runner->run(0, program));
    MG_ASSIGN_OR_RETURN(want, run_reference(program, o.seed, program_run));
    if (!want.note.empty()) r.notes.push_back(want.note);
  }
  verify::VerifyOptions vo = o.certify;
  vo.mode = verify::Mode::kCertify;
  size_t chosen_entry = 0;
  for (size_t e = 0; e < order.size(); ++e) {
    const search::TunedTiling& t = tiling(order[e]);
    const std::string label = t.tiles.to_string();
    if (runner) {
      MG_ASSIGN_OR_RETURN(const auto got, runner->run(e + 1, t.graph));
      const double rel = max_rel_error(want.outputs, got);
      if (!(rel <= runner->tolerance)) {
        r.notes.push_back(want.differs(label, rel, runner->tolerance));
        continue;
      }
      r.max_rel = rel;
    }
    const verify::Verdict c = verify::check(program, t.graph, vo);
    const bool take = c.kind == verify::VerdictKind::kVerified ||
                      (o.accept_unproved && verify::accepted(c.kind));
    if (!take) {
      const std::string kind(verify::verdict_name(c.kind));
      if (verify::accepted(c.kind) && r.not_verified.empty())
        r.not_verified = "NOT VERIFIED: the tiling " + label + " is " + kind + " (" + c.summary +
                         "); not handed out: rerun with --accept-unproved to take it";
      r.notes.push_back(label + ": " + kind + " (certify): " + c.summary + "; not handed out");
      // An unproven verdict comes from the chain's ops (not Lax, sqrt), which every tiling
      // shares: the next tiling would get the same. A rejected tiling may be a bad one.
      if (verify::accepted(c.kind)) break;
      continue;
    }
    r.chosen = order[e];
    r.best = t.graph;
    r.certified = c;
    chosen_entry = e + 1;
    break;
  }
  if (!r.best || !runner) return r;
  // Step 3: the kernel against the program, interleaved rounds.
  const size_t entries[2] = {0, chosen_entry};
  Sampler sample = [&](size_t i) -> Result<double> { return runner->sample(entries[i]); };
  MG_ASSIGN_OR_RETURN(RoundsResult rounds, time_rounds(2, sample, o.compare));
  r.program_timing = rounds.stats[0];
  r.best_timing = rounds.stats[1];
  r.speedup = 1 / compare(r.best_timing, r.program_timing).median;
  if (beats(r.program_timing, r.best_timing, 0.02))
    r.slower_note = "the tuned kernel is SLOWER than the program as written (beyond the noise): "
                    "keep the program, or let `mugraph optimize` choose";
  else if (!beats(r.best_timing, r.program_timing, 0.02))
    r.slower_note = "the tuned kernel is within noise of the program as written";
  return r;
}

std::string format_tune_report(const TuneReport& r) {
  std::ostringstream s;
  s << search::format_tune(r.search);
  for (const std::string& n : r.notes) s << "note: " << n << "\n";
  if (!r.best) {
    s << (r.not_verified.empty() ? "NOT TUNED: certify rejected every tiling tried; nothing handed out"
                                 : r.not_verified) << "\n";
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
    if (!r.slower_note.empty()) s << r.slower_note << "\n";
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
  j["timed"] = r.measured;  // "measured" above: the tilings timed while tuning
  j["device"] = r.device.empty() ? json(nullptr) : json(r.device);
  if (r.best) {
    const search::TunedTiling& b = r.chosen < 0 ? t.model_best : t.measured[static_cast<size_t>(r.chosen)];
    j["chosen"] = {{"tm", b.tiles.m}, {"th", b.tiles.h}, {"tn", b.tiles.n}, {"model_s", b.model_s}};
    j["verdict"] = std::string(verify::verdict_name(r.certified.kind));
    j["verdict_summary"] = r.certified.summary;
    j["max_rel"] = r.measured ? json(r.max_rel) : json(nullptr);
  } else {
    j["chosen"] = nullptr;
  }
  if (r.speedup > 0) {
    j["kernel_s"] = r.best_timing.median;
    j["program_s"] = r.program_timing.median;
    j["speedup"] = r.speedup;
    j["vs_program"] = r.slower_note;
  }
  j["notes"] = r.notes;
  return j.dump(1) + "\n";
}

}  // namespace mugraph::driver
