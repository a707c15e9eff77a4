#include "driver/model.h"

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ir/canonical.h"
#include "ir/lax_partition.h"
#include "driver/time_rounds.h"
#include "opt/cost_model.h"

namespace mugraph::driver {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string us(double s) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(s < 1e-5 ? 2 : s < 1e-3 ? 1 : 0) << s * 1e6 << " us";
  return os.str();
}

std::vector<codegen::NamedGraph> named(const std::vector<const ir::KernelGraph*>& graphs) {
  std::vector<codegen::NamedGraph> out;
  for (size_t i = 0; i < graphs.size(); ++i) out.push_back({"s" + std::to_string(i), graphs[i]});
  return out;
}

// The fusion pass's superoptimizer: a planned search of the region, its best candidates that
// the model prefers to the region as written certified, the VERIFIED ones (or accepted ones
// with accept_unproved) kept; cached by the region's canonical hash.
class Proposer {
 public:
  Proposer(const ModelOptions& o, std::vector<RegionNote>& notes, int& unsearched)
      : o_(o), notes_(notes), unsearched_(unsearched) {}

  Result<std::vector<rewrite::Option>> operator()(const ir::KernelGraph& region) {
    const uint64_t h = ir::canonical_hash(region);
    if (auto it = cache_.find(h); it != cache_.end()) return it->second;
    if (seconds_ >= o_.search_budget_s) {
      ++unsearched_;
      return cache_[h] = {};
    }
    const auto t0 = Clock::now();
    RegionNote note{std::to_string(region.ops.size()) + " ops (" + region_text(region) + ")", "", 0};
    std::vector<rewrite::Option> options = search(region, note.outcome);
    note.seconds = since(t0);
    seconds_ += note.seconds;
    notes_.push_back(note);
    if (o_.progress) {
      std::ostringstream os;
      os << "region " << notes_.size() << ": " << note.region << ": " << note.outcome << " ("
         << std::fixed << std::setprecision(1) << note.seconds << " s)";
      o_.progress(os.str());
    }
    cache_[h] = options;
    return options;
  }

  double seconds() const { return seconds_; }

 private:
  // "matmul, mul, sum, ...": the region's ops, as a report names it.
  static std::string region_text(const ir::KernelGraph& g) {
    std::string s;
    for (size_t i = 0; i < g.ops.size() && i < 6; ++i)
      s += (i ? ", " : "") + std::string(g.ops[i].graph_defined ? "kernel" : ir::op_info(g.ops[i].op).name);
    return g.ops.size() > 6 ? s + ", ..." : s;
  }

  std::vector<rewrite::Option> search(const ir::KernelGraph& region, std::string& outcome) {
    search::SearchOptions so = o_.search;
    so.plan = true;
    so.time_budget_s = o_.region_budget_s;
    so.certify = false;
    so.checkpoint.clear();
    so.progress = {};
    auto r = search::superoptimize(region, so);
    if (!r.ok()) {
      outcome = "not searched: " + r.status().message();
      return {};
    }
    if (r->parts.size() != 1 || r->parts[0].candidates.empty()) {
      outcome = r->parts.size() != 1 ? "not one Lax part" : "no candidate";
      if (r->parts.size() == 1 && !r->parts[0].why_none.empty()) {
        // The search's advice names its own flags; here the region budget is the knob.
        std::string why = r->parts[0].why_none;
        for (const char* cut :
             {"; give it more time", " (give it more time", "; search larger spaces"})
          if (const size_t at = why.find(cut); at != std::string::npos) why.erase(at);
        outcome += " (" + why + ")";
        if (r->stop_reason == search::StopReason::kTimeLimit) outcome += "; --region-budget gives each region more time";
      }
      return {};
    }
    const double as_written = opt::estimate(region, so.target).total_s;
    const uint64_t h = ir::canonical_hash(region);
    std::vector<rewrite::Option> out;
    int slower = 0, rejected = 0, tries = 0;
    const auto& cands = r->parts[0].candidates;
    for (size_t i = 0; i < cands.size() && static_cast<int>(out.size()) < o_.options_per_region &&
                       tries < o_.certify_tries;
         ++i) {
      ir::KernelGraph g = ir::stitch(region, r->partition, {cands[i].graph});
      if (ir::canonical_hash(g) == h) continue;  // the region as written
      const double model_s = opt::estimate(g, so.target).total_s;
      if (model_s >= as_written) {
        ++slower;
        continue;
      }
      verify::VerifyOptions vo = o_.certify;
      vo.mode = verify::Mode::kCertify;
      ++tries;
      const verify::Verdict v = verify::check(region, g, vo);
      const bool take = v.kind == verify::VerdictKind::kVerified ||
                        (o_.accept_unproved && verify::accepted(v.kind));
      if (!take) {
        ++rejected;
        continue;
      }
      out.push_back({"cand" + std::to_string(i + 1), std::move(g),
                     std::string(verify::verdict_name(v.kind)) + " (certify): " + v.summary, model_s});
    }
    std::ostringstream os;
    os << cands.size() << " candidate(s), " << out.size() << " option(s) "
       << (o_.accept_unproved ? "accepted" : "VERIFIED");
    if (slower) os << ", " << slower << " not faster than the region by the model";
    if (rejected) os << ", " << rejected << " not proven";
    if (tries == o_.certify_tries && static_cast<int>(out.size()) < o_.options_per_region)
      os << " (" << tries << " certified at most)";
    if (r->stop_reason != search::StopReason::kExhausted)
      os << "; search stopped: " << search::stop_reason_name(r->stop_reason);
    outcome = os.str();
    return out;
  }

  const ModelOptions& o_;
  std::vector<RegionNote>& notes_;
  int& unsearched_;
  std::map<uint64_t, std::vector<rewrite::Option>> cache_;
  double seconds_ = 0;
};

// T(G) on the CPU (HloEnv's min(evaluate(10)), with the program as a yardstick): each batch is
// one JIT module holding the program and the states; every entry is warmed up (`warmups` calls
// and at least 20 ms), then `runs` rounds each take one sample of every entry (a sample repeats
// the call for about 2 ms) and each entry keeps its minimum. A state's T is the program's T from
// the first batch times the state's minimum over the program's minimum in its own batch: a busy
// spell or a clock change between batches (states met minutes apart) moves both alike.
rewrite::Evaluate cpu_oracle(const ir::KernelGraph& program, const ModelOptions& o, int threads,
                             std::shared_ptr<double> program_s) {
  return [&program, &o, threads, program_s](const std::vector<const ir::KernelGraph*>& graphs)
             -> Result<std::vector<double>> {
    std::vector<const ir::KernelGraph*> all{&program};
    all.insert(all.end(), graphs.begin(), graphs.end());
    MG_ASSIGN_OR_RETURN(auto mod, compile_cpu(named(all), o.jit));
    const CpuThreadScope scope(threads);
    std::vector<CpuBuffers> bufs;
    std::vector<int> calls;
    std::vector<double> best;
    for (size_t i = 0; i < all.size(); ++i) {
      bufs.push_back(make_buffers(*all[i], o.seed));
      const auto w0 = Clock::now();
      for (int w = 0; w < o.warmups || since(w0) < 0.02; ++w)
        MG_RETURN_IF_ERROR(mod->run(i, bufs[i].in(), bufs[i].out()));
      MG_ASSIGN_OR_RETURN(double one, mod->time(i, bufs[i].in(), bufs[i].out(), 1));
      calls.push_back(calls_per_sample(one, 0.002));
      best.push_back(one);
    }
    for (int r = 0; r < o.runs; ++r)
      for (size_t i : round_order(all.size(), r)) {
        const auto t0 = Clock::now();
        for (int c = 0; c < calls[i]; ++c) MG_RETURN_IF_ERROR(mod->run(i, bufs[i].in(), bufs[i].out()));
        best[i] = std::min(best[i], since(t0) / calls[i]);
      }
    if (*program_s <= 0) *program_s = best[0];
    std::vector<double> out;
    for (size_t i = 1; i < all.size(); ++i) out.push_back(*program_s * best[i] / best[0]);
    return out;
  };
}

rewrite::Evaluate model_oracle(const target::Target& t) {
  return [t](const std::vector<const ir::KernelGraph*>& graphs) -> Result<std::vector<double>> {
    std::vector<double> out;
    for (const ir::KernelGraph* g : graphs) out.push_back(opt::estimate(*g, t).total_s);
    return out;
  };
}

// Step 4: the best state's CPU run against the float64 interpreter, and certify against the
// program.
Status check_result(const ir::KernelGraph& program, const ModelOptions& o, ModelResult& m) {
  const ir::KernelGraph& g = m.result.best;
  for (const rewrite::Decision& d : m.result.decisions)
    for (const std::string& v : d.verdicts) {
      ++m.regions_replaced;
      m.regions_verified += v.rfind("VERIFIED", 0) == 0;
    }
  MG_ASSIGN_OR_RETURN(auto mod, compile_cpu({{"best", &g}}, o.jit));
  MG_ASSIGN_OR_RETURN(std::vector<OutputDiff> diffs, check_cpu(*mod, 0, g, o.seed));
  for (const OutputDiff& d : diffs) m.max_rel = std::max(m.max_rel, d.max_rel);
  m.tolerance = cpu_tolerance(g);
  if (ir::canonical_hash(g) == ir::canonical_hash(program)) {
    m.whole.kind = verify::VerdictKind::kVerified;
    m.whole.summary = "the program itself";
  } else {
    verify::VerifyOptions vo = o.certify;
    vo.mode = verify::Mode::kCertify;
    m.whole = verify::check(program, g, vo);
  }
  m.rejected = (!verify::accepted(m.whole.kind) && m.whole.kind != verify::VerdictKind::kInconclusive) ||
               !(m.max_rel <= m.tolerance);
  // Proven: the whole check VERIFIED it, or every replaced region was VERIFIED against the ops
  // it replaced (equal parts, equal whole) and the whole check did not refute it.
  m.proven = !m.rejected && (m.whole.kind == verify::VerdictKind::kVerified ||
                             m.regions_verified == m.regions_replaced);
  return {};
}

// Step 4: the program (entry 0) and the distinct best states timed in interleaved rounds.
Status confirm(const ir::KernelGraph& program, const ModelOptions& o, int threads, double band,
               std::vector<ModelResult>& results) {
  std::vector<const ir::KernelGraph*> graphs{&program};
  std::vector<uint64_t> hashes{ir::canonical_hash(program)};
  std::vector<size_t> entry;
  for (const ModelResult& m : results) {
    const uint64_t h = ir::canonical_hash(m.result.best);
    const auto at = std::find(hashes.begin(), hashes.end(), h);
    entry.push_back(static_cast<size_t>(at - hashes.begin()));
    if (at == hashes.end()) {
      hashes.push_back(h);
      graphs.push_back(&m.result.best);
    }
  }
  MG_ASSIGN_OR_RETURN(auto mod, compile_cpu(named(graphs), o.jit));
  const CpuThreadScope scope(threads);
  std::vector<CpuBuffers> bufs;
  std::vector<int> calls;
  for (size_t i = 0; i < graphs.size(); ++i) {
    bufs.push_back(make_buffers(*graphs[i], o.seed));
    MG_ASSIGN_OR_RETURN(double t, mod->time(i, bufs[i].in(), bufs[i].out(), 3));
    calls.push_back(calls_per_sample(t, 0.02));
  }
  auto sample = [&](size_t i) -> Result<double> {
    const auto t0 = Clock::now();
    for (int c = 0; c < calls[i]; ++c) MG_RETURN_IF_ERROR(mod->run(i, bufs[i].in(), bufs[i].out()));
    return since(t0) / calls[i];
  };
  RoundOptions ro;
  ro.rounds = std::max(10, o.runs);
  MG_ASSIGN_OR_RETURN(RoundsResult rr, time_rounds(graphs.size(), sample, ro));
  for (size_t k = 0; k < results.size(); ++k) {
    ModelResult& m = results[k];
    const TimingStats& v = rr.stats[entry[k]];
    const Ratio q = compare(v, rr.stats[0]);
    m.confirmed = true;
    m.speedup = entry[k] == 0 ? 1 : 1 / q.median;
    m.ratio_lo = entry[k] == 0 ? 1 : q.lo;
    m.ratio_hi = entry[k] == 0 ? 1 : q.hi;
    m.beats = entry[k] != 0 && beats(v, rr.stats[0], band);
    m.slower = entry[k] != 0 && beats(rr.stats[0], v, band);
  }
  return {};
}

}  // namespace

struct ModelSession::Parts {
  ir::KernelGraph program;
  ModelOptions o;
  std::vector<RegionNote> regions;
  int unsearched = 0;
  std::unique_ptr<Proposer> propose;
  rewrite::SimplifyProofs proofs;
  int threads = 1;
  rewrite::Augment augment;
  rewrite::Evaluate oracle, model;
  std::shared_ptr<rewrite::TimeMemo> times = std::make_shared<rewrite::TimeMemo>();
  std::shared_ptr<rewrite::TimeMemo> model_times = std::make_shared<rewrite::TimeMemo>();
  rewrite::StrategyOptions strategy;
  std::string oracle_text;
};

ModelSession::ModelSession() = default;
ModelSession::~ModelSession() = default;

Result<std::unique_ptr<ModelSession>> ModelSession::make(const ir::KernelGraph& program,
                                                         const ModelOptions& o) {
  if (o.oracle != "runtime" && o.oracle != "model")
    return error("unknown oracle '", o.oracle, "' (runtime or model)");
  if (o.oracle == "runtime" && o.search.target.kind != target::Kind::kCpu)
    return error("the runtime oracle measures on the CPU: give target cpu, or the model oracle for ",
                 o.search.target.name, " (--oracle model)");
  if (o.region_budget_s <= 0 || o.search_budget_s <= 0) return error("the region and search budgets must be > 0 s");
  if (o.options_per_region < 1) return error("options per region must be >= 1");
  if (o.runs < 1 || o.warmups < 0) return error("runs must be >= 1 and warm-ups >= 0");
  std::unique_ptr<ModelSession> s(new ModelSession());
  s->p_ = std::make_unique<Parts>();
  Parts& p = *s->p_;
  p.program = program;
  p.o = o;
  p.propose = std::make_unique<Proposer>(p.o, p.regions, p.unsearched);
  // The passes in dry mode: fusion's nodes, then the simplification rules' (in that order,
  // pick-first prefers a fusion to a simplification inside it).
  Parts* pp = &p;
  p.augment = [pp](const ir::KernelGraph& g) -> Result<std::vector<rewrite::AltNode>> {
    MG_ASSIGN_OR_RETURN(std::vector<rewrite::AltNode> nodes,
                        rewrite::fusion_alternatives(g, pp->o.fusion, std::ref(*pp->propose)));
    if (pp->o.simplify) {
      MG_ASSIGN_OR_RETURN(std::vector<rewrite::AltNode> more, rewrite::simplify_alternatives(g, &pp->proofs));
      for (rewrite::AltNode& n : more) {
        for (rewrite::Option& x : n.options) x.model_s = opt::estimate(x.graph, pp->o.search.target).total_s;
        nodes.push_back(std::move(n));
      }
    }
    return nodes;
  };
  p.threads = o.cpu_threads > 0 ? o.cpu_threads : runtime::idle_cores(0.2);
  p.oracle = o.oracle == "runtime" ? cpu_oracle(p.program, p.o, p.threads, std::make_shared<double>(0))
                                   : model_oracle(o.search.target);
  p.model = model_oracle(o.search.target);
  p.strategy = o.strategy;
  p.strategy.band = o.oracle == "runtime" ? o.strategy.band : 0.0;
  std::ostringstream os;
  if (o.oracle == "runtime")
    os << "runtime (cpu, " << p.threads << " thread(s), min of " << o.runs
       << " interleaved samples after a warm-up, relative to the program timed in the same batch; within "
       << p.strategy.band * 100 << "% counted equal)";
  else
    os << "model (" << o.search.target.name << ")";
  p.oracle_text = os.str();
  return s;
}

rewrite::Env ModelSession::env() const {
  return rewrite::Env(p_->program, p_->augment, p_->oracle, p_->model, p_->times, p_->model_times);
}
const rewrite::StrategyOptions& ModelSession::strategy_options() const { return p_->strategy; }
const std::string& ModelSession::oracle_text() const { return p_->oracle_text; }
const std::vector<RegionNote>& ModelSession::regions() const { return p_->regions; }
int ModelSession::regions_unsearched() const { return p_->unsearched; }
double ModelSession::search_seconds() const { return p_->propose->seconds(); }
int ModelSession::threads() const { return p_->threads; }

Result<ModelReport> run_model(const ir::KernelGraph& program, const ModelOptions& o) {
  MG_ASSIGN_OR_RETURN(std::unique_ptr<ModelSession> session, ModelSession::make(program, o));
  ModelReport r;
  r.oracle = session->oracle_text();
  r.program_model_s = opt::estimate(program, o.search.target).total_s;
  const rewrite::StrategyOptions& so = session->strategy_options();
  const int threads = session->threads();
  rewrite::Env first = session->env();
  MG_ASSIGN_OR_RETURN(const std::vector<rewrite::AltNode>* nodes, first.get_alternatives());
  r.first = *nodes;
  for (const rewrite::AltNode& n : r.first)
    r.first_region_model_s.push_back(opt::estimate(n.region.program, o.search.target).total_s);
  for (const std::string& name : o.strategies) {
    rewrite::Env env = session->env();
    MG_ASSIGN_OR_RETURN(rewrite::StrategyResult sr, rewrite::run_strategy(name, env, so));
    ModelResult m;
    m.result = std::move(sr);
    MG_RETURN_IF_ERROR(check_result(program, o, m));
    if (o.progress)
      o.progress(name + ": " + us(m.result.start_s) + " -> " + us(m.result.best_s) + " in " +
                 std::to_string(m.result.decisions.size()) + " decision(s), " +
                 std::to_string(m.result.stats.evaluations) + " state(s) evaluated");
    r.results.push_back(std::move(m));
  }
  r.augment_seconds = session->search_seconds();
  r.regions = session->regions();
  r.regions_unsearched = session->regions_unsearched();
  if (o.oracle == "runtime") MG_RETURN_IF_ERROR(confirm(program, o, threads, so.band, r.results));
  for (size_t i = 0; i < r.results.size(); ++i) {
    const ModelResult& m = r.results[i];
    const bool faster = m.confirmed ? m.beats : m.result.best_s < (1 - so.band) * m.result.start_s;
    if (m.rejected || !(m.proven || o.accept_unproved) || !faster) continue;
    const ModelResult* b = r.best < 0 ? nullptr : &r.results[static_cast<size_t>(r.best)];
    const bool better = !b || (m.confirmed ? m.speedup > b->speedup : m.result.best_s < b->result.best_s);
    if (better) r.best = static_cast<int>(i);
  }
  return r;
}

std::string format_model_report(const ModelReport& r, const ir::KernelGraph& program) {
  std::ostringstream os;
  os << "== mugraph model: " << program.ops.size() << " ops, oracle " << r.oracle << "\n";
  os << "alternatives of the program: " << r.first.size() << " node(s) (model: the cost model's time of\n"
     << " the region as written and of each option; the whole program: " << us(r.program_model_s) << ")\n";
  for (size_t d = 0; d < r.first.size(); ++d) {
    const rewrite::AltNode& n = r.first[d];
    os << "  node " << d << " (" << n.pass << ", " << rewrite::ops_text(n.region.ops) << ", "
       << n.region.inputs.size() << " in, " << n.region.outputs.size() << " out): keep";
    if (d < r.first_region_model_s.size()) os << " (model " << us(r.first_region_model_s[d]) << ")";
    for (const rewrite::Option& opt : n.options)
    {
      os << " | " << opt.label << " (" << opt.graph.ops.size() << " kernel op(s)";
      if (opt.model_s > 0) os << ", model " << us(opt.model_s);
      os << ")";
    }
    os << "\n";
  }
  os << "regions searched: " << r.regions.size() << " in " << std::fixed << std::setprecision(1)
     << r.augment_seconds << " s";
  if (r.regions_unsearched > 0)
    os << "; " << r.regions_unsearched << " more not searched: the search budget was spent";
  os << "\n";
  for (const RegionNote& n : r.regions)
    os << "  " << n.region << ": " << n.outcome << " (" << std::setprecision(1) << n.seconds << " s)\n";
  const bool confirmed = !r.results.empty() && r.results[0].confirmed;
  os << "\n strategy     T(start)     T(best)  speedup  decisions  replaced  evaluations  seconds  "
     << (confirmed ? "confirmed (95% interval)      " : "") << "whole-model check\n";
  for (const ModelResult& m : r.results) {
    const rewrite::StrategyResult& s = m.result;
    os << " " << std::left << std::setw(11) << s.strategy << std::right << std::setw(10) << us(s.start_s)
       << std::setw(12) << us(s.best_s) << std::setw(8) << std::setprecision(2)
       << s.start_s / s.best_s << "x" << std::setw(11) << s.decisions.size() << std::setw(10)
       << m.regions_replaced << std::setw(13) << s.stats.evaluations << std::setw(9)
       << std::setprecision(1) << s.seconds << "  ";
    if (m.confirmed) {
      std::ostringstream c;
      c << std::setprecision(2) << std::fixed << m.speedup << "x (" << 1 / m.ratio_hi << "-"
        << 1 / m.ratio_lo << ")" << (m.beats ? "" : m.slower ? " slower" : " =");
      os << std::left << std::setw(30) << c.str() << std::right;
    }
    os << verify::verdict_name(m.whole.kind)
       << (m.whole.lax || m.whole.summary == "the program itself" ? "" : " (float check: not Lax)") << "\n";
  }
  for (const ModelResult& m : r.results) {
    os << "\n" << m.result.strategy << ": ";
    if (m.result.decisions.empty()) os << "no decision (the program itself)\n";
    else os << m.result.decisions.size() << " decision(s)\n";
    for (size_t k = 0; k < m.result.decisions.size(); ++k) {
      const rewrite::Decision& d = m.result.decisions[k];
      os << "  step " << k + 1 << ": actions [";
      for (size_t i = 0; i < d.actions.size(); ++i) os << (i ? " " : "") << d.actions[i];
      os << "] -> " << std::hex << std::setw(16) << std::setfill('0') << d.hash << std::dec
         << std::setfill(' ') << ", T " << us(d.seconds) << "\n";
      for (size_t i = 0; i < d.taken.size(); ++i)
        os << "    took " << d.taken[i] << ": " << d.verdicts[i].substr(0, d.verdicts[i].find(':')) << "\n";
      for (const std::string& line : d.rejected) os << "    rejected: " << line << "\n";
    }
    os << "  CPU run vs float64 interpreter: max rel " << std::scientific << std::setprecision(1)
       << m.max_rel << " (tolerance " << m.tolerance << ")" << std::fixed << "\n";
    os << "  whole model vs program: " << verify::verdict_name(m.whole.kind) << ": " << m.whole.summary << "\n";
    if (m.regions_replaced > 0 && m.regions_verified == m.regions_replaced)
      os << "  proof: " << m.regions_replaced
         << " replaced region(s), each VERIFIED against the ops it replaces (equal parts, equal whole)\n";
    else if (m.regions_replaced > 0)
      os << "  NOT PROVEN: " << m.regions_replaced - m.regions_verified << " of " << m.regions_replaced
         << " replaced region(s) not VERIFIED (--accept-unproved)"
         << (m.whole.kind == verify::VerdictKind::kVerified ? "; the whole-model check VERIFIED it\n" : "\n");
  }
  if (confirmed)
    os << "\n(T: the oracle's, each state timed when first met; confirmed: the program and the best\n"
          " states timed again side by side in interleaved rounds, 1 / median of the per-round\n"
          " ratios, '=' when not faster beyond the noise, 'slower' when slower beyond it; seconds:\n"
          " the strategy's wall time, the region searches its states needed included)\n";
  if (r.best >= 0) {
    const ModelResult& m = r.results[static_cast<size_t>(r.best)];
    os << "\nchosen: " << m.result.strategy << ", " << std::setprecision(2)
       << (m.confirmed ? m.speedup : m.result.start_s / m.result.best_s) << "x the program"
       << (m.confirmed ? " (confirmed side by side)" : " (by the cost model)") << "\n";
  } else {
    os << "\nchosen: the program itself (no strategy reached a proven state "
       << (confirmed ? "that beats it beyond the noise" : "faster beyond the band") << ")\n";
  }
  return os.str();
}

std::string model_report_json(const ModelReport& r, const ir::KernelGraph& program) {
  using nlohmann::json;
  json j;
  j["ops"] = program.ops.size();
  j["oracle"] = r.oracle;
  j["alternative_nodes"] = r.first.size();
  j["search_seconds"] = r.augment_seconds;
  j["regions_unsearched"] = r.regions_unsearched;
  j["regions"] = json::array();
  for (const RegionNote& n : r.regions)
    j["regions"].push_back({{"region", n.region}, {"outcome", n.outcome}, {"seconds", n.seconds}});
  j["results"] = json::array();
  for (const ModelResult& m : r.results) {
    const rewrite::StrategyResult& s = m.result;
    json d = json::array();
    for (const rewrite::Decision& x : s.decisions) {
      char h[17];
      std::snprintf(h, sizeof h, "%016llx", static_cast<unsigned long long>(x.hash));
      d.push_back({{"actions", x.actions}, {"rejected", x.rejected}, {"hash", h}, {"seconds", x.seconds}});
    }
    j["results"].push_back({{"strategy", s.strategy}, {"start_seconds", s.start_s},
                            {"best_seconds", s.best_s}, {"speedup", s.start_s / s.best_s},
                            {"decisions", d}, {"regions_replaced", m.regions_replaced},
                            {"evaluations", s.stats.evaluations}, {"measured", s.stats.measured},
                            {"augments", s.stats.augments}, {"seconds", s.seconds},
                            {"max_rel", m.max_rel}, {"tolerance", m.tolerance},
                            {"whole", std::string(verify::verdict_name(m.whole.kind))},
                            {"whole_summary", m.whole.summary}, {"whole_lax", m.whole.lax},
                            {"proven", m.proven}, {"confirmed", m.confirmed},
                            {"confirmed_speedup", m.speedup}, {"ratio_lo", m.ratio_lo},
                            {"ratio_hi", m.ratio_hi}, {"beats_program", m.beats},
                            {"slower_than_program", m.slower}});
  }
  j["program_model_seconds"] = r.program_model_s;
  j["chosen_by"] = r.results.empty() || !r.results[0].confirmed ? "cost model (band 0)" : "confirmed timing (6% band)";
  j["chosen"] = r.best >= 0 ? json(r.results[static_cast<size_t>(r.best)].result.strategy) : json(nullptr);
  return j.dump(1) + "\n";
}

}  // namespace mugraph::driver
