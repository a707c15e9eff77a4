#include "ir/canonical.h"

#include <algorithm>

#include "support/hash.h"

namespace mugraph::ir {
namespace {

size_t mix_all(size_t h, std::initializer_list<size_t> vs) {
  for (size_t v : vs) h = hash_mix(h, v);
  return h;
}

size_t attrs_hash(const OpAttrs& a) {
  size_t h = mix_all(0, {static_cast<size_t>(a.dim), static_cast<size_t>(a.group),
                         static_cast<size_t>(a.times), static_cast<size_t>(a.factor.num),
                         static_cast<size_t>(a.factor.den), static_cast<size_t>(a.shape.rank)});
  for (int i = 0; i < a.shape.rank; ++i) h = hash_mix(h, static_cast<size_t>(a.shape[i]));
  h = hash_mix(h, static_cast<size_t>(a.perm.rank));
  for (int i = 0; i < a.perm.rank; ++i) h = hash_mix(h, static_cast<size_t>(a.perm[i]));
  return h;
}

size_t map_hash(const DimMap& m) {
  return mix_all(17, {static_cast<size_t>(m[0] + 2), static_cast<size_t>(m[1] + 2),
                      static_cast<size_t>(m[2] + 2)});
}

size_t type_hash(const TensorType& t) {
  size_t h = hash_mix(static_cast<size_t>(t.dtype), static_cast<size_t>(t.shape.rank));
  for (int i = 0; i < t.shape.rank; ++i)
    h = mix_all(h, {static_cast<size_t>(t.shape[i]), static_cast<size_t>(t.layout.strides[i])});
  return h;
}

size_t op_hash(OpKind op, const OpAttrs& attrs, std::vector<size_t> in) {
  if (op == OpKind::kAdd || op == OpKind::kMul) std::sort(in.begin(), in.end());
  size_t h = mix_all(0x51ed, {static_cast<size_t>(op), attrs_hash(attrs)});
  for (size_t v : in) h = hash_mix(h, v);
  return h;
}

std::vector<size_t> gather(const std::vector<size_t>& hs, const std::vector<TensorId>& ids) {
  std::vector<size_t> out;
  for (TensorId t : ids) out.push_back(hs[t]);
  return out;
}

std::vector<size_t> thread_hashes(const ThreadGraph& tg, const std::vector<size_t>& in) {
  std::vector<size_t> h(tg.tensors.size(), 0);
  for (size_t i = 0; i < tg.inputs.size(); ++i) h[tg.inputs[i]] = in[i];
  for (const auto& n : tg.nodes) h[n.output] = op_hash(n.op, n.attrs, gather(h, n.inputs));
  std::vector<size_t> out;
  for (TensorId t : tg.outputs) out.push_back(hash_mix(0x7777, h[t]));
  return out;
}

// Hashes of a block graph's saved outputs, given its inputs' hashes.
std::vector<size_t> block_hashes(const BlockGraph& bg, const std::vector<size_t>& in) {
  std::vector<size_t> h(bg.tensors.size(), 0);
  const size_t config = mix_all(0xb10c, {static_cast<size_t>(bg.grid[0]),
                                         static_cast<size_t>(bg.grid[1]),
                                         static_cast<size_t>(bg.grid[2]),
                                         static_cast<size_t>(bg.forloop)});
  std::vector<size_t> saved;
  for (const BlockNode& n : bg.nodes) {
    switch (n.kind) {
      case BlockNodeKind::kInputIterator:
        h[n.outputs[0]] = mix_all(config, {in[static_cast<size_t>(n.input_index)],
                                           map_hash(n.imap), static_cast<size_t>(n.fmap + 2)});
        break;
      case BlockNodeKind::kCompute:
        h[n.outputs[0]] = op_hash(n.op, n.attrs, gather(h, n.inputs));
        break;
      case BlockNodeKind::kThreadGraph: {
        const auto outs = thread_hashes(*n.thread, gather(h, n.inputs));
        for (size_t k = 0; k < outs.size(); ++k) h[n.outputs[k]] = outs[k];
        break;
      }
      case BlockNodeKind::kAccumulator:
        h[n.outputs[0]] = mix_all(0xacc, {h[n.inputs[0]], static_cast<size_t>(n.fmap + 2)});
        break;
      case BlockNodeKind::kOutputSaver:
        saved.push_back(mix_all(0x5a7e, {h[n.inputs[0]], map_hash(n.omap)}));
        break;
    }
  }
  return saved;
}

}  // namespace

uint64_t canonical_hash(const KernelGraph& g) {
  std::vector<size_t> h(g.tensors.size(), 0);
  for (size_t i = 0; i < g.inputs.size(); ++i)
    h[g.inputs[i]] = mix_all(0x1a9b7, {i, type_hash(g.tensor(g.inputs[i]).type)});
  for (const KernelOp& op : g.ops) {
    if (!op.graph_defined) {
      h[op.outputs[0]] = op_hash(op.op, op.attrs, gather(h, op.inputs));
      continue;
    }
    const auto outs = block_hashes(*op.block, gather(h, op.inputs));
    for (size_t k = 0; k < outs.size(); ++k) h[op.outputs[k]] = outs[k];
  }
  size_t out = 0xc0ffee;
  for (TensorId t : g.outputs) out = hash_mix(out, h[t]);
  return out;
}


}  // namespace mugraph::ir
