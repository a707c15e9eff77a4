// The reference interpreter: executes any valid uGraph on the CPU by following the semantics in
// ir/graph.h literally (for every block, for every iteration: load tiles per imap/fmap, run the
// in-loop ops, accumulate; then the post-loop ops; save per omap). Generic over the number type
// T (see verify/arith.h); instantiated here for double and float, and by the finite-field
// verifier for its field type, so op semantics are written once (verify/eval_op.h).
#pragma once

#include <algorithm>
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

// interpret(), calling seen(id, value) for every kernel tensor as it is stored: the inputs,
// then each op's outputs, in program order (what names the first tensor that overflows).
template <class T, class Seen>
Result<Tensors<T>> interpret_observed(const ir::KernelGraph& g, const Tensors<T>& inputs,
                                      Seen&& seen);

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

// Rounds a freshly stored tensor to its type (a no-op for exact number types).
template <class T>
void store(HostTensor<T>& t, ir::DType dt) {
  if constexpr (Arith<T>::kRoundsStorage)
    for (T& x : t.data) x = Arith<T>::store(x, dt);
}

// A thread graph is the composition of its element-wise ops (values stay in registers: only
// its outputs are stored, by the caller).
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
  auto put = [&](ir::TensorId id, HostTensor<T> t) {
    store(t, bg.tensors[static_cast<size_t>(id)].type.dtype);
    v[static_cast<size_t>(id)] = std::move(t);
  };
  if (n.kind == ir::BlockNodeKind::kCompute) {
    put(n.outputs[0], eval_op(n.op, n.attrs, gather(v, n.inputs),
                              bg.tensors[static_cast<size_t>(n.outputs[0])].type.shape));
    return;
  }
  Tensors<T> outs = eval_thread(*n.thread, gather(v, n.inputs));
  for (size_t i = 0; i < outs.size(); ++i) put(n.outputs[i], std::move(outs[i]));
}

// Adds (replica fmap) or writes (concatenating fmap) iteration `it`'s tile x into acc.
template <class T>
void accumulate(const ir::BlockGraph& bg, const ir::BlockNode& n, const HostTensor<T>& x,
                int64_t it, std::optional<HostTensor<T>>& acc) {
  const ir::TensorType& type = bg.tensors[static_cast<size_t>(n.outputs[0])].type;
  if (it == 0) acc = HostTensor<T>(type.shape, Arith<T>::zero());
  if (n.fmap == ir::kReplica) {  // sum over iterations
    for (size_t i = 0; i < x.data.size(); ++i) acc->data[i] = acc->data[i] + x.data[i];
    store(*acc, type.dtype);
  } else {  // concatenate along fmap in iteration order
    std::array<int64_t, 4> off{};
    off[static_cast<size_t>(n.fmap)] = it * x.shape[n.fmap];
    write_tile(*acc, x, off);
  }
}

// Runs one block on its own parts of the inputs (already cut per imap, in input order) and
// returns one tile per output saver: the for-loop (iterators, in-loop ops, accumulators), then
// the post-loop ops.
template <class T>
Tensors<T> run_block_on_chunks(const ir::BlockGraph& bg, const std::vector<const HostTensor<T>*>& chunks) {
  using ir::BlockNodeKind;
  std::vector<std::optional<HostTensor<T>>> v(bg.tensors.size());
  for (int64_t it = 0; it < bg.forloop; ++it) {
    for (const ir::BlockNode& n : bg.nodes) {
      const auto out0 = n.outputs.empty() ? -1 : n.outputs[0];
      if (n.kind == BlockNodeKind::kInputIterator) {
        const HostTensor<T>& bin = *chunks[static_cast<size_t>(n.input_index)];
        v[static_cast<size_t>(out0)] = n.fmap == ir::kReplica ? bin : take_chunk(bin, n.fmap, it, bg.forloop);
      } else if (n.kind == BlockNodeKind::kAccumulator) {
        accumulate(bg, n, *v[static_cast<size_t>(n.inputs[0])], it, v[static_cast<size_t>(out0)]);
      } else if (n.kind != BlockNodeKind::kOutputSaver &&
                 bg.phases[static_cast<size_t>(out0)] == ir::Phase::kInLoop) {
        eval_block_op(bg, n, v);
      }
    }
  }
  Tensors<T> tiles;
  for (const ir::BlockNode& n : bg.nodes) {
    if (n.kind == BlockNodeKind::kOutputSaver) {
      tiles.push_back(*v[static_cast<size_t>(n.inputs[0])]);
    } else if ((n.kind == BlockNodeKind::kCompute || n.kind == BlockNodeKind::kThreadGraph) &&
               bg.phases[static_cast<size_t>(n.outputs[0])] == ir::Phase::kPostLoop) {
      eval_block_op(bg, n, v);
    }
  }
  return tiles;
}

// Where block b's tile of saver `n` starts in its output (per omap).
inline std::array<int64_t, 4> saver_offset(const ir::BlockNode& n, const ir::Shape& tile,
                                           const std::array<int64_t, 3>& b) {
  std::array<int64_t, 4> off{};
  for (int g = 0; g < 3; ++g)
    if (n.omap[g] != ir::kReplica) off[static_cast<size_t>(n.omap[g])] = b[static_cast<size_t>(g)] * tile[n.omap[g]];
  return off;
}

// The part of input `j` that block b sees (per its iterator's imap).
template <class T>
HostTensor<T> block_chunk(const ir::BlockGraph& bg, const ir::BlockNode& iter, const HostTensor<T>& in,
                          const std::array<int64_t, 3>& b) {
  std::optional<HostTensor<T>> t;
  for (int g = 0; g < 3; ++g)
    if (iter.imap[g] != ir::kReplica)
      t = take_chunk(t ? *t : in, iter.imap[g], b[static_cast<size_t>(g)], bg.grid[g]);
  return t ? std::move(*t) : in;
}

template <class T>
void run_one_block(const ir::BlockGraph& bg, const std::vector<const HostTensor<T>*>& inputs,
                   const std::array<int64_t, 3>& b, Tensors<T>& outputs) {
  // This block's part of each input, per imap (replicated inputs are not copied).
  std::vector<std::optional<HostTensor<T>>> owned(inputs.size());
  std::vector<const HostTensor<T>*> chunks(inputs);
  for (const ir::BlockNode& n : bg.nodes) {
    if (n.kind != ir::BlockNodeKind::kInputIterator) continue;
    const auto j = static_cast<size_t>(n.input_index);
    if (n.imap[0] == ir::kReplica && n.imap[1] == ir::kReplica && n.imap[2] == ir::kReplica) continue;
    owned[j] = block_chunk(bg, n, *inputs[j], b);
    chunks[j] = &*owned[j];
  }
  Tensors<T> tiles = run_block_on_chunks(bg, chunks);
  size_t saver = 0;
  for (const ir::BlockNode& n : bg.nodes)
    if (n.kind == ir::BlockNodeKind::kOutputSaver) {
      HostTensor<T>& tile = tiles[saver];
      store(tile, bg.output_types[saver].dtype);
      write_tile(outputs[saver], tile, saver_offset(n, tile.shape, b));
      ++saver;
    }
}

}  // namespace detail

template <class T>
Tensors<T> interpret_block(const ir::BlockGraph& bg, const std::vector<const HostTensor<T>*>& inputs) {
  Tensors<T> outputs;
  for (const ir::TensorType& t : bg.output_types) outputs.emplace_back(t.shape, Arith<T>::zero());
  for (int64_t bz = 0; bz < bg.grid[2]; ++bz)
    for (int64_t by = 0; by < bg.grid[1]; ++by)
      for (int64_t bx = 0; bx < bg.grid[0]; ++bx) {
        check_deadline();
        detail::run_one_block(bg, inputs, {bx, by, bz}, outputs);
      }
  return outputs;
}

namespace detail {
// For each kernel tensor, the index of the last op that reads it (ops.size() for the graph's
// outputs and for tensors nobody reads: never released early). The evaluators drop a tensor
// after its last reader, so a long chain is evaluated in memory of its widest cut, not its
// length.
inline std::vector<size_t> last_uses(const ir::KernelGraph& g) {
  std::vector<size_t> last(g.tensors.size(), g.ops.size());
  std::vector<char> read(g.tensors.size(), 0);
  for (size_t k = 0; k < g.ops.size(); ++k)
    for (ir::TensorId id : g.ops[k].inputs) last[static_cast<size_t>(id)] = k, read[static_cast<size_t>(id)] = 1;
  for (size_t t = 0; t < last.size(); ++t)
    if (!read[t]) last[t] = g.ops.size();
  for (ir::TensorId id : g.outputs) last[static_cast<size_t>(id)] = g.ops.size();
  return last;
}

// The most entries an evaluation that drops each tensor after its last reader holds at once,
// where tensor t holds size(t) entries (memory estimates).
template <class Size>
int64_t live_peak(const ir::KernelGraph& g, Size size) {
  const std::vector<size_t> last = last_uses(g);
  int64_t live = 0;
  for (ir::TensorId id : g.inputs) live += size(id);
  int64_t peak = live;
  for (size_t k = 0; k < g.ops.size(); ++k) {
    const ir::KernelOp& op = g.ops[k];
    for (ir::TensorId id : op.outputs) live += size(id);
    peak = std::max(peak, live);
    std::vector<ir::TensorId> dropped;
    for (ir::TensorId id : op.inputs)
      if (last[static_cast<size_t>(id)] == k &&
          std::find(dropped.begin(), dropped.end(), id) == dropped.end()) {
        dropped.push_back(id);
        live -= size(id);
      }
  }
  return peak;
}
}  // namespace detail

template <class T>
Result<Tensors<T>> interpret(const ir::KernelGraph& g, const Tensors<T>& inputs) {
  return interpret_observed(g, inputs, [](ir::TensorId, const HostTensor<T>&) {});
}

template <class T, class Seen>
Result<Tensors<T>> interpret_observed(const ir::KernelGraph& g, const Tensors<T>& inputs,
                                      Seen&& seen) {
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
    seen(g.inputs[i], inputs[i]);
  }
  const std::vector<size_t> last = detail::last_uses(g);
  for (size_t k = 0; k < g.ops.size(); ++k) {
    check_deadline();
    const ir::KernelOp& op = g.ops[k];
    {
      const auto in = detail::gather(v, op.inputs);
      if (op.graph_defined) {
        Tensors<T> outs = interpret_block(*op.block, in);
        for (size_t i = 0; i < outs.size(); ++i) v[static_cast<size_t>(op.outputs[i])] = std::move(outs[i]);
      } else {
        const ir::TensorType& type = g.tensor(op.outputs[0]).type;
        HostTensor<T> t = eval_op(op.op, op.attrs, in, type.shape);
        detail::store(t, type.dtype);
        v[static_cast<size_t>(op.outputs[0])] = std::move(t);
      }
      for (ir::TensorId id : op.outputs) seen(id, *v[static_cast<size_t>(id)]);
    }
    for (ir::TensorId id : op.inputs)
      if (last[static_cast<size_t>(id)] == k) v[static_cast<size_t>(id)].reset();
  }
  Tensors<T> out;
  for (ir::TensorId id : g.outputs) out.push_back(*v[static_cast<size_t>(id)]);
  return out;
}

extern template Result<Tensors<double>> interpret(const ir::KernelGraph&, const Tensors<double>&);
extern template Result<Tensors<float>> interpret(const ir::KernelGraph&, const Tensors<float>&);

}  // namespace mugraph::verify
