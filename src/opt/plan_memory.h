// Shared-memory planning for one block graph (Mirage §6): an offset for every block tensor such
// that tensors live at the same time never overlap, reusing the space of dead tensors.
//
// Liveness is measured in the stages of a BlockSchedule (opt/schedule.h). A tensor is live from
// its producer's stage to its last reader's stage, inclusive (nodes of one stage run
// concurrently, so a stage's reads and writes must not share bytes), extended by the loop:
//   - a tile produced before the loop (fmap = phi) and read inside it stays live to the loop's
//     last stage (every iteration reads it);
//   - an accumulator's output is live from the loop's first stage (it is updated every
//     iteration) to its last reader;
//   - a tensor with copies = 2 (a double-buffered iterator tile: iteration i+1's tile is
//     fetched while iteration i computes) is live over the whole loop.
// Other in-loop tensors live within one iteration: the barrier at the end of an iteration
// separates them from the next iteration's.
//
// Placement: first fit in order of decreasing size (then index), which is optimal whenever it
// meets the lower bound max over stages of the live bytes; otherwise, for graphs of at most
// kExactLimit tensors, an exact minimum from Z3's optimizer (the ILP solver lives in opt/ only)
// bounded by a time limit, keeping first fit if the solver does not finish.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "opt/schedule.h"

namespace mugraph::opt {

struct TensorStorage {
  int64_t bytes = 0;  // one copy, before alignment
  int copies = 1;     // 2: double-buffered across loop iterations
};

struct MemoryPlan {
  std::vector<int64_t> offset;               // per block tensor, bytes, multiple of alignment
  std::vector<int64_t> size;                 // per block tensor, aligned bytes of all copies
  std::vector<std::pair<int, int>> live;     // per block tensor: [first, last] stage
  int64_t total_bytes = 0;                   // max over tensors of offset + size
  int64_t lower_bound = 0;                   // max over stages of the live bytes
  bool optimal = false;                      // total_bytes is the minimum for this liveness
};

inline constexpr int kExactLimit = 16;

// Preconditions: `s` is schedule_block(g); storage has one entry per block tensor; alignment is
// a positive power of two. Postconditions: tensors whose live ranges intersect occupy disjoint
// byte ranges; every offset is a multiple of `alignment`; lower_bound <= total_bytes, equal when
// `optimal` comes from first fit. Cost: O(n^2) first fit, plus a bounded solver call when n is
// at most kExactLimit and first fit misses the lower bound.
MemoryPlan plan_memory(const ir::BlockGraph& g, const BlockSchedule& s,
                       const std::vector<TensorStorage>& storage, int64_t alignment = 128);

// The placement step alone: offsets for tensors with the given live ranges ([first, last], -1
// for a tensor left out) and aligned sizes (multiples of alignment), over `stages` stages.
MemoryPlan pack_intervals(std::vector<std::pair<int, int>> live, std::vector<int64_t> size,
                          int stages, int64_t alignment);

// True iff the live ranges of tensors a and b intersect.
bool overlaps_in_time(const MemoryPlan& p, int a, int b);

}  // namespace mugraph::opt
