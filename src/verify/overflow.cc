#include "verify/overflow.h"

#include <cmath>

#include "verify/random_inputs.h"

namespace mugraph::verify {

std::string Overflow::message() const {
  return "the program itself overflows in " + precision + ": '" + tensor +
         "' is the first tensor (in program order) that is not finite";
}

namespace {

template <class T>
std::optional<Overflow> first_non_finite(const ir::KernelGraph& g, const Tensors<double>& inputs,
                                         bool float64) {
  std::optional<Overflow> first;
  auto seen = [&](ir::TensorId id, const HostTensor<T>& t) {
    if (first) return;
    for (T x : t.data)
      if (!std::isfinite(x)) {
        const ir::Tensor& bad = g.tensor(id);
        first = Overflow{bad.name,
                         float64 ? "float64" : std::string(ir::dtype_name(bad.type.dtype))};
        return;
      }
  };
  if (!interpret_observed(g, convert<T>(inputs), seen).ok()) return std::nullopt;
  return first;
}

}  // namespace

std::optional<Overflow> find_overflow(const ir::KernelGraph& g, const Tensors<double>& inputs,
                                      bool float64) {
  return float64 ? first_non_finite<double>(g, inputs, true)
                 : first_non_finite<float>(g, inputs, false);
}

}  // namespace mugraph::verify
