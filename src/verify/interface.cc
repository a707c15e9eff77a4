#include "verify/interface.h"

namespace mugraph::verify {

Status check_same_interface(const ir::KernelGraph& a, const ir::KernelGraph& b) {
  MG_RETURN_IF_ERROR(check_same_inputs(a, b));
  if (a.outputs.size() != b.outputs.size())
    return error("the graphs have ", a.outputs.size(), " and ", b.outputs.size(), " outputs");
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    const ir::Tensor& x = a.tensor(a.outputs[i]);
    const ir::Tensor& y = b.tensor(b.outputs[i]);
    if (!(x.type.shape == y.type.shape))
      return error("output ", i, " differs in shape: '", x.name, "' ", x.type.shape.to_string(),
                   " vs '", y.name, "' ", y.type.shape.to_string());
  }
  return ok_status();
}

Status check_same_inputs(const ir::KernelGraph& a, const ir::KernelGraph& b) {
  if (a.inputs.size() != b.inputs.size())
    return error("the graphs have ", a.inputs.size(), " and ", b.inputs.size(), " inputs");
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    const ir::Tensor& x = a.tensor(a.inputs[i]);
    const ir::Tensor& y = b.tensor(b.inputs[i]);
    if (x.name != y.name || x.type.dtype != y.type.dtype || !(x.type.shape == y.type.shape))
      return error("input ", i, " differs: '", x.name, "' ", x.type.to_string(), " vs '", y.name,
                   "' ", y.type.to_string());
  }
  return ok_status();
}

Status check_output_shapes(const ir::KernelGraph& a, const ir::KernelGraph& b) {
  if (a.outputs.size() != b.outputs.size())
    return error("the graphs have ", a.outputs.size(), " and ", b.outputs.size(), " outputs");
  std::vector<bool> used(b.outputs.size(), false);
  for (ir::TensorId ia : a.outputs) {
    const ir::Tensor& x = a.tensor(ia);
    bool found = false;
    for (size_t j = 0; j < b.outputs.size() && !found; ++j)
      if (!used[j] && b.tensor(b.outputs[j]).type.shape == x.type.shape) used[j] = found = true;
    if (!found)
      return error("output '", x.name, "' ", x.type.shape.to_string(),
                   " has no output of that shape left in the other graph");
  }
  return ok_status();
}

}  // namespace mugraph::verify
