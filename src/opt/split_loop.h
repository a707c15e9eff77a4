// Split-K of a looped kernel (FlashDecoding's split-KV, for any kernel whose loop sums): a
// graph-defined kernel that streams a dim through its for-loop and sums over it in
// accumulators becomes two graph-defined kernels.
//
//   1. The same block graph up to its accumulators, on a grid with one more dim of `splits`
//      blocks: that dim splits each streamed input's loop dim into `splits` parts (the loop
//      runs forloop / splits times over its part), and each block saves its partial
//      accumulators, concatenated over the new grid dim along a dim the other grid dims do
//      not write.
//   2. On the original grid, a loop of `splits` iterations reads one part of each partial per
//      iteration and accumulates it; then the original post-loop ops and savers.
//
// Sums are re-associated, nothing else: kernel 2's accumulators hold what the original
// kernel's held after its whole loop (post-loop ops read only accumulators: ops never mix
// phases). Loop-invariant inputs (fmap phi) are read whole by every split.
//
// Fails (with the reason) where the form does not apply: not one graph-defined kernel op, a
// loop range `splits` does not divide, no grid dim of size 1 left, an accumulator that
// concatenates (fmap not phi), a streamed dim the grid already splits, or a partial with no dim
// left for the new grid dim.
#pragma once

#include <cstdint>

#include "ir/graph.h"
#include "support/status.h"

namespace mugraph::opt {

Result<ir::KernelGraph> split_loop(const ir::KernelGraph& g, int64_t splits);

}  // namespace mugraph::opt
