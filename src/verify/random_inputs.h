// Seeded random inputs for running and comparing uGraphs, scaled like a model's: weights by
// 1/sqrt(fan-in), activations of order 1, unless the program (or --input-scale) says otherwise.
#pragma once

#include "ir/graph.h"
#include "support/rng.h"
#include "verify/host_tensor.h"

namespace mugraph::verify {

// The role of each input of `g` (in g.inputs order), read from the program graph: its fan-in
// (the size of the dimension a matmul contracts it along) when some matmul reads it as a
// weight, 0 when it is an activation. Which operand of a matmul a[..., m, k] x b[..., k, n]
// is the weight:
//   - b, the right operand, when b is an input (y = x W: every example's convention);
//   - a, the left operand, when a is an input and b is computed (W x: an input contracted
//     against an activation).
// An operand with one matrix per batch entry (a leading dim > 1: attention's K and V, one per
// head) is an activation, never a weight: weights are shared by the batch.
// "Is an input": the operand is a graph input itself or a repeat of one (kernel level); inside
// a graph-defined kernel, the block matmul's operand is an input iterator over an op input
// that is a graph input (tiles of it: the contracted dim keeps its index in the input).
// concat_matmul (W || X) x (Y || Z) counts as the two matmuls W Y and X Z. Fan-in is the
// contracted dim's size in the graph input (k for b[..., k, n], a's last dim for a). An input
// read as a weight by several matmuls takes the first one's fan-in (program order); any
// weight read makes it a weight.
// Why: with entries of order 1 in both operands, a matmul's entries grow as sqrt(k) (4096:
// 64), and in f16 a chain of them (x W1, then silu, then x W2) leaves the format's range
// (65504) where the model never does; 1/sqrt(fan-in) keeps every matmul's output of order 1.
std::vector<int64_t> weight_fan_in(const ir::KernelGraph& g);

// The scale of each input's random values: the program's own (KernelGraph::input_scales,
// text `scale=`, CLI --input-scale) where set, else 1/sqrt(fan-in) for a weight, else 1.
std::vector<double> input_scales(const ir::KernelGraph& g);

// One tensor per graph input, entries uniform in [-s, s) with s = scales[i] (default:
// input_scales(g)). Uniform rather than normal so that exp(Q K^T) over a 64-wide head dim
// stays far from float overflow in the examples. A check of two graphs draws both graphs'
// inputs with the reference's scales.
std::vector<HostTensor<double>> random_inputs(const ir::KernelGraph& g, Rng& rng);
std::vector<HostTensor<double>> random_inputs(const ir::KernelGraph& g, Rng& rng,
                                              const std::vector<double>& scales);
// One of them: U[-scale, scale) of `shape`, the next draws of `rng` (random_inputs draws its
// inputs this way, in order, so drawing them one by one gives the same values).
HostTensor<double> random_input(const ir::Shape& shape, double scale, Rng& rng);

// One tensor per graph input, entries normal with mean 0 and standard deviation
// input_scales(g)[i], rounded to the input's declared type (so a float64 and a float32 run of a
// half program see the same values).
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
