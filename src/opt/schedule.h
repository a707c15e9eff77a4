// Operator scheduling of a block graph by depth (Mirage §6): the block's threads run every node
// of one stage concurrently, and a __syncthreads() separates consecutive stages, so barriers are
// needed only between depths, not between every pair of ops.
//
// Regions, in execution order:
//   prologue  loop-invariant input iterators (fmap = phi): loaded once per block;
//   loop      the for-loop body, run R times: stage 0 is the loads (the streaming iterators'
//             copies, then the wait for them and, in the first iteration, for the prologue's),
//             each in-loop op sits one stage after the latest producer of its inputs, each
//             accumulator one stage after its input's producer; a prologue tile counts as
//             produced in loop stage 0: another thread's copies of it are visible only after
//             the barrier that ends stage 0 (there is one even when stage 0 holds no node);
//   epilogue  post-loop ops by the same depth rule (accumulator outputs ready at its start),
//             then all output savers together in a final stage (one pass of device writes).
// A barrier is implied between consecutive stages and at the end of each loop iteration (the
// next iteration's iterators overwrite the tiles the previous one read).
#pragma once

#include <vector>

#include "ir/graph.h"

namespace mugraph::opt {

enum class Region { kPrologue, kLoop, kEpilogue };

struct Stage {
  Region region = Region::kLoop;
  std::vector<int> nodes;  // indices into BlockGraph::nodes, ascending
};

struct BlockSchedule {
  std::vector<Stage> stages;    // in execution order; regions never interleave
  std::vector<int> stage_of;    // per node: index into `stages`
};

// Precondition: `g` is a valid block graph (ir::validate). Postconditions: every node is in
// exactly one stage; each node's inputs are produced in an earlier stage; within a region a
// non-saver node sits in the earliest stage its inputs allow; the streaming iterators, if any,
// form the first loop stage alone (no in-loop op reads a tile before stage 0's barrier).
// Cost: O(nodes + edges).
BlockSchedule schedule_block(const ir::BlockGraph& g);

}  // namespace mugraph::opt
