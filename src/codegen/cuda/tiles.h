// How the CUDA generator lays out and moves the tiles of a graph-defined kernel: threads per
// block, shared-memory row padding for tensor-core fragments, 16-byte row copies between device
// and shared memory, and the accumulator fragments a warp holds. Plain functions of shapes and
// strides (tests compare them with the device library, runtime/device, which this layer may not
// include).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "codegen/emitter.h"
#include "ir/graph.h"

namespace mugraph::codegen::cuda {

// Threads per block of a graph-defined kernel, by tile size: 4 warps, or 8 when the block's
// largest tile holds 4096 elements or more (a 64x64 matmul tile is 16 WMMA fragments: eight
// register-blocked 1x2 groups, one per warp; elementwise ops and row sums get 16 elements a
// thread either way). More warps hide the latency of shared-memory fragment loads and cp.async
// copies in a block that, with such tiles, often has an SM to itself.
int block_threads(const ir::BlockGraph& bg);

// Elements a tile in layout `l` spans (its last element's offset + 1).
int64_t extent(const ir::Shape& s, const ir::Layout& l);

// The layout of a shared-memory tile that tensor-core fragments load or store: WMMA's loads
// (ldmatrix) and stores touch 8 rows of 16 bytes at once, and rows a multiple of 128 bytes
// apart fall in the same 4 of the 32 banks (an 8-way conflict). When a row (the stride-1 dim)
// is an even number of 16-byte chunks, the pitch between rows grows by 16 bytes, which puts 8
// consecutive rows in 8 distinct bank groups; the dims above stay dense over the padded rows.
// Fragments stay 32-byte aligned where they were: 8 or 16 rows of the new pitch are a multiple
// of 128 bytes, and column offsets do not change (mg::plan_wmma checks every fragment and
// falls back to SIMT otherwise). Tiles of one row, or rows not made of whole 16-byte chunks,
// keep `l`.
ir::Layout pad_rows(const ir::Shape& s, const ir::Layout& l, int64_t elem_bytes);

// A tile copied as rows of 16-byte chunks (`vec` elements): the innermost dim `inner` is
// contiguous on both sides and a whole number of chunks, and row r is the element at `idx`
// (every index of the other dims, row-major, as expressions of r). `a`'s other strides are
// multiples of `vec` (its rows stay 16-byte aligned), and `b`'s too when `both_aligned`.
// Nothing when the tile does not copy so.
struct Rows {
  int64_t rows = 1;
  int inner = -1;
  std::vector<std::string> idx;
};
std::optional<Rows> rows_of(const ir::Shape& tile, const Operand& a, const Operand& b,
                            int64_t vec, bool both_aligned);

// The accumulator fragments each warp holds in a tile matmul over a tm x tn grid of 16x16 WMMA
// fragments at `warps` warps: its register-blocking group, as mg::wmma_group
// (runtime/device/mg_fragment.cuh) picks it (the largest of 2x4, 2x2, 1x2 that tiles the grid
// with a group for every warp, else 1x1), times the groups a warp gets. The generator keeps at
// most 8 of them per warp in registers across a loop (mg::RegisterAccumulator).
int wmma_fragments_per_warp(int tm, int tn, int warps);

}  // namespace mugraph::codegen::cuda
