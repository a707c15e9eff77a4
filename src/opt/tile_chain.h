// A chain of two matmuls (MCFuser's memory-bound compute-intensive chains, seed 002: a batched
// GEMM chain E = (A B) D, attention softmax(Q K) V) lowered to one graph-defined kernel with
// given tile sizes. The tiling search (search/tiling.h) picks the tiles; every kernel it hands
// out is a plain uGraph, so the verifier, the code generators and the cost model take it as
// they take any other.
//
// The chain (find_chain) is a program of these ops, in any order that respects their inputs:
//   C = matmul(A, B)          A [b, M, K] or [M, K], B [b, K, N] or [K, N]: program inputs
//   pointwise tensors [.., M, N]: C, and element-wise ops whose inputs are pointwise tensors
//   row factors [.., M, 1]:   sum(P, dim=last, group=N) of a pointwise P, and element-wise ops
//                             whose inputs are row factors
//   Z = P, mul(P, F), mul(F, P) or div(P, F) for a pointwise P and a row factor F
//   E = matmul(Z, D)          D [b, N, H] or [N, H]: a program input
//   after E: unary element-wise ops, and mul/div of the result by a row factor (as above)
//   the last of these is the program's only output.
// (Softmax attention is such a chain: P = exp(scale(C)), F = sum(P), Z = div(P, F).)
//
// The kernel (tile_chain) for tiles tm | M, th | H, tn | N: grid (b, M/tm, H/th), for-loop
// N/tn. Per block and iteration:
//   a = the block's A rows [tm, K], fmap phi: loop-invariant, loaded once per block (MCFuser's
//       hoisting of L_A out of the k loop, whose extent is 1: the whole K is one tile)
//   b = B [K, tn] and d = D [tn, th], streamed along N
//   the pointwise ops on c = matmul(a, b); each row sum over the tile (group tn);
//   n = matmul(p, d) for E's pointwise operand p
// accumulators (phi) sum n and the row sums over the loop; after the loop, the row factors
// are computed from the summed rows, E = n * F or n / F (a row factor is constant along N, so
// (P F) D = (P D) F), then the ops after E, and the saver writes the [tm, th] tile.
// Errors name the op and the reason when a program is not such a chain, and the tile that does
// not divide its dim.
#pragma once

#include <cstdint>
#include <string>

#include "ir/graph.h"
#include "support/status.h"

namespace mugraph::opt {

// The chain's sizes: C = A B is [batch, m, n] with contraction k; E = C' D is [batch, m, h].
struct ChainDims {
  int64_t batch = 1;  // 1 when every operand is rank 2
  int64_t m = 0, n = 0, k = 0, h = 0;
  std::string to_string() const;  // "batch 8, M 512, N 512, K 64, H 64"
};

struct ChainInfo {
  ChainDims dims;
  bool softmax_like = false;  // has a row factor (attention's normalization)
  int elem_bytes = 2;         // bytes per element of A (the loaded tiles' type)
};

Result<ChainInfo> find_chain(const ir::KernelGraph& program);

struct ChainTiles {
  int64_t m = 0, h = 0, n = 0;  // tm, th, tn; the whole K is one tile
  std::string to_string() const;  // "tm 64, th 64, tn 128"
};

// Precondition: none (find_chain's errors are returned). The result has one graph-defined op.
Result<ir::KernelGraph> tile_chain(const ir::KernelGraph& program, const ChainTiles& tiles);

}  // namespace mugraph::opt
