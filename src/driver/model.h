// `mugraph model`: a whole model (a program, e.g. imported from HLO text) through the
// graph-rewrite environment (rewrite/env.h, HloEnv), with mugraph's superoptimizer as the
// fusion pass and a noise-controlled runtime oracle.
//
//   1. augment     the fusion pass and the algebraic-simplification pass (rewrite/simplify.h:
//                  rules as data, each match certified) in dry mode on each state: per candidate
//                  region, the superoptimizer's best `options_per_region` uGraphs (planned
//                  search under region_budget_s), each certified against the region; only
//                  VERIFIED ones become options (PASSED/UNPROVED with accept_unproved). Results
//                  are cached by the region's canonical hash: a region met again (the second
//                  layer of a stack, the next state) is not searched again
//   2. strategies  each strategy asked for (rewrite/strategies.h) from the program
//   3. oracle      "runtime": T(G) = the minimum of `runs` timed calls after `warmups` on the
//                  CPU (one JIT module per batch of states, the program in every batch as the
//                  yardstick: T(G) = T(program) x min(G) / min(program) of that batch), states
//                  within `band` (0.06,
//                  HloEnv's 0.94-1.06) equal; "model": the cost model (opt/cost_model.h) on the
//                  target, band 0. The cost model is always the cheap oracle (greedy)
//   4. confirm     runtime oracle: the program and each strategy's best state timed again in one
//                  module, in interleaved rounds (time_rounds.h): the speedups reported are
//                  these, and a state is chosen only when it beats the program beyond the noise
//                  (the oracle's T of states measured minutes apart decides the search, not
//                  the claim)
//   5. check       each strategy's best state: its CPU run against the float64 interpreter,
//                  and certify against the program (field tests when the whole model is Lax;
//                  otherwise the verdict says the float check is all it is). The replaced
//                  regions were each VERIFIED, so the state equals the program by
//                  substitution of equals; the whole-model check is the cross-check
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "driver/cpu_backend.h"
#include "rewrite/fusion.h"
#include "rewrite/simplify.h"
#include "rewrite/strategies.h"
#include "search/options.h"

namespace mugraph::driver {

struct ModelOptions {
  search::SearchOptions search;    // per region (target, limits); plan and budget set below
  double region_budget_s = 20;     // the planned search of one region (certify excluded)
  double search_budget_s = 600;    // all region searches together; past it, a region not yet
                                   // searched gets no option (the report says how many)
  int options_per_region = 2;      // VERIFIED candidates kept per region, best by the model
  int certify_tries = 4;           // candidates certified per region at most
  rewrite::FusionOptions fusion;
  bool simplify = true;            // the algebraic-simplification pass (rewrite/simplify.h) too
  rewrite::StrategyOptions strategy;  // band is set from the oracle
  std::vector<std::string> strategies = rewrite::kStrategies;
  std::string oracle = "runtime";  // "runtime" (CPU target only) or "model"
  int runs = 10, warmups = 2;      // runtime oracle: T = min of `runs` after `warmups`
  int cpu_threads = 0;             // 0: the idle cores (runtime::idle_cores)
  verify::VerifyOptions certify;   // regions and the final states
  bool accept_unproved = false;
  runtime::JitOptions jit = default_jit_options();
  uint64_t seed = 1;               // inputs of the timed runs
  // Called with a line as each region's search ends and each strategy ends (empty: silent).
  std::function<void(const std::string&)> progress;
};

struct RegionNote {
  std::string region;   // "ops 3-9 (7 ops)"
  std::string outcome;  // "2 options VERIFIED", "no candidate (why)", "cached"
  double seconds = 0;
};

struct ModelResult {
  rewrite::StrategyResult result;
  double max_rel = 0;           // its CPU run against the float64 interpreter
  double tolerance = 0;
  verify::Verdict whole;        // certify of the best state against the program
  int regions_replaced = 0;     // replacements on the path from the program
  int regions_verified = 0;     // of those, the ones whose option was VERIFIED against its region
  bool rejected = false;        // the whole check refuted it, or its CPU run is off (a bug)
  bool proven = false;          // not rejected, and VERIFIED as a whole or region by region
  // Runtime oracle: the best state and the program timed again side by side (interleaved
  // rounds, time_rounds.h), after every strategy ran: what the report's speedups are.
  bool confirmed = false;       // whether that timing ran
  double speedup = 1;           // 1 / median of the per-round ratios best / program
  double ratio_lo = 1, ratio_hi = 1;  // 95% interval of that median ratio
  bool slower = false;          // slower than the program beyond the noise
  bool beats = false;           // faster than the program beyond the noise: the 95% interval of
                                // the median ratio below 1 - band (6%)
};

struct ModelReport {
  int regions_unsearched = 0;               // regions met after search_budget_s was spent
  double program_model_s = 0;               // the cost model's time of the program
  std::vector<double> first_region_model_s;  // ... and of each first node's region as written
  std::string oracle;                       // "runtime (cpu, min of 10 runs)" or "model (h100)"
  std::vector<rewrite::AltNode> first;      // the program's alternative nodes
  std::vector<RegionNote> regions;          // every region searched, in search order
  std::vector<ModelResult> results;         // one per strategy, in the order asked
  int best = -1;                            // the fastest proven result (-1: none beats G0)
  double augment_seconds = 0;               // searching and certifying regions
};

Result<ModelReport> run_model(const ir::KernelGraph& program, const ModelOptions& o);

// The environment's parts as run_model wires them, alive together: the passes (the region
// searches' cache, the simplification proofs), the oracle and the cheap oracle, and the oracle
// memos every environment made from it shares. What the Python binding (mugraph.Env) holds.
class ModelSession {
 public:
  // Errors: an unknown oracle, the runtime oracle on a GPU target, a budget or count out of range.
  static Result<std::unique_ptr<ModelSession>> make(const ir::KernelGraph& program,
                                                    const ModelOptions& o);
  ~ModelSession();
  rewrite::Env env() const;  // a fresh environment at the program
  const rewrite::StrategyOptions& strategy_options() const;  // o.strategy, its band per oracle
  const std::string& oracle_text() const;
  const std::vector<RegionNote>& regions() const;
  int regions_unsearched() const;
  double search_seconds() const;
  int threads() const;

 private:
  ModelSession();
  struct Parts;
  std::unique_ptr<Parts> p_;
};

std::string format_model_report(const ModelReport& r, const ir::KernelGraph& program);

// The report as JSON (report.json): the oracle, the regions searched, per strategy its times,
// decisions, evaluations, seconds, checks, and the chosen one.
std::string model_report_json(const ModelReport& r, const ir::KernelGraph& program);

}  // namespace mugraph::driver
