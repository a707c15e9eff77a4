// The enumerator of Algorithm 1 (Mirage §4.1): kernel graphs and the block graphs of their
// graph-defined ops, generated operator by operator in canonical order, with the checks of
// ConstructOp (lines 30-36) before each op: abstract-expression oracle, shapes, shared memory.
//
// CANONICAL ORDER. Each op has a rank (its input tensor indices sorted in decreasing order,
// then its type and attributes); ops are only added in strictly increasing rank. An op that
// consumes a tensor made by another has a larger first index, so every DAG has exactly one
// such order (built greedily, smallest ready rank first) and is generated once.
//
// BLOCK GRAPHS. For each input set, grid and for-loop range, one input iterator per input
// (tensor indices 0..n-1). An iterator's imap and fmap are chosen when an op first reads it,
// among the maps that fit the grid and range, so incompatible maps die at the first op instead
// of after a subtree; the rank is unaffected (iterator indices are fixed). Ops in the loop
// read iterators or in-loop tensors; accumulators (sum over iterations for fmap phi, concat
// along a dim otherwise) turn in-loop tensors into post-loop ones; post-loop ops read only
// post-loop tensors. A block graph is finished when every iterator is read, every grid dim of
// size > 1 partitions some input, a loop of range > 1 tiles some input, and every tensor is
// consumed except 1..max_block_outputs post-loop tensors, which get output savers (each omap
// maps the grid dims of size > 1 to distinct dims of the output).
//
// PRUNING, per new tensor, in this order: rank; shapes (ir::infer_type); index labels (below);
// shared memory (sum of all block tensors, as ir::shared_bytes); an existing tensor with the
// same abstract expression, type and phase (the op would recompute it); the oracle. A prefix
// also stops when the tensors it has not consumed can no longer be consumed within the op
// budget, when more than max_open_tensors block tensors are computed but unconsumed, or when
// some grid dim of size > 1 (or the loop) can no longer partition any input. In the block
// graph of the last kernel op (no later kernel to add up partial results) the grid never
// splits an index every program output sums over, and no op sums over an index the grid splits.
//
// INDEX LABELS. Every dim carries the class of the program index it ranges over (X[m, k],
// G[k], W[k, n]; the program's matmuls and broadcasts unify classes). Abstract expressions
// forget which dim an op works along; labels remember it: an op pairing two different indices,
// or summing over an index the program never sums over, is discarded; all inputs split by one
// grid dim (or tiled by the loop) must split the same index, and an omap writes grid dim g
// along the output dim carrying g's index (or a dim of size 1: the grid split it to one per
// block; or, before a later kernel, the canonical dim of partial sums, below).
//
// SEARCH-SPACE RULES (restrictions, documented so a user knows what is not explored):
//   - with a loop (range > 1), post-loop ops are element-wise (reductions belong in the loop);
//   - accumulators take computed tensors that vary with the loop: summed (fmap phi) when the
//     loop's index was reduced inside the tile, concatenated along the dim carrying it if not;
//   - ops the abstraction cannot see (scale, neg, sub) are placed only where the program has
//     one, up to axiom equivalence of the inputs, once per anchor and level;
//   - sums reduce a whole dim (group = extent);
//   - the last kernel op must read every program input not read yet, and a block graph that
//     is the last kernel op must save exactly the program's outputs (by expression);
//   - two graph-defined ops never read the same input set (their ranks would tie).
//   - when every program sum over an index has a non-multilinear operand (exp, div, square:
//     softmax's P[m, t] in sum_t P V), a candidate's sum over that index ranges over the same
//     indices as one of them (no regrouping; sums of multilinear operands may be regrouped,
//     X (A B) for (X A) B), see ProgramLabels::rigid_sums;
//   - the last kernel op reads every tensor left open except program outputs.
//
// PARTIAL SUMS (split-KV, FlashDecoding). In a block graph that is not the last kernel op, a
// grid dim may split an index the block sums over: each block then holds a partial sum, saved
// along the output's last dim not written by another grid dim (one part per block). The kernel
// tensor records, per dim, how many parts it concatenates. Partial sums are read only by a
// block graph whose loop runs over the parts (range = number of parts, one part per
// iteration, the grid not splitting that dim) and accumulates the input tile itself (fmap
// phi): the parts are added up, then post-loop ops finish (divide numerator by denominator).
//
// A kernel graph is complete when its unconsumed tensors match the program outputs one to
// one, by type and by abstract expression (Oracle::equals_output). Complete graphs are built
// with the ir builders (so they are valid uGraphs) and handed to the caller for verification.
//
// WORK SPLIT. The first kernel op (a predefined op, or a graph-defined op's input set, grid
// and range) defines a task; tasks are independent and deterministic, so the search can run
// them on any number of threads and merge the results in task order. When that op is the
// last and graph-defined, each choice of its block graph's first op is a task; a long task
// hands the rest of its block search, cut at any level, to threads with no task left
// (pieces, worker.h), and merges what they made in its own order.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "expr/oracle.h"
#include "ir/graph.h"
#include "search/options.h"
#include "search/task_pool.h"

namespace mugraph::search {

// The op kinds explored by default for `program`: those it uses, plus concat_matmul at kernel
// level when it has both matmul and add (Mirage Fig. 9b).
std::vector<ir::OpKind> default_ops(const ir::KernelGraph& program, bool kernel_level);

class Enumerator {
 public:
  // `oracle` is built for `program`'s output expressions in `pool`; with options.prune false
  // it is still used to recognise complete graphs, but never prunes.
  Enumerator(const ir::KernelGraph& program, const SearchOptions& options, expr::ExprPool& pool,
             expr::Oracle& oracle);
  ~Enumerator();

  int task_count() const;

  struct TaskOutput {
    std::vector<ir::KernelGraph> complete;  // in generation order
    SearchStats stats;                      // kernel/block states, prunes, completed
    bool finished = false;                  // false: stopped by should_stop
    // The deepest prefix the oracle kept (kernel ops before it + block ops of its graph) and
    // its last op's expression (null: none), for the "nothing found" diagnostics.
    int deepest = 0;
    expr::Expr deepest_expr = nullptr;
    double seconds = 0;  // enumeration time, summed over the pieces' runs (not the waits)
    int pieces = 0;      // pieces split off and merged (0: it ran as one)
  };
  // Runs one task. `should_stop(n)` is polled every few hundred states and after every new
  // oracle query, with n = the states generated since the last poll (from every thread
  // running a piece of the task; a piece's walk to its range counts too, so the state limit
  // may stop a little earlier with pieces). With `spare`, the task hands pieces of a split
  // block search to the pool's spare threads while they want work (PIECES OF A TASK in
  // worker.h) and merges them: the output is the same as without.
  TaskOutput run_task(int task, const std::function<bool(uint64_t)>& should_stop,
                      SpareThreads* spare = nullptr) const;

  // One line describing the configuration (ops, grids, ranges), for logs.
  std::string describe() const;

  // For tests: every answer the workers' block-op memo gives is recomputed and compared (a
  // difference fails an MG_CHECK), with tables of `slots` slots (a power of two: a small table
  // makes different keys share slots). Call before running tasks.
  void check_memo(size_t slots);

  struct Config;  // defined in worker.h (internal to src/search)

 private:
  std::unique_ptr<Config> cfg_;
};

}  // namespace mugraph::search
