// The CPU per-op emit table: C++ loops for one operator over Operands (codegen/emitter.h).
// scalar_expr is the element-wise table (one case per op row, no default); emit_op dispatches on
// the op class. Values are f32 in registers; loads and stores convert through mg::ld / mg::st of
// the device library (runtime/cpu/mugraph_cpu.h), so any operand may be f16/bf16 storage.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "codegen/emitter.h"

namespace mugraph::codegen::cpu {

// The f32 C++ expression of element-wise op `k` on f32 expressions `args` (its arity).
std::string scalar_expr(ir::OpKind k, const ir::OpAttrs& a, const std::vector<std::string>& args);

// Loops over out.shape writing out = value(loads), where loads[i] is the f32 expression of
// in[i] at the loop index (broadcast). `parallel`: the loop nest is shared over all cores
// (kernel-level ops); inside a block it is serial (the grid is the parallel loop).
void emit_map(Writer& w, const Operand& out, const std::vector<Operand>& in, bool parallel,
              const std::function<std::string(const std::vector<std::string>&)>& value);

// Several outputs of one shape in one loop: body(loads) gives the statements of one element
// and the value of each output (codegen::thread_body).
void emit_fused(Writer& w, const std::vector<Operand>& outs, const std::vector<Operand>& in,
                const std::function<ThreadBody(const std::vector<std::string>&)>& body);

// out = in, converting storage and broadcasting.
void emit_copy(Writer& w, const Operand& in, const Operand& out, bool parallel);

// out = in[0] in[1] (matmul) or in[0] in[1] + in[2] in[3] (concat_matmul), batched.
// `accumulate` (a C++ bool expression, serial only): out += the product when it holds.
void emit_matmul(Writer& w, const std::vector<Operand>& in, const Operand& out, bool parallel,
                 const std::string& accumulate = "");

// out = op(in) for any operator of the table. Preconditions: the shapes are those ir::infer_type
// gives; `out` does not overlap an input.
void emit_op(Writer& w, ir::OpKind k, const ir::OpAttrs& a, const std::vector<Operand>& in,
             const Operand& out, bool parallel);

}  // namespace mugraph::codegen::cpu
