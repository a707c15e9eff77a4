// Composite helpers: common subprograms built from table ops. They are not IR ops: a graph that
// uses them holds only the ops they expand to, named "<name>.<step>" (e.g. "Y.rms").
//   rms_norm(x, dim)   x / sqrt(sum(x^2 along dim) / n)      (no epsilon)
//   softmax(x, dim)    exp(x) / sum(exp(x) along dim)         (no max subtraction: the Lax form)
//   attention(q, k, v) softmax(q k, last dim) v, with k laid out as [..., d, n]
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/builder.h"

namespace mugraph::ir {

Result<TensorId> rms_norm(KernelBuilder& kb, TensorId x, int dim, const std::string& name);
Result<TensorId> softmax(KernelBuilder& kb, TensorId x, int dim, const std::string& name);
Result<TensorId> attention(KernelBuilder& kb, TensorId q, TensorId k, TensorId v,
                           const std::string& name);

// The composites the text format accepts: name, number of tensor inputs, whether it takes `dim`.
struct CompositeInfo {
  std::string_view name;
  int arity;
  bool takes_dim;
};
const std::vector<CompositeInfo>& composites();  // the table, in declaration order
std::optional<CompositeInfo> find_composite(std::string_view name);

// Expands composite `name` applied to `inputs` (dim ignored unless it takes one).
Result<TensorId> build_composite(KernelBuilder& kb, std::string_view composite,
                                 const std::vector<TensorId>& inputs, int dim,
                                 const std::string& name);

}  // namespace mugraph::ir
