// The reference interpreter: executes any valid uGraph on the CPU by following the semantics in
// ir/graph.h literally (for every block, for every iteration: load tiles per imap/fmap, run the
// in-loop ops, accumulate; then the post-loop ops; save per omap). Generic over the number type
// T (see verify/arith.h); instantiated here for double and float, and by the finite-field
// verifier for its field type, so op semantics are written once (verify/eval_op.h).
#pragma once

#include <optional>
#include <vector>

#include "ir/graph.h"
#include "verify/eval_op.h"

namespace mugraph::verify {

template <class T>
using Tensors = std::vector<HostTensor<T>>;

// Runs `g` on `inputs` (in g.inputs order) and returns its outputs (in g.outputs order).
// Fails with a clear message if the inputs' count or shapes do not match the graph.
template <class T>
Result<Tensors<T>> interpret(const ir::KernelGraph& g, const Tensors<T>& inputs);

// Runs one block graph (a graph-defined op) on device tensors; returns its outputs.
template <class T>
Tensors<T> interpret_block(const ir::BlockGraph& bg, const std::vector<const HostTensor<T>*>& inputs);

namespace detail {

template <class T>
std::vector<const HostTensor<T>*> gather(const std::vector<std::optional<HostTensor<T>>>& v,
                                         const std::vector<ir::TensorId>& ids) {
  std::vector<const HostTensor<T>*> out;
  for (ir::TensorId id : ids) {
    const auto& t = v[static_cast<size_t>(id)];
    MG_CHECK(t.has_value(), "tensor #" << id << " read before it was computed");
    out.push_back(&*t);
  }
  return out;
}

// A thread graph is the composition of its element-wise ops.
template <class T>
Tensors<T> eval_thread(const ir::ThreadGraph& tg, const std::vector<const HostTensor<T>*>& in) {
  std::vector<std::optional<HostTensor<T>>> v(tg.tensors.size());
  for (size_t i = 0; i < in.size(); ++i) v[static_cast<size_t>(tg.inputs[i])] = *in[i];
  for (const ir::ThreadGraph::Node& n : tg.nodes)
    v[static_cast<size_t>(n.output)] =
        eval_op(n.op, n.attrs, gather(v, n.inputs), tg.tensors[static_cast<size_t>(n.output)].type.shape);
  Tensors<T> out;
  for (ir::TensorId id : tg.outputs) out.push_back(*v[static_cast<size_t>(id)]);
  return out;
}

// Runs a compute or thread-graph node, storing its outputs into `v`.
template <class T>
void eval_block_op(const ir::BlockGraph& bg, const ir::BlockNode& n,
                   std::vector<std::optional<HostTensor<T>>>& v) {
  if (n.kind == ir::BlockNodeKind::kCompute) {
    v[static_cast<size_t>(n.outputs[0])] =
        eval_op(n.op, n.attrs, gather(v, n.inputs), bg.tensors[static_cast<size_t>(n.outputs[0])].type.shape);
    return;
  }
  Tensors<T> outs = eval_thread(*n.thread, gather(v, n.inputs));
  for (size_t i = 0; i < outs.size(); ++i) v[static_cast<size_t>(n.outputs[i])] = std::move(outs[i]);
}

template <class T>
void run_one_block(const ir::BlockGraph& bg, const std::vector<const HostTensor<T>*>& inputs,
                   const std::array<int64_t, 3>& b, Tensors<T>& outputs) {
  using ir::BlockNodeKind;
  std::vector<std::optional<HostTensor<T>>> v(bg.tensors.size());
  // 1. This block's part of each input, per imap (replicated inputs are not copied).
  std::vector<std::optional<HostTensor<T>>> owned(inputs.size());
  std::vector<const HostTensor<T>*> block_in(inputs);
  for (const ir::BlockNode& n : bg.nodes) {
    if (n.kind != BlockNodeKind::kInputIterator) continue;
    const auto j = static_cast<size_t>(n.input_index);
    for (int g = 0; g < 3; ++g) {
      if (n.imap[g] == ir::kReplica) continue;
      owned[j] = take_chunk(*block_in[j], n.imap[g], b[static_cast<size_t>(g)], bg.grid[g]);
      block_in[j] = &*owned[j];
    }
  }
  // 2. The for-loop: iterators, in-loop ops, accumulators.
  for (int64_t it = 0; it < bg.forloop; ++it) {
    for (const ir::BlockNode& n : bg.nodes) {
      const auto out0 = n.outputs.empty() ? -1 : n.outputs[0];
      if (n.kind == BlockNodeKind::kInputIterator) {
        const HostTensor<T>& bin = *block_in[static_cast<size_t>(n.input_index)];
        v[static_cast<size_t>(out0)] = n.fmap == ir::kReplica ? bin : take_chunk(bin, n.fmap, it, bg.forloop);
      } else if (n.kind == BlockNodeKind::kAccumulator) {
        const HostTensor<T>& x = *v[static_cast<size_t>(n.inputs[0])];
        auto& acc = v[static_cast<size_t>(out0)];
        if (it == 0) acc = HostTensor<T>(bg.tensors[static_cast<size_t>(out0)].type.shape, Arith<T>::zero());
        if (n.fmap == ir::kReplica) {  // sum over iterations
          for (size_t i = 0; i < x.data.size(); ++i) acc->data[i] = acc->data[i] + x.data[i];
        } else {  // concatenate along fmap in iteration order
          std::array<int64_t, 4> off{};
          off[static_cast<size_t>(n.fmap)] = it * x.shape[n.fmap];
          write_tile(*acc, x, off);
        }
      } else if (n.kind != BlockNodeKind::kOutputSaver &&
                 bg.phases[static_cast<size_t>(out0)] == ir::Phase::kInLoop) {
        eval_block_op(bg, n, v);
      }
    }
  }
  // 3. Post-loop ops, then 4. output savers per omap.
  size_t saver = 0;
  for (const ir::BlockNode& n : bg.nodes) {
    if (n.kind == BlockNodeKind::kOutputSaver) {
      const HostTensor<T>& x = *v[static_cast<size_t>(n.inputs[0])];
      std::array<int64_t, 4> off{};
      for (int g = 0; g < 3; ++g)
        if (n.omap[g] != ir::kReplica) off[static_cast<size_t>(n.omap[g])] = b[static_cast<size_t>(g)] * x.shape[n.omap[g]];
      write_tile(outputs[saver++], x, off);
    } else if ((n.kind == BlockNodeKind::kCompute || n.kind == BlockNodeKind::kThreadGraph) &&
               bg.phases[static_cast<size_t>(n.outputs[0])] == ir::Phase::kPostLoop) {
      eval_block_op(bg, n, v);
    }
  }
}

}  // namespace detail

template <class T>
Tensors<T> interpret_block(const ir::BlockGraph& bg, const std::vector<const HostTensor<T>*>& inputs) {
  Tensors<T> outputs;
  for (const ir::TensorType& t : bg.output_types) outputs.emplace_back(t.shape, Arith<T>::zero());
  for (int64_t bz = 0; bz < bg.grid[2]; ++bz)
    for (int64_t by = 0; by < bg.grid[1]; ++by)
      for (int64_t bx = 0; bx < bg.grid[0]; ++bx)
        detail::run_one_block(bg, inputs, {bx, by, bz}, outputs);
  return outputs;
}

template <class T>
Result<Tensors<T>> interpret(const ir::KernelGraph& g, const Tensors<T>& inputs) {
  if (inputs.size() != g.inputs.size())
    return error("graph has ", g.inputs.size(), " inputs, ", inputs.size(), " given");
  std::vector<std::optional<HostTensor<T>>> v(g.tensors.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Tensor& t = g.tensor(g.inputs[i]);
    if (!(inputs[i].shape == t.type.shape) ||
        static_cast<int64_t>(inputs[i].data.size()) != t.type.shape.numel())
      return error("input '", t.name, "' expects shape ", t.type.shape.to_string(), ", given ",
                   inputs[i].shape.to_string());
    v[static_cast<size_t>(g.inputs[i])] = inputs[i];
  }
  for (const ir::KernelOp& op : g.ops) {
    const auto in = detail::gather(v, op.inputs);
    if (op.graph_defined) {
      Tensors<T> outs = interpret_block(*op.block, in);
      for (size_t i = 0; i < outs.size(); ++i) v[static_cast<size_t>(op.outputs[i])] = std::move(outs[i]);
    } else {
      v[static_cast<size_t>(op.outputs[0])] = eval_op(op.op, op.attrs, in, g.tensor(op.outputs[0]).type.shape);
    }
  }
  Tensors<T> out;
  for (ir::TensorId id : g.outputs) out.push_back(*v[static_cast<size_t>(id)]);
  return out;
}

extern template Result<Tensors<double>> interpret(const ir::KernelGraph&, const Tensors<double>&);
extern template Result<Tensors<float>> interpret(const ir::KernelGraph&, const Tensors<float>&);

}  // namespace mugraph::verify
