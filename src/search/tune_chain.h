// MCFuser's heuristic search (seed 002, §IV-B, Algorithm 1) over a chain's uGraph tilings
// (search/tiling.h): an evolutionary search ranked by the analytical cost model
// (opt/cost_model.h, eq. 2-5, on the lowered uGraph), measuring only the model's top n of each
// generation on the backend at hand, and stopping at convergence.
//
//   population  N tilings drawn at random from the pruned space (all of it when it has <= N)
//   each round  estimate every member (the model), sort; measure the top n not measured yet
//               (each tiling is measured once); top1 = the fastest measured among this
//               round's top n. Converged when |top1 - best| <= epsilon * best; else best =
//               min(best, top1) and the next population is drawn from this one with weights
//               1 / estimate, each draw mutating one loop's tile to another size the space
//               allows for that loop (a draw with no allowed mutation is kept as is).
//   stops       at convergence, after max_rounds, or when the time limit has passed (the
//               round in progress finishes).
// Deterministic for a seed, given the measurements.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "opt/tile_chain.h"
#include "search/tiling.h"
#include "support/status.h"
#include "target/target.h"

namespace mugraph::search {

struct TuneOptions {
  int population = 64;   // N
  int measure_top = 8;   // n
  double epsilon = 0.02; // relative gap that counts as converged
  int max_rounds = 20;
  double time_limit_s = 60;
  uint64_t seed = 1;
  // The backend's own check of a lowered tiling (empty: none). The CUDA generator plans shared
  // memory with f32 tiles for some intermediates, more than the IR's estimate: a tiling it
  // refuses could be neither measured nor handed out, so it is counted and named, never ranked.
  std::function<Status(const ir::KernelGraph&)> accepts;
};

struct TunedTiling {
  opt::ChainTiles tiles;
  ir::KernelGraph graph;
  double model_s = 0;
  double measured_s = -1;  // < 0: not measured
  int round = -1;          // the round that measured it
};

struct TuneResult {
  opt::ChainInfo chain;
  Space space;
  std::vector<TunedTiling> measured;  // in measuring order
  int best = -1;                       // index into measured: the fastest
  TunedTiling model_best;              // the model's best over the whole pruned space
  int rounds = 0;
  bool converged = false;
  double seconds = 0, measure_seconds = 0;
  int64_t estimated = 0;               // model evaluations (distinct tilings)
  double rank_correlation = 0;         // Spearman, model vs measured, over `measured`
  std::string stop_reason;             // "converged", "max rounds", "time limit", "space exhausted"
  std::vector<std::string> notes;      // tilings that did not lower, a cut ranking
};

// Seconds per call of each graph (one batch per round, the graphs of one module).
using MeasureBatch =
    std::function<Result<std::vector<double>>(const std::vector<const ir::KernelGraph*>&)>;

// An empty `measure` ranks by the model alone: nothing is measured, model_best is the answer.
// Errors: bad options, the program is not a chain (opt::find_chain's message), no tiling that
// lowers and fits the target (the message gives the counts), a measurement error. A tiling that
// does not lower is skipped (notes count them); the time limit also cuts the model's ranking of
// a huge space (what was ranked is searched).
Result<TuneResult> tune_chain(const ir::KernelGraph& program, const target::Target& t,
                              const TuneOptions& o, const MeasureBatch& measure);

// A printable report: the space counts, each round's measured tilings (model and measured), the
// rank correlation and the best.
std::string format_tune(const TuneResult& r);

}  // namespace mugraph::search
