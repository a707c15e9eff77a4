#include "verify/random_inputs.h"

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

}  // namespace mugraph::verify
