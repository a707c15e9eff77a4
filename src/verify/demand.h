// Demand planning of predefined ops, for the demand-driven evaluators (field_eval.cc): which
// entries of each operand an op reads when some entries of its output are wanted.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/ops.h"
#include "verify/field_eval.h"

namespace mugraph::verify::detail {

std::vector<int64_t> iota(int64_t lo, int64_t hi);  // lo, lo + 1, ..., hi - 1

// into |= b per dim (into empty: b).
void unite(std::optional<Box>& into, const Box& b);

// What a predefined op computes when `want` of its output is demanded, and what it reads.
struct OpPlan {
  Box produced;
  std::vector<Box> inputs;
};

// `operands` are the operands' shapes, `out` the result's.
OpPlan plan_op(ir::OpKind kind, const ir::OpAttrs& attrs, const std::vector<ir::Shape>& operands,
               const ir::Shape& out, const Box& want);

}  // namespace mugraph::verify::detail
