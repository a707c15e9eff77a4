// HLO text import (issue 22): a whole model's graph as XLA prints it (JAX:
// jax.jit(f).lower(*args).compiler_ir("hlo").as_hlo_text()) turned into a kernel-level program.
//
// Instructions of the entry computation map to the op table: parameter -> an input; add,
// subtract, multiply, divide, negate, exponential, sqrt, rsqrt (reciprocal of sqrt), logistic
// (1 / (1 + exp(-x))), tanh ((1 - e) / (1 + e), e = exp(-2x)), maximum with 0 (relu), dot
// (batch and contracting dims: transposes and reshapes around a batched matmul), reduce with
// an add computation and a zero init (sums, then a reshape dropping the reduced dims), broadcast
// (numpy-style size-1 dims, materialized with repeat where an op needs the full shape), reshape,
// transpose, convert between equal types, call (inlined), tuple and get-tuple-element.
// Scalar constants fold into scale factors and reciprocals where they can; any other use (an
// epsilon added, silu's 1 + exp(-x)) becomes a one-element input named c0, c1, ... whose value
// `constants` records: the verifier then proves equivalence for every value of it, the
// interpreter binds the recorded one.
// jax.nn.softmax's max subtraction exp(x - max(x)) / sum(exp(x - max(x))) is imported as
// exp(x) / sum(exp(x)) (equal in exact arithmetic; mugraph's Lax softmax) only when the
// shifted exponentials feed nothing but that sum and that division; `notes` says where.
// Anything else (another opcode, a max reduction used otherwise, a non-scalar constant, a
// type change) is an error naming the source line, the instruction and the reason.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "support/status.h"

namespace mugraph::ir {

struct HloImport {
  KernelGraph graph;
  std::string text;                         // the program in mugraph's text form
  std::vector<std::string> parameters;      // the inputs standing for the entry's parameters, in order
  std::map<std::string, double> constants;  // inputs standing for HLO constants, and their values
  std::vector<std::string> notes;           // rewrites made on the way (softmax), one per line
};

// `source` names the text in errors ("model.hlo:12: dot.3: ...").
Result<HloImport> import_hlo(std::string_view text, const std::string& source = "<hlo>");

}  // namespace mugraph::ir
