// The CUDA per-op emit table: device code for one operator over Operands (codegen/emitter.h).
// scalar_expr is the element-wise table (one case per op row, no default); emit_op dispatches on
// the op class. Values are f32 in registers; loads and stores convert through mg::ld / mg::st
// of the device library (runtime/device), so any operand may be f16/bf16 storage.
//
// Work distribution (`Loop`): inside a block graph the block's threads share the elements of a
// tile (threadIdx.x, stride blockDim.x) and the caller separates dependent ops with barriers;
// for a kernel-level (predefined) op the whole grid shares the elements (grid-stride loop).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "codegen/emitter.h"

namespace mugraph::codegen::cuda {

enum class Loop { kBlock, kGrid };

// The f32 CUDA expression of element-wise op `k` on f32 expressions `args` (its arity).
std::string scalar_expr(ir::OpKind k, const ir::OpAttrs& a, const std::vector<std::string>& args);

// out = value(loads) at every element of out.shape, loads[i] being in[i] at that index
// (broadcast).
void emit_map(Writer& w, const Operand& out, const std::vector<Operand>& in, Loop loop,
              const std::function<std::string(const std::vector<std::string>&)>& value);

// out = in, converting storage and broadcasting.
void emit_copy(Writer& w, const Operand& in, const Operand& out, Loop loop);

// A block-level matmul / concat_matmul (in: 2 or 4 operands) on shared-memory tiles through
// mg::matmul_tile, one call per batch element, into the f32 tile `out` (or an f16 one written
// once, no `accumulate`); `accumulate` (a C++ bool expression) adds to out's values instead of
// overwriting them. `block_threads`: the kernel's threads per block (mg::matmul_tile<N> picks
// its register-blocking group at compile time from them). With `register_accumulator` (the name
// of an mg::RegisterAccumulator<m, n, block_threads> the caller declared before its loop; one
// matmul, no batch dims other than 1s), the call is its add(): out is written only by the
// accumulator's store() after the loop.
void emit_matmul_tile(Writer& w, const std::vector<Operand>& in, const Operand& out,
                      const std::string& accumulate, int block_threads,
                      const std::string& register_accumulator = "");

// out = op(in) for any operator of the table. Preconditions: shapes as ir::infer_type gives;
// `out` does not overlap an input. Block-level matmuls write f32 outputs through
// mg::matmul_tile; grid-level ones are a plain dot product per output element (the generator
// prefers cuBLAS where it applies). `block_threads`: the kernel's threads per block (block-level
// matmuls only).
void emit_op(Writer& w, ir::OpKind k, const ir::OpAttrs& a, const std::vector<Operand>& in,
             const Operand& out, Loop loop, int block_threads = 0);

// How a kernel-level op (Loop::kGrid) distributes its work: `per_output` threads per output
// element (1, or a warp or a whole block for a long contiguous sum), and the dynamic shared
// memory each block needs (a block sum's 32 partial sums). The launch sizes the grid from it.
struct GridWork {
  int64_t per_output = 1;
  int64_t smem_bytes = 0;
};
GridWork grid_work(ir::OpKind k, const ir::OpAttrs& a, const std::vector<Operand>& in,
                   int block_threads);

}  // namespace mugraph::codegen::cuda
