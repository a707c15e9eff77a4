// Tensor layout selection for the shared-memory tensors of one block graph (Mirage §6), as a
// small 0-1 integer program solved exactly by Z3's optimizer (the ILP solver lives in opt/ only).
//
// Choices: a block tensor of rank >= 2 whose last two dims both exceed 1 is stored row-major (R)
// or with its last two dims swapped (T, i.e. column-major matrices); every other tensor is R.
// Costs, in bytes of shared-memory traffic weighted by how badly it is served:
//   - input iterator / output saver: copying a tile between device memory and shared memory is
//     coalesced and vectorizable (16-byte accesses) when both sides have the same innermost
//     (stride-1) dim: cost = tile bytes; otherwise every element is a separate strided access:
//     cost = kStridedPenalty * tile bytes;
//   - element-wise op / thread graph: an input of the output's rank stored with the other
//     choice is walked across banks: cost = input bytes * (kMismatchPenalty) when the two
//     choices differ, else 0;
//   - matmul operands and results: none (tensor-core fragments load and store either order),
//     sum / repeat / reshape / concat: none (the generator picks the access order from the
//     layout: a reduction over the stride-1 dim runs one warp per output, otherwise one thread
//     per output).
// The objective is the sum; the answer is a minimum (checked against brute force in tests).
#pragma once

#include <vector>

#include "ir/graph.h"

namespace mugraph::opt {

inline constexpr double kStridedPenalty = 4.0;
inline constexpr double kMismatchPenalty = 1.0;

struct LayoutPlan {
  std::vector<ir::Layout> layout;  // per block tensor, valid for its shape
  std::vector<bool> transposed;    // per block tensor: T chosen
  double cost = 0;
};

// True iff tensor `t` of `g` may be stored transposed.
bool layout_choosable(const ir::BlockGraph& g, ir::TensorId t);
// The objective above for a given choice (transposed[t] only for choosable tensors).
double layout_cost(const ir::BlockGraph& g, const std::vector<bool>& transposed);
// The layout of `s` with its last two dims swapped in memory.
ir::Layout transposed_layout(const ir::Shape& s);

// Precondition: `g` is a valid block graph. Postcondition: every layout is a dense layout of
// its tensor's shape; cost = layout_cost(g, transposed) is minimal over all choices.
LayoutPlan select_layouts(const ir::BlockGraph& g);

}  // namespace mugraph::opt
