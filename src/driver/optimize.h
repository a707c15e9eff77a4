// `mugraph optimize`: the whole pipeline as one readable list of steps.
//
//   1. superoptimize       search each Lax part (search/search.h), candidates ranked by the
//                          cost model on the target (opt/cost_model.h)
//   1b. tune               when the program is a chain of two matmuls (opt/tile_chain.h):
//                          MCFuser's tiling search (driver/tune.h, search/tune_chain.h), its
//                          generations measured on the CPU, or on the GPU for a GPU target when
//                          one is present (else ranked by the model alone); its
//                          best tune_variants tilings (fastest measured first) join the variants
//                          as "tile1", "tile2", ... and go through steps 3-5 like the rest
//   2. variants            whole programs: per part the better (by the model) of its best
//                          candidate and the part as written, then every other candidate of a
//                          part substituted alone; the top n by the model are kept
//   2b. retile             the two best variants' graph-defined kernels on grids with one
//                          dim halved or doubled, or half or twice the for-loop range
//                          (opt/retile.h: MCFuser's tile tuning of a found structure); the
//                          retile_variants best by the model, where the model prefers them to
//                          their source, join the variants as "retile1", ...
//   3. measure             one JIT module with the program and the n variants, on the CPU for
//                          target cpu, on the GPU for a GPU target when one is present; each
//                          run on the same seeded inputs, checked against the program's run
//                          (which is checked against the float64 interpreter; that run is
//                          also the first warm-up), then the program and the variants that
//                          match it timed in interleaved rounds (driver/time_rounds.h): median
//                          and spread each, more rounds while a spread is too wide (on a GPU
//                          each sample is CUDA-event timed, launched as a CUDA graph)
//   4+5. choose, certify   the variants faster than the program beyond the noise (measured,
//                          time_rounds.h's preference_order: a tie goes to the program, then to
//                          the earlier-ranked variant; by the model where nothing can be
//                          measured), in that order, are certified against the
//                          program until one is VERIFIED (at most certify_tries); an unproven
//                          one (PASSED, UNPROVED) is taken only with accept_unproved, a
//                          rejected one never; the program itself is kept when none qualifies
//                          (the report says loudly which faster variant was not proven)
//   6. generate            the chosen variant's source: C++ (cpu) or CUDA (GPU targets; compiled
//                          with nvcc even when no GPU is present, so what is handed out builds)
// GPU target without a GPU: step 3 is skipped (the model alone ranks) and the report says so.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "driver/cpu_backend.h"
#include "driver/cuda_backend.h"
#include "driver/time_rounds.h"
#include "driver/tune.h"
#include "opt/cost_model.h"

namespace mugraph::driver {

// Under a time budget (search.time_budget_s: the whole command) each step gets a share of the
// time left when it starts (what a step leaves unused goes to the next): search 45%, the
// tiling search (step 1b, chains only) 30% of the rest, measuring
// (JIT compile included) 40% of the rest on a CPU target and 55% on a GPU target, certify 90%
// of what is then left, generating the rest. A step cut by its share says so in the report;
// nothing cut is handed out. (On an H200 machine at a 20 s budget, nvcc of the Gated MLP
// variants, 3-4 s each even in parallel, did not fit in 40%.)
constexpr double kOptimizeSearchShare = 0.45, kMeasureShareCpu = 0.4, kMeasureShareGpu = 0.55,
                 kCertifyShare = 0.9, kTuneShare = 0.3;

struct OptimizeOptions {
  search::SearchOptions search;  // search.target is the optimize target
  int top_n = 8;                 // variants measured (MCFuser measures a few top candidates)
  int runs = 10;                 // interleaved timing rounds per batch, after a warm-up round
  int max_rounds = 80;           // rounds in all at most (batches added while too noisy)
  double max_spread = 0.10;      // (p90 - p10) / median above which another batch is timed
  double measure_time_s = 10;    // no batch is added after this many seconds of timing
  double min_gain = 0.02;        // a win smaller than this share of the median is no win
  double min_sample_s = 0.02;    // CPU: a sample repeats calls until it lasts about this long
                                 // (many scheduler time slices: a neighbour's share averages out)
  uint64_t seed = 1;             // inputs of the measured runs
  int cpu_threads = 0;           // CPU: OpenMP threads while measuring; 0: the cores other
                                 // processes leave idle (runtime::idle_cores), measured first
  runtime::JitOptions jit = default_jit_options();
  runtime::CudaJitOptions cuda_jit = default_cuda_jit_options();
  bool cuda_graphs = true;       // GPU timing: launch each variant as a CUDA graph
  verify::VerifyOptions certify;  // mode certify
  int certify_tries = 3;          // variants certified at most, fastest first
  bool accept_unproved = false;   // may hand out a PASSED/UNPROVED variant (--accept-unproved)
  bool tune_chains = true;        // step 1b
  search::TuneOptions tune;       // its search (time_limit_s: also capped by the budget)
  int tune_variants = 2;          // tilings it adds to the variants
  int retile_variants = 2;        // step 2b: retiled variants added (0: none)
};

struct Variant {
  std::string label;  // "program", "cand3" or "p1:cand2" (part 1's candidate 2)
  ir::KernelGraph graph;
  opt::Cost cost;
  bool measured = false;
  double seconds = 0;   // measured median (timing.median)
  TimingStats timing;   // its samples, median and spread (interleaved rounds)
  double speedup = 0;   // over the program: 1 / the median of the per-round time ratios
  double max_rel = 0;   // against the program's run
  std::string verdict;  // the screen verdict of its candidate(s), or certify's once certified
};

struct OptimizeReport {
  search::SuperoptimizeResult search;
  std::optional<search::TuneResult> tune;  // step 1b, when it ran
  target::Target target;
  Variant program;               // the input program, as written
  std::vector<Variant> ranked;   // top n by the model, best first
  int best = -1;                 // index into ranked; -1 keeps the program
  bool measured = false;         // whether step 3 ran
  double program_max_rel = 0;    // program's measured run against the float64 interpreter
  double spearman = 0;           // model vs measured over `ranked`
  // Model vs measured over the pairs of measured entries (program included) whose p10-p90
  // ranges do not overlap: the ranking the timing can check.
  opt::PairAgreement beyond_noise;
  RoundsResult rounds;           // the timing rounds (stats are copied into the variants)
  double min_gain = 0;           // OptimizeOptions::min_gain, as used
  verify::Verdict certified;      // of the chosen variant (when one was chosen)
  bool certify_ran = false;
  std::string certify_cut;        // the variant whose certify the time budget cut, and how far
  std::string not_verified;       // the loud line: a faster variant was not handed out, and why
  std::string best_source;       // generated source of the chosen graph (C++ or CUDA)
  std::vector<std::string> notes;
  // False when a budget (time or memory) cut anything short of what an unlimited run would do:
  // a variant not measured, a certify not run (the result cache stores only complete runs,
  // or runs whose only cut is the search's time limit).
  bool complete = true;
  std::string device;            // what measured: "cpu" or the GPU's name; empty if nothing
  // Under a time budget, per step: its name, seconds used and, when it was cut, how.
  struct Step {
    std::string name;
    double seconds = 0;
    std::string cut;
  };
  std::vector<Step> steps;
  double budget_s = 0;           // the time budget (0: none)

  const Variant& chosen() const { return best < 0 ? program : ranked[static_cast<size_t>(best)]; }
};

Result<OptimizeReport> optimize(const ir::KernelGraph& program, const OptimizeOptions& o);

// The report text (what report.txt holds and the CLI prints).
std::string format_report(const OptimizeReport& r, const ir::KernelGraph& program);

// The files of a report, name -> text: best.mu, best.json, best_cpu.cc (target cpu) or best.cu
// (GPU), report.txt, report.json.
std::vector<std::pair<std::string, std::string>> optimize_files(const OptimizeReport& r,
                                                               const ir::KernelGraph& program);
// Writes `files` under `dir` (created if needed).
Status write_files(const std::vector<std::pair<std::string, std::string>>& files,
                   const std::string& dir);
// Writes optimize_files and the search results (search/, as write_search_results) under `dir`.
Status write_optimize_results(const OptimizeReport& r, const ir::KernelGraph& program,
                              const std::string& dir);

}  // namespace mugraph::driver
