#include "verify/random_inputs.h"

#include <cmath>

#include "support/deadline.h"
#include "verify/arith.h"

namespace mugraph::verify {
namespace {

constexpr int kNotInput = -1;

// Marks input `in` (an index into g.inputs, or kNotInput) as a weight of fan-in `k`, unless an
// earlier matmul already did.
void mark(std::vector<int64_t>& fan_in, int in, int64_t k) {
  if (in != kNotInput && fan_in[static_cast<size_t>(in)] == 0) fan_in[static_cast<size_t>(in)] = k;
}

// One matmul a x b, each operand given as the graph input it reads (kNotInput: computed):
// the rule of weight_fan_in.
void matmul_roles(const ir::KernelGraph& g, int a, int b, std::vector<int64_t>& fan_in) {
  auto shape = [&](int in) { return g.tensor(g.inputs[static_cast<size_t>(in)]).type.shape; };
  // One matrix per batch entry (attention's K and V per head) is an activation: a weight is
  // shared by the batch (2-D, or size-1 leading dims).
  auto batched = [&](int in) {
    const ir::Shape s = shape(in);
    for (int d = 0; d < s.rank - 2; ++d)
      if (s[d] > 1) return true;
    return false;
  };
  if (a != kNotInput && batched(a)) a = kNotInput;
  if (b != kNotInput && batched(b)) b = kNotInput;
  if (b != kNotInput) {
    const ir::Shape s = shape(b);
    mark(fan_in, b, s[s.rank - 2]);
  } else if (a != kNotInput) {
    const ir::Shape s = shape(a);
    mark(fan_in, a, s[s.rank - 1]);
  }
}

void operand_pairs(const ir::KernelGraph& g, ir::OpKind op, const std::vector<int>& ins,
                   std::vector<int64_t>& fan_in) {
  if (op == ir::OpKind::kMatmul) matmul_roles(g, ins[0], ins[1], fan_in);
  if (op == ir::OpKind::kConcatMatmul) {
    matmul_roles(g, ins[0], ins[2], fan_in);
    matmul_roles(g, ins[1], ins[3], fan_in);
  }
}

}  // namespace

std::vector<int64_t> weight_fan_in(const ir::KernelGraph& g) {
  std::vector<int64_t> fan_in(g.inputs.size(), 0);
  // Kernel tensor -> the graph input it is (or repeats), kNotInput for computed ones.
  std::vector<int> source(g.tensors.size(), kNotInput);
  for (size_t i = 0; i < g.inputs.size(); ++i)
    source[static_cast<size_t>(g.inputs[i])] = static_cast<int>(i);
  for (const ir::KernelOp& op : g.ops) {
    std::vector<int> ins;
    for (ir::TensorId t : op.inputs) ins.push_back(source[static_cast<size_t>(t)]);
    if (!op.graph_defined) {
      if (op.op == ir::OpKind::kRepeat) source[static_cast<size_t>(op.outputs[0])] = ins[0];
      operand_pairs(g, op.op, ins, fan_in);
      continue;
    }
    // Block tensor -> the graph input its iterator reads.
    const ir::BlockGraph& bg = *op.block;
    std::vector<int> block_source(bg.tensors.size(), kNotInput);
    for (const ir::BlockNode& n : bg.nodes) {
      if (n.kind == ir::BlockNodeKind::kInputIterator)
        block_source[static_cast<size_t>(n.outputs[0])] = ins[static_cast<size_t>(n.input_index)];
      if (n.kind != ir::BlockNodeKind::kCompute) continue;
      std::vector<int> block_ins;
      for (ir::TensorId t : n.inputs) block_ins.push_back(block_source[static_cast<size_t>(t)]);
      operand_pairs(g, n.op, block_ins, fan_in);
    }
  }
  return fan_in;
}

std::vector<double> input_scales(const ir::KernelGraph& g) {
  const std::vector<int64_t> fan_in = weight_fan_in(g);
  std::vector<double> s;
  for (size_t i = 0; i < g.inputs.size(); ++i)
    s.push_back(g.input_scale(i) > 0 ? g.input_scale(i)
                : fan_in[i] > 0      ? 1 / std::sqrt(static_cast<double>(fan_in[i]))
                                     : 1.0);
  return s;
}

std::vector<HostTensor<double>> random_inputs(const ir::KernelGraph& g, Rng& rng) {
  return random_inputs(g, rng, input_scales(g));
}

std::vector<HostTensor<double>> random_inputs(const ir::KernelGraph& g, Rng& rng,
                                              const std::vector<double>& scales) {
  MG_CHECK(scales.size() == g.inputs.size(), "random_inputs: " << scales.size() << " scales for "
                                                               << g.inputs.size() << " inputs");
  std::vector<HostTensor<double>> out;
  for (size_t i = 0; i < g.inputs.size(); ++i)
    out.push_back(random_input(g.tensor(g.inputs[i]).type.shape, scales[i], rng));
  return out;
}

HostTensor<double> random_input(const ir::Shape& shape, double scale, Rng& rng) {
  HostTensor<double> t(shape, 0.0);
  for (size_t k = 0; k < t.data.size(); ++k) {
    if ((k & 0xfffff) == 0) check_deadline();  // a weight matrix has 10^8 entries
    t.data[k] = scale * rng.uniform(-1.0, 1.0);
  }
  return t;
}

std::vector<HostTensor<double>> normal_inputs(const ir::KernelGraph& g, Rng& rng) {
  const std::vector<double> scales = input_scales(g);
  std::vector<HostTensor<double>> out;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const ir::TensorType& type = g.tensor(g.inputs[i]).type;
    HostTensor<double> t(type.shape, 0.0);
    for (size_t k = 0; k < t.data.size(); ++k) {
      if ((k & 0xfffff) == 0) check_deadline();
      t.data[k] = round_to_storage(static_cast<float>(scales[i] * rng.normal()), type.dtype);
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace mugraph::verify
