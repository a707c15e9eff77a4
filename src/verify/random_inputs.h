// Seeded random inputs for running and comparing uGraphs.
#pragma once

#include "ir/graph.h"
#include "support/rng.h"
#include "verify/host_tensor.h"

namespace mugraph::verify {

// One tensor per graph input, entries uniform in [-1, 1). Uniform rather than normal so that
// exp(Q K^T) over a 64-wide head dim stays far from float overflow in the examples.
std::vector<HostTensor<double>> random_inputs(const ir::KernelGraph& g, Rng& rng);

// One tensor per graph input, entries standard normal, rounded to the input's declared type
// (so a float64 and a float32 run of a half program see the same values).
std::vector<HostTensor<double>> normal_inputs(const ir::KernelGraph& g, Rng& rng);

// Element-wise conversion between number types.
template <class To, class From>
std::vector<HostTensor<To>> convert(const std::vector<HostTensor<From>>& in) {
  std::vector<HostTensor<To>> out;
  for (const auto& t : in) {
    HostTensor<To> c;
    c.shape = t.shape;
    c.data.assign(t.data.begin(), t.data.end());
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace mugraph::verify
