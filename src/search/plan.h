// THE PLANNED SPACE (SearchOptions::plan): the search a user gets without search flags.
//
// One fixed space (Mirage's: 5 kernel ops, 11 block ops, 32..4096 blocks) misses kernels that
// need more block ops (QKNorm: 18), fewer blocks (nTrans: 8 rows, a block per row) or more
// time than a budget allows (it is searched depth-first, in task order). The plan derives a
// short list of spaces (stages) from the program and searches them in turn, each within a
// share of the time left, the candidates of all of them ranked together:
//
//   1. kernel graphs of predefined ops only (up to 3 kernel ops: concat-matmul, matmul
//      re-association; LoRA's Fig. 9b form), 10% of the time;
//   2. one graph-defined kernel without a loop (whole reduced dims per block, no accumulators:
//      nTrans's rows, softmax) with one block op per program op, half the time left;
//   3. one graph-defined kernel with a loop over the reduced index of largest extent (ranges
//      {4, 16, 64} that divide it) and one block op per program op plus one accumulator per
//      reduction over that index (RMSNorm + MatMul 7 + 2, attention 6 + 2, QKNorm 16 + 2),
//      70% of the time left;
//   4. (when stage 3 exists) split-K, derived rather than searched: each of the best looped
//      single kernels found so far split into 2, 4 or 8 parts (opt/split_loop.h: partial sums
//      on a grid that also splits the loop's index, then a kernel adding the parts up;
//      FlashDecoding's split-KV for attention), each form screened like a task's, half the
//      time left (searching a space of two kernels for such pairs reached them at GQA's
//      paper shapes, but not at other attention shapes within a default budget);
//   5. two graph-defined kernels of up to that many block ops each, with whatever time is left.
// A single-kernel stage that is exhausted (found or not) is followed, while time is left, by
// the same with 2 more block ops, up to 4 more than planned (the expert's count is a guess),
// but not after a deepened level that found candidates and none new (GQA's attention found
// again at 10 block ops would otherwise be searched a third time at 12).
//
// Tasks run coarsest grid first (SearchOptions::coarse_grids_first): a budget reaches the
// grids of fewest blocks first.
// Grids: at least min(32, P) blocks, P = the largest grid whose dims each split an index no
// output sums over evenly (a grid of whole rows when a row is all there is: nTrans's 8 rows
// give 8 blocks; 12 rows give 4 with power-of-two grid sizes). Everything else is the caller's options (threads, pruning, target, seed, screens).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "search/options.h"

namespace mugraph::search {

// The time budget of a planned search that was given none (search_lax; the CLI's default).
constexpr double kPlannedBudgetSeconds = 60;

// The time budget of a search: options.time_budget_s, or for a planned one given neither a
// budget nor a deadline, kPlannedBudgetSeconds (a planned search always has one).
inline double planned_budget(const SearchOptions& o) {
  return o.plan && o.time_budget_s <= 0 && o.deadline.none() ? kPlannedBudgetSeconds
                                                             : o.time_budget_s;
}

struct PlanShape {
  int ops = 0;                 // ops of the program
  int loop_reductions = 0;     // program reductions over the reduced index of largest extent
  int64_t loop_extent = 1;     // that index's extent (1: the program reduces nothing)
  // The most blocks a grid of max_grid_dims dims can have when each dim splits an index no
  // output sums over by a size of grid_sizes that divides it: the largest such, multiplied.
  int64_t parallel = 1;
  int block_ops() const { return ops + loop_reductions; }
};
// Precondition: `program` is valid and has predefined ops only.
PlanShape plan_shape(const ir::KernelGraph& program, int max_grid_dims,
                     const std::vector<int64_t>& grid_sizes = SearchOptions{}.grid_sizes);

struct Stage {
  std::string name;       // "up to 3 predefined kernel ops", "1 graph-defined kernel, 9 block ops, ..."
  SearchOptions options;  // plan off, no budget (the runner sets the deadline)
  double share = 1;       // the most of the time left this stage may use
  bool single_kernel = false;  // stage 2 or 3 (deepened when exhausted)
  bool split_from_best = false;  // stage 4: derived from the candidates found, not searched
  int planned_block_ops = 0;   // its block ops as planned (deepening stops 4 past them)
};

// The stages of `program`'s planned space, built from `base` (the caller's options).
std::vector<Stage> plan_stages(const ir::KernelGraph& program, const SearchOptions& base);
// The next level after an exhausted single-kernel stage, or none past the deepening limit.
std::optional<Stage> deeper(const Stage& s);

}  // namespace mugraph::search
