#include "driver/optimize.h"

#include "ir/canonical.h"
#include "search/plan.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iomanip>
#include <memory>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "ir/json.h"
#include "ir/text.h"
#include "support/memory.h"
#include "ir/lax_partition.h"
#include "opt/retile.h"

namespace mugraph::driver {
namespace {

namespace fs = std::filesystem;

Variant make_variant(std::string label, ir::KernelGraph g, const target::Target& t) {
  Variant v;
  v.label = std::move(label);
  v.cost = opt::estimate(g, t);
  v.graph = std::move(g);
  return v;
}

// Step 2: whole-program variants from the per-part candidates, top n by the model.
// `refused` (appended to): candidates the backend's code generator does not take
// (backend_accepts), which are skipped so that they take no variant's place.
std::vector<Variant> make_variants(const ir::KernelGraph& program,
                                   const search::SuperoptimizeResult& s, const target::Target& t,
                                   int top_n, std::vector<std::string>& refused) {
  const ir::Partition& p = s.partition;
  const size_t parts = p.parts.size();
  const auto accepts = backend_accepts(t);
  // Per part: which candidates the backend takes.
  std::vector<std::vector<bool>> ok(parts);
  for (size_t k = 0; k < parts; ++k)
    for (const auto& c : s.parts[k].candidates) {
      Status st = accepts ? accepts(c.graph) : Status{};
      if (!st.ok()) refused.push_back(st.message());
      ok[k].push_back(st.ok());
    }
  std::vector<ir::KernelGraph> base;  // per part: its best candidate or itself, by the model
  for (size_t k = 0; k < parts; ++k) {
    const auto& cands = s.parts[k].candidates;
    const ir::KernelGraph& own = p.parts[k].program;
    size_t first = 0;
    while (first < cands.size() && !ok[k][first]) ++first;
    const bool cand_wins = first < cands.size() && cands[first].model_seconds <
                                                       opt::estimate(own, t).total_s;
    base.push_back(cand_wins ? cands[first].graph : own);
  }
  auto label = [&](size_t k, size_t i) {
    return (parts > 1 ? "p" + std::to_string(k) + ":" : std::string()) + "cand" +
           std::to_string(i + 1);
  };
  std::vector<Variant> out;
  for (size_t k = 0; k < parts; ++k)
    for (size_t i = 0, taken = 0;
         i < s.parts[k].candidates.size() && static_cast<int>(taken) < top_n; ++i) {
      if (!ok[k][i]) continue;
      ++taken;
      std::vector<ir::KernelGraph> chosen = base;
      chosen[k] = s.parts[k].candidates[i].graph;
      out.push_back(make_variant(label(k, i), ir::stitch(program, p, chosen), t));
      out.back().verdict = s.parts[k].candidates[i].verdict_text;
    }
  std::stable_sort(out.begin(), out.end(), [](const Variant& a, const Variant& b) {
    return a.cost.total_s < b.cost.total_s;
  });
  // One part's best candidate is the base of every other part's variants: drop repeats, and
  // variants that are the program itself (structurally; it is timed anyway: timing a copy
  // against it only measures noise).
  std::vector<Variant> unique;
  const uint64_t itself = ir::canonical_hash(program);
  for (Variant& v : out) {
    const bool seen = std::any_of(unique.begin(), unique.end(),
                                  [&](const Variant& u) { return u.graph == v.graph; });
    if (!seen && ir::canonical_hash(v.graph) != itself && static_cast<int>(unique.size()) < top_n)
      unique.push_back(std::move(v));
  }
  return unique;
}

// What step 3 needs from a backend: the program's error against the float64 interpreter, a
// run of entry i (computing graph g) on make_buffers(g, seed) that keeps its buffers and
// returns its outputs (the first warm-up), and one timing sample of an entry that ran: seconds
// per call.
using Outputs = std::vector<std::vector<float>>;
struct Backend {
  std::function<Result<double>()> program_error;
  // Reserves entry i's buffers in the memory budget (held until measuring ends); false with
  // `why` when they do not fit beside what is held.
  std::function<bool(const ir::KernelGraph&, std::string&)> reserve;
  std::function<Result<Outputs>(size_t, const ir::KernelGraph&)> run;
  Sampler sample;
  double tolerance = 0;
  std::string device;
};

std::string percent(double x) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << 100 * x << "%";
  return os.str();
}

// Step 3: the program and the variants are entries 0..n of one module: check each, then time
// the program and the variants that match it in interleaved rounds.
Status measure(OptimizeReport& r, const Backend& be, const OptimizeOptions& o, const Deadline& dl) {
  if (std::string why; be.reserve && !be.reserve(r.program.graph, why)) {
    r.notes.push_back("nothing was measured: the program's buffers " + why +
                      "; variants are ranked by the cost model only");
    r.complete = false;
    return {};
  }
  MG_ASSIGN_OR_RETURN(r.program_max_rel, be.program_error());
  MG_ASSIGN_OR_RETURN(const Outputs ref, be.run(0, r.program.graph));
  // Where the program itself overflows, its run checks nothing: say so (run_reference).
  MG_ASSIGN_OR_RETURN(const RunReference want, run_reference(r.program.graph, o.seed, ref));
  if (!want.note.empty()) r.notes.push_back(want.note);
  std::vector<size_t> entries{0};
  for (size_t i = 0; i < r.ranked.size(); ++i) {
    Variant& v = r.ranked[i];
    if (dl.passed()) {
      r.complete = false;
      r.notes.push_back("the time budget cut measuring before " + v.label +
                        (i + 1 < r.ranked.size() ? " and the variants after it" : std::string()) +
                        " ran: not timed, not chosen");
      break;
    }
    if (std::string why; be.reserve && !be.reserve(v.graph, why)) {
      r.complete = false;
      r.notes.push_back(v.label + (i + 1 < r.ranked.size() ? " and the variants after it" : "") +
                        ": not timed, not chosen: its buffers " + why);
      break;
    }
    MG_ASSIGN_OR_RETURN(const Outputs out, be.run(i + 1, v.graph));
    v.max_rel = max_rel_error(want.outputs, out);
    v.measured = !(v.max_rel > be.tolerance) && !std::isnan(v.max_rel);
    if (v.measured) {
      entries.push_back(i + 1);
    } else if (want.checkable) {
      r.notes.push_back(want.differs(v.label, v.max_rel, be.tolerance) + ": not timed, not chosen");
    }
  }
  RoundOptions ro;
  ro.rounds = std::max(1, o.runs);
  ro.max_rounds = std::max(ro.rounds, o.max_rounds);
  ro.max_spread = o.max_spread;
  ro.time_limit_s = std::min(o.measure_time_s, std::max(0.0, dl.left()));
  if (!dl.none()) ro.hard_limit_s = std::max(1e-3, dl.left());
  MG_ASSIGN_OR_RETURN(r.rounds, time_rounds(
                                    entries.size(),
                                    [&](size_t k) { return be.sample(entries[k]); }, ro));
  for (size_t k = 0; k < entries.size(); ++k) {
    Variant& v = entries[k] == 0 ? r.program : r.ranked[entries[k] - 1];
    v.timing = r.rounds.stats[k];
    v.seconds = v.timing.median;
  }
  for (size_t k = 0; k < entries.size(); ++k) {
    Variant& v = entries[k] == 0 ? r.program : r.ranked[entries[k] - 1];
    v.speedup = 1 / compare(v.timing, r.program.timing).median;
  }
  r.program.measured = true;
  std::string how = "timed in " + std::to_string(r.rounds.rounds) + " interleaved rounds of " +
                    std::to_string(entries.size()) + " entries after a warm-up round (" +
                    std::to_string(r.rounds.seconds).substr(0, 5) + " s): ";
  double widest = 0;
  for (const TimingStats& t : r.rounds.stats) widest = std::max(widest, t.spread());
  if (r.rounds.spread_ok)
    how += "every spread <= " + percent(o.max_spread);
  else
    how += "spread still up to " + percent(widest) + " (> " + percent(o.max_spread) + ") when " +
           (r.rounds.time_limited ? "the timing time limit (" +
                                        std::to_string(ro.time_limit_s).substr(0, 4) + " s)"
                                  : "the round cap (" + std::to_string(ro.max_rounds) + ")") +
           " stopped it; a variant is preferred only beyond that noise";
  r.notes.push_back(how);
  // Other processes compete for the cores: the times are those of a shared machine.
  if (double load[1]; r.target.kind == target::Kind::kCpu && getloadavg(load, 1) == 1 &&
                      load[0] > 1.25 * std::max(1u, std::thread::hardware_concurrency()))
    r.notes.push_back("the machine is busy (load average " + std::to_string(load[0]).substr(0, 4) +
                      " on " + std::to_string(std::thread::hardware_concurrency()) +
                      " cores): other processes took CPU time during the timing");
  r.measured = true;
  r.device = be.device;
  std::vector<double> model, time;
  for (const Variant& v : r.ranked)
    if (v.measured) {
      model.push_back(v.cost.total_s);
      time.push_back(v.seconds);
    }
  r.spearman = opt::spearman(model, time);
  std::vector<double> cost{r.program.cost.total_s}, lo{r.program.timing.p10}, hi{r.program.timing.p90};
  for (const Variant& v : r.ranked)
    if (v.measured) {
      cost.push_back(v.cost.total_s);
      lo.push_back(v.timing.p10);
      hi.push_back(v.timing.p90);
    }
  r.beyond_noise = opt::agreement_beyond_noise(cost, lo, hi);
  return {};
}

std::vector<codegen::NamedGraph> module_graphs(const OptimizeReport& r) {
  std::vector<codegen::NamedGraph> named{{"program", &r.program.graph}};
  for (size_t i = 0; i < r.ranked.size(); ++i)
    named.push_back({"v" + std::to_string(i), &r.ranked[i].graph});
  return named;
}

std::vector<std::vector<float>> values(const std::vector<runtime::Buffer>& bufs) {
  std::vector<std::vector<float>> v;
  for (const runtime::Buffer& b : bufs) v.push_back(b.values());
  return v;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

Status measure_cpu(OptimizeReport& r, const OptimizeOptions& o, const Deadline& dl) {
  runtime::JitOptions jit = o.jit;
  if (!dl.none()) jit.time_limit_s = std::max(0.1, dl.left());
  MG_ASSIGN_OR_RETURN(auto mod, compile_cpu(module_graphs(r), jit));
  r.notes.push_back("JIT: " + std::string(mod->from_cache() ? "cache hit" : "compiled") + " in " +
                    std::to_string(mod->compile_seconds()) + " s (" + mod->path() + ")");
  // As many OpenMP threads as cores are idle: a thread sharing its core with a busy neighbour
  // would hold every barrier of every entry (the program's too) for a scheduler time slice.
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int threads = o.cpu_threads > 0 ? o.cpu_threads : runtime::idle_cores(0.2);
  const CpuThreadScope scope(threads);
  r.notes.push_back("timed with " + std::to_string(threads) + " OpenMP thread(s) on " +
                    std::to_string(cores) + " cores" +
                    (o.cpu_threads > 0 ? std::string(" (as asked)")
                                       : threads < cores ? " (other processes kept the rest busy)"
                                                         : std::string(" (all idle)")));
  Backend be;
  be.tolerance = cpu_tolerance(r.program.graph);
  be.device = "cpu";
  std::vector<MemoryReservation> held;  // the entries' buffers, while measuring
  be.reserve = [&](const ir::KernelGraph& g, std::string& why) {
    int64_t bytes = 0, widest = 0;  // the buffers, and one input drawn in doubles and floats
    for (ir::TensorId id : g.inputs) {
      bytes += g.tensor(id).type.bytes();
      widest = std::max(widest, g.tensor(id).type.shape.numel() * 12);
    }
    for (ir::TensorId id : g.outputs) bytes += g.tensor(id).type.bytes();
    // A variant whose inputs are the program's reads the program's (make_buffers_like): nothing
    // drawn (its inputs' bytes still count: an over-reservation of a few buffers).
    if (&g == &r.program.graph || !same_input_types(g, r.program.graph)) bytes += widest;
    held.emplace_back();
    return reserve_memory(bytes, held.back(), &why, /*wait=*/false);
  };
  be.program_error = [&]() -> Result<double> {
    // The float64 interpretation of the program holds its tensors as doubles.
    MemoryReservation run;
    std::string why;
    if (!reserve_memory(verify::interpret_memory_bytes(r.program.graph), run, &why, false)) {
      r.notes.push_back("the program's CPU run was not compared with its float64 "
                        "interpretation: that " + why);
      return std::nan("");
    }
    MG_ASSIGN_OR_RETURN(auto diffs, check_cpu(*mod, 0, r.program.graph, o.seed));
    double m = 0;
    for (const OutputDiff& d : diffs)  // NaN (the program overflows) shows, not dropped by max
      m = std::isnan(d.max_rel) ? d.max_rel : std::max(m, d.max_rel);
    return m;
  };
  // Per entry: its buffers and the calls per sample (so that a sample lasts min_sample_s: a
  // timer tick or a scheduler hiccup is then a small share of it).
  std::vector<CpuBuffers> bufs(r.ranked.size() + 1);
  std::vector<int> calls(r.ranked.size() + 1, 1);
  be.run = [&](size_t i, const ir::KernelGraph& g) -> Result<Outputs> {
    bufs[i] = i > 0 ? make_buffers_like(g, bufs[0], o.seed, &r.program.graph)  // entry 0 ran first
                    : make_buffers(g, o.seed, &r.program.graph);
    MG_RETURN_IF_ERROR(mod->run(i, bufs[i].in(), bufs[i].out()));
    Outputs out = values(bufs[i].outputs);
    // Calls per sample from the fastest of a few more calls (the first is cold, and on a loaded
    // machine one call may wait a whole scheduler tick for an OpenMP thread).
    double t = 1e30, spent = 0;
    for (int c = 0; c < 5 && spent < 4 * o.min_sample_s; ++c) {
      const auto t0 = std::chrono::steady_clock::now();
      MG_RETURN_IF_ERROR(mod->run(i, bufs[i].in(), bufs[i].out()));
      const double dt = seconds_since(t0);
      t = std::min(t, dt);
      spent += dt;
    }
    calls[i] = calls_per_sample(t, o.min_sample_s);
    return out;
  };
  be.sample = [&](size_t i) -> Result<double> {
    const std::vector<const void*> in = bufs[i].in();
    const std::vector<void*> out = bufs[i].out();
    const auto t0 = std::chrono::steady_clock::now();
    for (int c = 0; c < calls[i]; ++c) MG_RETURN_IF_ERROR(mod->run(i, in, out));
    return seconds_since(t0) / calls[i];
  };
  return measure(r, be, o, dl);
}

Status measure_gpu(OptimizeReport& r, const OptimizeOptions& o,
                   const std::shared_ptr<runtime::CudaDevice>& dev, const Deadline& dl) {
  runtime::CudaJitOptions jit = o.cuda_jit;
  if (!dl.none()) jit.time_limit_s = std::max(0.1, dl.left());
  MG_ASSIGN_OR_RETURN(auto mods, load_cuda_each(module_graphs(r), r.target, jit, dev));
  r.notes.push_back("measured on " + dev->name() + " (sm_" + std::to_string(dev->sm_arch()) +
                    "), CUDA events per sample" +
                    (o.cuda_graphs ? ", launched as CUDA graphs" : ""));
  Backend be;
  be.tolerance = gpu_tolerance(r.program.graph);
  be.device = dev->name();
  be.program_error = [&]() -> Result<double> {
    MG_ASSIGN_OR_RETURN(auto diffs, check_gpu(*mods[0], 0, r.program.graph, o.seed, dev));
    double m = 0;
    for (const OutputDiff& d : diffs)  // NaN (the program overflows) shows, not dropped by max
      m = std::isnan(d.max_rel) ? d.max_rel : std::max(m, d.max_rel);
    return m;
  };
  std::vector<std::unique_ptr<GpuBuffers>> bufs(r.ranked.size() + 1);
  be.run = [&](size_t i, const ir::KernelGraph& g) -> Result<Outputs> {
    MG_ASSIGN_OR_RETURN(GpuBuffers b, make_gpu_buffers(g, o.seed, dev, &r.program.graph));
    bufs[i] = std::make_unique<GpuBuffers>(std::move(b));
    MG_RETURN_IF_ERROR(mods[i]->run(0, bufs[i]->in(), bufs[i]->out()));
    MG_RETURN_IF_ERROR(bufs[i]->download(*dev));
    return values(bufs[i]->host.outputs);
  };
  // One sample: CudaDevice::time's median of 1 event-timed batch (after its own warm-up launch).
  be.sample = [&](size_t i) -> Result<double> {
    return mods[i]->time(0, bufs[i]->in(), bufs[i]->out(), 1, o.cuda_graphs);
  };
  return measure(r, be, o, dl);
}

// Steps 4 and 5: the variants faster than the program, fastest first, certified until one may
// be handed out.
void choose_and_certify(const ir::KernelGraph& program, const OptimizeOptions& o,
                        const Deadline& dl, OptimizeReport& r) {
  std::vector<size_t> order;
  if (r.measured) {
    std::vector<const TimingStats*> timed;
    for (const Variant& v : r.ranked) timed.push_back(v.measured ? &v.timing : nullptr);
    order = preference_order(r.program.timing, timed, o.min_gain);
    auto ratio = [&](const Variant& v) {
      std::ostringstream os;
      os << std::fixed << std::setprecision(2) << v.speedup << "x";
      return os.str();
    };
    // Faster by the median but not beyond the noise: said, never preferred.
    for (size_t i = 0; i < r.ranked.size(); ++i) {
      const Variant& v = r.ranked[i];
      if (!v.measured || std::find(order.begin(), order.end(), i) != order.end()) continue;
      if (v.speedup > 1) {
        const Ratio q = compare(v.timing, r.program.timing);
        r.notes.push_back(v.label + ": " + ratio(v) + " (median of per-round ratios), within noise of " +
                          "the program (95% interval of the median ratio " +
                          std::to_string(q.lo).substr(0, 5) + ".." +
                          std::to_string(q.hi).substr(0, 5) + ", not below " +
                          std::to_string(1 - o.min_gain).substr(0, 4) +
                          "): the program is preferred");
      }
    }
    if (!order.empty()) {
      const Variant& lead = r.ranked[order.front()];
      for (size_t i : order)
        if (r.ranked[i].speedup > lead.speedup)
          r.notes.push_back(r.ranked[i].label + ": " + ratio(r.ranked[i]) + ", within noise of " +
                            lead.label + " (" + ratio(lead) + "): the earlier-ranked " +
                            lead.label + " is preferred");
    }
  } else {
    for (size_t i = 0; i < r.ranked.size(); ++i)
      if (r.ranked[i].cost.total_s < r.program.cost.total_s) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return r.ranked[a].cost.total_s < r.ranked[b].cost.total_s;
    });
  }
  if (order.empty())
    r.notes.push_back(r.measured ? "no variant beats the program beyond the noise; it is kept"
                                 : "no variant beats the program as written; it is kept");
  verify::VerifyOptions vo = o.certify;
  vo.mode = verify::Mode::kCertify;
  vo.deadline = dl;
  int tries = 0;
  for (size_t i : order) {
    if (tries++ >= o.certify_tries) {
      r.notes.push_back("certified " + std::to_string(o.certify_tries) +
                        " variants (certify_tries); slower ones were not tried");
      break;
    }
    Variant& v = r.ranked[i];
    const verify::Verdict c = verify::check(program, v.graph, vo);
    v.verdict = std::string(verify::verdict_name(c.kind)) + " (certify): " + c.summary;
    if (c.cut == "memory budget") {  // another (smaller) variant may still fit
      r.complete = false;
      r.notes.push_back("certify of " + v.label + " did not run (" + c.summary +
                        "): not handed out; raise --memory-budget");
      continue;
    }
    if (!c.cut.empty()) {
      r.certify_cut = v.label + ": " + c.summary;
      r.notes.push_back("certify of " + v.label + " was cut (" + c.cut +
                        "): not handed out; give the command more time (--time-budget)");
      break;
    }
    const bool take = c.kind == verify::VerdictKind::kVerified ||
                      (o.accept_unproved && verify::accepted(c.kind));
    if (take) {
      r.best = static_cast<int>(i);
      r.certified = c;
      r.certify_ran = true;
      break;
    }
    const std::string kind(verify::verdict_name(c.kind));
    if (verify::accepted(c.kind)) {
      if (r.not_verified.empty())
        r.not_verified = "NOT VERIFIED: the faster variant " + v.label + " is " + kind + " (" +
                         c.summary + "); not handed out: rerun with --accept-unproved to take it";
    } else {
      r.notes.push_back(v.label + " rejected by certify (" + kind + "): " + c.summary);
    }
  }
  if (r.best < 0 && !order.empty())
    r.notes.push_back("no faster variant could be handed out; the program as written is kept");
}

}  // namespace

Result<OptimizeReport> optimize(const ir::KernelGraph& program, const OptimizeOptions& o) {
  OptimizeReport r;
  r.target = o.search.target;
  r.min_gain = o.min_gain;
  MG_RETURN_IF_ERROR(validate(program, r.target));
  // The whole command's deadline; each step gets its share of what is left when it starts.
  Deadline all = o.search.deadline.earliest(Deadline::after(search::planned_budget(o.search)));
  all.with_cancel(o.search.cancel);
  r.budget_s = all.none() ? 0 : search::planned_budget(o.search);
  auto step = [&](const std::string& name, auto&& body) -> Status {
    const auto t0 = std::chrono::steady_clock::now();
    OptimizeReport::Step s{name, 0, ""};
    Status st = body(s);
    s.seconds = seconds_since(t0);
    r.steps.push_back(s);
    return st;
  };
  MG_RETURN_IF_ERROR(step("search", [&](OptimizeReport::Step& s) -> Status {
    search::SearchOptions so = o.search;
    so.certify = false;  // the chosen variant is certified in step 5
    so.time_budget_s = 0;
    so.deadline = all.share(kOptimizeSearchShare);
    // Only the top few candidates of each part become measured variants (make_variants): twice
    // as many that the backend takes pass the every-entry test, not every candidate (at paper
    // shapes each test is a full evaluation, ~2 s; GatedMLP has 355).
    if (o.top_n > 0) {
      so.confirm_limit = 2 * o.top_n;
      if (const auto accepts = backend_accepts(r.target))
        so.confirm_counts = [accepts](const ir::KernelGraph& g) { return accepts(g).ok(); };
    }
    MG_ASSIGN_OR_RETURN(r.search, driver::superoptimize(program, so));
    if (r.search.stop_reason == search::StopReason::kTimeLimit)
      s.cut = search::cut_progress(r.search.parts);
    return {};
  }));
  if (o.tune_chains && opt::find_chain(program).ok()) {
    MG_RETURN_IF_ERROR(step("tune", [&](OptimizeReport::Step& s) -> Status {
      TuneOptions to;
      to.target = r.target;
      to.search = o.tune;
      to.search.accepts = backend_accepts(r.target);
      to.seed = o.seed;
      to.jit = o.jit;
      to.cuda_jit = o.cuda_jit;
      to.cpu_threads = o.cpu_threads;
      const Deadline dl = all.share(kTuneShare);
      if (!dl.none()) to.search.time_limit_s = std::min(to.search.time_limit_s, dl.left());
      search::MeasureBatch measure;  // the CPU, or the GPU when one is present (else the model)
      if (r.target.kind == target::Kind::kCpu)
        measure = cpu_measure_batch(program, to, o.cpu_threads > 0 ? o.cpu_threads : runtime::idle_cores(0.2));
      else if (auto dev = runtime::open_cuda_device(0); dev.ok())
        measure = gpu_measure_batch(program, to, dev.value());
      auto tuned = search::tune_chain(program, r.target, to.search, measure);
      if (!tuned.ok()) {  // the Mirage search's variants go on without it
        r.notes.push_back("tiling search: " + tuned.status().message());
        s.cut = "failed";
        return {};
      }
      search::TuneResult t = std::move(tuned).value();
      if (t.stop_reason == "time limit") s.cut = "stopped after " + std::to_string(t.rounds) + " generation(s)";
      r.tune = std::move(t);
      return {};
    }));
  }
  r.program = make_variant("program", program, r.target);
  std::vector<std::string> refused;
  r.ranked = make_variants(program, r.search, r.target, o.top_n, refused);
  if (!refused.empty())
    r.notes.push_back(std::to_string(refused.size()) +
                      " candidate(s) skipped: the backend's code generator refused them (first: " +
                      refused.front() + ")");
  // Step 2b: the grid and loop sizes of the best searched structures, retiled one step each way
  // (opt/retile.h); those the model prefers to their source join the variants.
  if (o.retile_variants > 0) {
    std::vector<Variant> retiled;
    const size_t sources = std::min<size_t>(r.ranked.size(), 2);
    for (size_t i = 0; i < sources; ++i)
      for (opt::Retiled& x : opt::retile_neighbours(r.ranked[i].graph)) {
        Variant v = make_variant("", std::move(x.graph), r.target);
        if (v.cost.total_s >= r.ranked[i].cost.total_s) continue;
        v.verdict = r.ranked[i].label + " retiled (" + x.change + "), not yet certified";
        retiled.push_back(std::move(v));
      }
    std::stable_sort(retiled.begin(), retiled.end(), [](const Variant& a, const Variant& b) {
      return a.cost.total_s < b.cost.total_s;
    });
    int added = 0;
    for (Variant& v : retiled) {
      if (added >= o.retile_variants) break;
      const bool seen = std::any_of(r.ranked.begin(), r.ranked.end(),
                                    [&](const Variant& u) { return u.graph == v.graph; });
      if (seen) continue;
      v.label = "retile" + std::to_string(++added);
      r.ranked.push_back(std::move(v));
    }
  }
  if (r.tune) {  // the fastest measured tilings (the model's best when nothing was measured)
    std::vector<const search::TunedTiling*> best;
    for (const search::TunedTiling& x : r.tune->measured) best.push_back(&x);
    std::stable_sort(best.begin(), best.end(), [](const search::TunedTiling* a, const search::TunedTiling* b) {
      return a->measured_s < b->measured_s;
    });
    if (best.empty()) best.push_back(&r.tune->model_best);
    for (size_t i = 0; i < best.size() && static_cast<int>(i) < o.tune_variants; ++i) {
      r.ranked.push_back(make_variant("tile" + std::to_string(i + 1), best[i]->graph, r.target));
      r.ranked.back().verdict = "tiling " + best[i]->tiles.to_string() + " (not yet certified)";
    }
  }
  std::stable_sort(r.ranked.begin(), r.ranked.end(), [](const Variant& a, const Variant& b) {
    return a.cost.total_s < b.cost.total_s;
  });
  // A variant the backend's code generator refuses (the CUDA generator's shared-memory plan,
  // with f32 tiles for some intermediates, can exceed what the search's estimate let through)
  // could be neither measured nor handed out: it leaves the list, named in a note.
  if (const auto accepts = backend_accepts(r.target)) {
    std::vector<Variant> kept;
    for (Variant& v : r.ranked) {
      if (Status st = accepts(v.graph); !st.ok()) {
        r.notes.push_back(v.label + " dropped: " + st.message());
        continue;
      }
      kept.push_back(std::move(v));
    }
    r.ranked = std::move(kept);
  }
  std::shared_ptr<runtime::CudaDevice> gpu;
  MG_RETURN_IF_ERROR(step("measure", [&](OptimizeReport::Step& s) -> Status {
    const Deadline dl = all.share(r.target.kind == target::Kind::kCpu ? kMeasureShareCpu
                                                                      : kMeasureShareGpu);
    Status st;
    try {  // drawing the inputs and the float64 reference run stop at the deadline too
      DeadlineScope scope(dl);
      if (r.target.kind == target::Kind::kCpu) {
        st = measure_cpu(r, o, dl);
      } else if (auto dev = runtime::open_cuda_device(0); dev.ok()) {
        gpu = dev.value();
        st = measure_gpu(r, o, gpu, dl);
      } else {
        r.notes.push_back("target " + r.target.name + ": " + dev.status().message() +
                          "; variants are ranked by the cost model only, nothing was measured");
      }
    } catch (const DeadlinePassed& e) {
      st = error("stopped while drawing the inputs or running the program's float64 "
                 "interpretation (", e.what(), ")");
    }
    if (!st.ok() && dl.passed() && !r.measured) {  // the compile (or a check) ran out of time
      s.cut = "nothing timed";
      r.notes.push_back(std::string("measuring was cut by ") +
                        (dl.cancelled() ? "Ctrl-C" : "the time budget") + " (" + st.message() +
                        "); variants are ranked by the cost model only");
      for (Variant& v : r.ranked) v.measured = false;
      return {};
    }
    if (st.ok() && r.measured && r.rounds.time_limited && dl.passed()) s.cut = "timing rounds shortened";
    return st;
  }));
  MG_RETURN_IF_ERROR(step("certify", [&](OptimizeReport::Step& s) -> Status {
    choose_and_certify(program, o, all.share(kCertifyShare), r);
    if (!r.certify_cut.empty()) s.cut = r.certify_cut;
    return {};
  }));
  MG_RETURN_IF_ERROR(step("generate", [&](OptimizeReport::Step& s) -> Status {
    const codegen::NamedGraph ng{"best", &r.chosen().graph};
    if (r.target.kind == target::Kind::kCpu) {
      MG_ASSIGN_OR_RETURN(codegen::Module m, codegen::cpu::generate_cpu({ng}));
      r.best_source = m.source;
      return {};
    }
    MG_ASSIGN_OR_RETURN(codegen::Module m, generate_cuda({ng}, r.target));
    r.best_source = m.source;
    if (!gpu) {
      // Nothing ran, but the kernel handed out must at least compile.
      runtime::CudaJitOptions jit = o.cuda_jit;
      if (!all.none()) jit.time_limit_s = std::max(0.1, all.left());
      if (auto so = runtime::compile_cuda(m, jit); so.ok()) {
        r.notes.push_back("best.cu compiled with nvcc for sm_80 and sm_90");
      } else {
        r.notes.push_back("best.cu was not compiled: " + so.status().message());
        if (all.passed()) s.cut = "nvcc stopped";
      }
    }
    return {};
  }));
  return r;
}

std::string format_report(const OptimizeReport& r, const ir::KernelGraph& program) {
  std::ostringstream os;
  size_t cands = 0;
  for (const search::SearchResult& p : r.search.parts) cands += p.candidates.size();
  os << "== mugraph optimize, target " << r.target.name << " (" << r.target.sm_count
     << (r.target.kind == target::Kind::kCpu ? " cores" : " SMs") << ")\n"
     << "search: " << search::stop_reason_name(r.search.stop_reason) << ", " << cands
     << " candidates passed the screen in " << r.search.parts.size() << " Lax part(s), " << std::fixed
     << std::setprecision(1) << r.search.seconds << " s\n";
  uint64_t over_memory = 0;
  for (const search::SearchResult& p : r.search.parts) over_memory += p.stats.over_memory;
  if (over_memory > 0)
    os << "search: " << over_memory
       << " complete uGraphs were not screened: their screen needs more than the memory budget "
          "(raise --memory-budget)\n";
  if (!r.search.memory_note.empty()) os << r.search.memory_note << "\n";
  if (r.tune)
    os << "tune (MCFuser tiling search): " << r.tune->rounds << " generation(s), "
       << r.tune->measured.size() << " of " << r.tune->estimated << " tilings measured, "
       << r.tune->stop_reason << ", " << std::fixed << std::setprecision(1) << r.tune->seconds
       << " s\n";
  os << "\n variant        kernels  model-us  measured-us   spread  vs-program  max-rel-err\n";
  auto row = [&](const Variant& v, bool chosen) {
    os << (chosen ? "*" : " ") << std::left << std::setw(14) << v.label << std::right
       << std::setw(8) << v.graph.ops.size() << std::setw(10) << std::setprecision(1)
       << v.cost.total_s * 1e6;
    if (v.measured || (&v == &r.program && r.measured))
      os << std::setw(13) << std::setprecision(1) << v.seconds * 1e6 << std::setw(8)
         << std::setprecision(1) << 100 * v.timing.spread() << "%" << std::setw(11)
         << std::setprecision(2) << (&v == &r.program ? 1.0 : v.speedup) << "x" << std::setw(13)
         << std::scientific << std::setprecision(1) << (&v == &r.program ? r.program_max_rel : v.max_rel)
         << std::fixed;
    os << "\n";
  };
  row(r.program, r.best < 0);
  for (size_t i = 0; i < r.ranked.size(); ++i) row(r.ranked[i], static_cast<int>(i) == r.best);
  os << "(program max-rel-err: its " << (r.target.kind == target::Kind::kCpu ? "CPU" : "GPU")
     << " run vs the float64 interpreter; variants: vs the program's run)\n";
  if (r.measured)
    os << "(measured-us: median of " << r.rounds.rounds
       << " interleaved rounds; spread: (p90 - p10) / median; vs-program: median of the "
          "per-round ratios; a variant is preferred only when the 95% interval of that "
          "median shows a gain of at least "
       << std::setprecision(0) << 100 * r.min_gain << "%)\n";
  if (r.measured)
    os << "rank correlation, model vs measured (Spearman, " << r.ranked.size()
       << " variants): " << std::setprecision(2) << r.spearman << "\n";
  if (r.measured && r.beyond_noise.pairs == 0)
    os << "rank agreement beyond noise: no two entries' p10-p90 ranges are apart\n";
  else if (r.measured)
    os << "rank agreement beyond noise (Kendall's tau over the " << r.beyond_noise.pairs
       << " pairs, program included, whose p10-p90 ranges do not overlap): "
       << std::setprecision(2) << r.beyond_noise.tau << " (" << r.beyond_noise.alike
       << " ordered alike)\n";
  const Variant& c = r.chosen();
  os << "\nchosen: " << c.label;
  if (r.measured)
    os << ", " << std::setprecision(2) << (r.best < 0 ? 1.0 : c.speedup)
       << "x the program as written (median of per-round ratios; spread " << std::setprecision(1)
       << 100 * c.timing.spread() << "%" << (r.best >= 0 ? ", program " : "")
       << (r.best >= 0 ? percent(r.program.timing.spread()) : "") << ")";
  os << "\n";
  if (r.certify_ran) os << "certify: " << verify::format_verdict(r.certified, program, c.graph);
  if (r.best < 0) os << "verdict: the program itself (nothing to prove)\n";
  for (const std::string& n : r.notes) os << "note: " << n << "\n";
  if (r.budget_s > 0) {
    double total = 0;
    os << "time budget " << std::setprecision(1) << r.budget_s << " s:";
    for (const OptimizeReport::Step& s : r.steps) {
      total += s.seconds;
      os << " " << s.name << " " << s.seconds << " s" << (s.cut.empty() ? "" : " (cut: " + s.cut + ")")
         << (&s == &r.steps.back() ? ";" : ",");
    }
    os << " total " << total << " s\n";
  }
  if (!r.not_verified.empty() && !(r.certify_ran && r.certified.kind != verify::VerdictKind::kVerified))
    os << r.not_verified << "\n";
  if (r.certify_ran && r.certified.kind != verify::VerdictKind::kVerified)
    os << "NOT VERIFIED: the chosen variant " << c.label << " is "
       << verify::verdict_name(r.certified.kind) << ", handed out because of --accept-unproved\n";
  return os.str();
}

std::vector<std::pair<std::string, std::string>> optimize_files(const OptimizeReport& r,
                                                               const ir::KernelGraph& program) {
  std::vector<std::pair<std::string, std::string>> files;
  const std::string verdict =
      r.best < 0 ? "the program itself (nothing to prove)"
                 : std::string(verify::verdict_name(r.certified.kind)) + " (certify): " +
                       r.certified.summary;
  files.emplace_back("best.mu", text_with_verdict(r.chosen().graph, verdict));
  nlohmann::json best = nlohmann::json::parse(ir::to_json(r.chosen().graph));
  best["verdict"] = verdict;
  files.emplace_back("best.json", best.dump(1) + "\n");
  if (!r.best_source.empty())
    files.emplace_back(r.target.kind == target::Kind::kCpu ? "best_cpu.cc" : "best.cu",
                       r.best_source);
  files.emplace_back("report.txt", format_report(r, program));
  // The numbers of the report for scripts (bench/cpu).
  nlohmann::json j;
  j["target"] = r.target.name;
  j["search_seconds"] = r.search.seconds;
  j["search_stop"] = std::string(search::stop_reason_name(r.search.stop_reason));
  j["measured"] = r.measured;
  j["chosen"] = r.chosen().label;
  j["chosen_speedup"] = r.best < 0 ? 1.0 : r.chosen().speedup;
  // The chosen graph's device traffic and FLOPs by the cost model's counts: achieved
  // bandwidth / FLOP rate = these over the measured time (bench/gpu).
  j["chosen_bytes"] = r.chosen().cost.bytes;
  j["chosen_flops"] = r.chosen().cost.flops;
  j["device"] = r.device;
  j["program"] = {{"model_s", r.program.cost.total_s}, {"measured_s", r.program.seconds},
                  {"spread", r.program.timing.spread()}, {"p10_s", r.program.timing.p10},
                  {"p90_s", r.program.timing.p90}, {"max_rel", r.program_max_rel}};
  j["rounds"] = r.rounds.rounds;
  j["spread_ok"] = r.rounds.spread_ok;
  for (const Variant& v : r.ranked)
    j["variants"].push_back({{"label", v.label}, {"kernels", v.graph.ops.size()},
                             {"model_s", v.cost.total_s}, {"measured_s", v.seconds},
                             {"spread", v.timing.spread()}, {"speedup", v.speedup},
                             {"p10_s", v.timing.p10},
                             {"p90_s", v.timing.p90},
                             {"measured", v.measured}, {"max_rel", v.max_rel},
                             {"verdict", v.verdict}});
  j["spearman"] = r.spearman;
  j["beyond_noise"] = {{"tau", r.beyond_noise.tau}, {"pairs", r.beyond_noise.pairs}, {"alike", r.beyond_noise.alike}};
  j["budget_s"] = r.budget_s;
  for (const OptimizeReport::Step& s : r.steps)
    j["steps"].push_back({{"name", s.name}, {"seconds", s.seconds}, {"cut", s.cut}});
  j["certified"] = r.certify_ran ? std::string(verify::verdict_name(r.certified.kind)) : "";
  j["not_verified"] = r.not_verified;
  files.emplace_back("report.json", j.dump(2) + "\n");
  return files;
}

Status write_files(const std::vector<std::pair<std::string, std::string>>& files,
                   const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return error("cannot create '", dir, "': ", ec.message());
  for (const auto& [name, text] : files) {
    std::ofstream f(fs::path(dir) / name);
    if (!(f << text)) return error("cannot write '", (fs::path(dir) / name).string(), "'");
  }
  return ok_status();
}

Status write_optimize_results(const OptimizeReport& r, const ir::KernelGraph& program,
                              const std::string& dir) {
  MG_RETURN_IF_ERROR(write_files(optimize_files(r, program), dir));
  return write_search_results(r.search, program, (fs::path(dir) / "search").string()).status();
}

}  // namespace mugraph::driver
