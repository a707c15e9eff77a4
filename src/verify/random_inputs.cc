#include "verify/random_inputs.h"

#include "verify/arith.h"

namespace mugraph::verify {

std::vector<HostTensor<double>> random_inputs(const ir::KernelGraph& g, Rng& rng) {
  std::vector<HostTensor<double>> out;
  for (ir::TensorId id : g.inputs) {
    HostTensor<double> t(g.tensor(id).type.shape, 0.0);
    for (double& x : t.data) x = rng.uniform(-1.0, 1.0);
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<HostTensor<double>> normal_inputs(const ir::KernelGraph& g, Rng& rng) {
  std::vector<HostTensor<double>> out;
  for (ir::TensorId id : g.inputs) {
    const ir::TensorType& type = g.tensor(id).type;
    HostTensor<double> t(type.shape, 0.0);
    for (double& x : t.data) x = round_to_storage(static_cast<float>(rng.normal()), type.dtype);
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace mugraph::verify
