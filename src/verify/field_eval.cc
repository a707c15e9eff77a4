#include "verify/field_eval.h"

#include <algorithm>
#include <exception>
#include <optional>
#include <thread>

#include "verify/interpret.h"

namespace mugraph::verify {
namespace {

using ir::kReplica;

std::vector<int64_t> iota(int64_t lo, int64_t hi) {
  std::vector<int64_t> v;
  for (int64_t i = lo; i < hi; ++i) v.push_back(i);
  return v;
}

std::vector<int64_t> merge(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> out;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

void unite(std::optional<Box>& into, const Box& b) {
  if (!into) {
    into = b;
    return;
  }
  for (int d = 0; d < b.rank; ++d) into->idx[d] = merge(into->idx[d], b.idx[d]);
}

bool meets(const std::vector<int64_t>& v, int64_t lo, int64_t hi) {
  auto it = std::lower_bound(v.begin(), v.end(), lo);
  return it != v.end() && *it < hi;
}

// Maps `want`, a box of an op's output of shape `out`, onto an operand of shape `in` that is
// broadcast to it (right-aligned; size-1 dims read index 0). `skip` trailing dims are the
// caller's (matmul's M/K/N) and left empty.
Box broadcast_box(const Box& want, const ir::Shape& in, const ir::Shape& out, int skip) {
  Box b;
  b.rank = in.rank;
  for (int i = 0; i < in.rank - skip; ++i) {
    const int o = out.rank - skip - (in.rank - skip - i);
    b.idx[i] = in[i] == 1 ? std::vector<int64_t>{0} : want.idx[o];
  }
  return b;
}

// Matmul operand boxes: a[..., M, K] reads rows want[M], all of K; b[..., K, N] all K, cols want[N].
Box matmul_lhs(const Box& want, const ir::Shape& a, const ir::Shape& out) {
  Box b = broadcast_box(want, a, out, 2);
  b.idx[a.rank - 2] = want.idx[out.rank - 2];
  b.idx[a.rank - 1] = iota(0, a[a.rank - 1]);
  return b;
}
Box matmul_rhs(const Box& want, const ir::Shape& bs, const ir::Shape& out) {
  Box b = broadcast_box(want, bs, out, 2);
  b.idx[bs.rank - 2] = iota(0, bs[bs.rank - 2]);
  b.idx[bs.rank - 1] = want.idx[out.rank - 1];
  return b;
}

// What a predefined op computes when `want` of its output is demanded, and what it reads.
struct OpPlan {
  Box produced;
  std::vector<Box> inputs;
};

OpPlan plan_op(const ir::KernelGraph& g, const ir::KernelOp& op, const Box& want) {
  const ir::Shape& out = g.tensor(op.outputs[0]).type.shape;
  auto shape = [&](size_t i) -> const ir::Shape& { return g.tensor(op.inputs[i]).type.shape; };
  OpPlan p{want, {}};
  const int dim = op.attrs.dim;
  switch (ir::op_info(op.op).cls) {
    case ir::OpClass::kUnary: p.inputs = {want}; break;
    case ir::OpClass::kBinary:
      p.inputs = {broadcast_box(want, shape(0), out, 0), broadcast_box(want, shape(1), out, 0)};
      break;
    case ir::OpClass::kMatmul:
      p.inputs = {matmul_lhs(want, shape(0), out), matmul_rhs(want, shape(1), out)};
      break;
    case ir::OpClass::kConcatMatmul:
      p.inputs = {matmul_lhs(want, shape(0), out), matmul_lhs(want, shape(1), out),
                  matmul_rhs(want, shape(2), out), matmul_rhs(want, shape(3), out)};
      break;
    case ir::OpClass::kSum: {
      Box in = want;
      in.idx[dim].clear();
      for (int64_t j : want.idx[dim])
        for (int64_t t = 0; t < op.attrs.group; ++t) in.idx[dim].push_back(j * op.attrs.group + t);
      p.inputs = {in};
      break;
    }
    case ir::OpClass::kRepeat: {  // computed along the whole repeated dim
      p.produced.idx[dim] = iota(0, out[dim]);
      Box in = want;
      in.idx[dim] = iota(0, shape(0)[dim]);
      p.inputs = {in};
      break;
    }
    case ir::OpClass::kReshape:
      p.produced = full_box(out);
      p.inputs = {full_box(shape(0))};
      break;
    case ir::OpClass::kConcat: {  // each side contributes at least one index
      const int64_t na = shape(0)[dim];
      Box a = want, b = want;
      a.idx[dim].clear();
      b.idx[dim].clear();
      for (int64_t j : want.idx[dim]) (j < na ? a.idx[dim].push_back(j) : b.idx[dim].push_back(j - na));
      if (a.idx[dim].empty()) a.idx[dim] = {0};
      if (b.idx[dim].empty()) b.idx[dim] = {0};
      p.produced.idx[dim] = a.idx[dim];
      for (int64_t j : b.idx[dim]) p.produced.idx[dim].push_back(j + na);
      p.inputs = {a, b};
      break;
    }
  }
  return p;
}

// Block b's region of a tensor of shape `s` cut by `map` (grid dim -> tensor dim) into grid parts.
Box block_region(const ir::BlockGraph& bg, const ir::DimMap& map, const ir::Shape& s,
                 const std::array<int64_t, 3>& b) {
  Box r = full_box(s);
  for (int g = 0; g < 3; ++g)
    if (map[g] != kReplica) {
      const int64_t len = s[map[g]] / bg.grid[g];
      r.idx[map[g]] = iota(b[static_cast<size_t>(g)] * len, (b[static_cast<size_t>(g)] + 1) * len);
    }
  return r;
}

struct BlockPlan {
  std::vector<std::array<int64_t, 3>> blocks;  // the blocks to run
  std::vector<Box> produced;                   // per output
  std::vector<Box> inputs;                     // per input: union of the blocks' chunks
};

std::vector<const ir::BlockNode*> nodes_of(const ir::BlockGraph& bg, ir::BlockNodeKind kind) {
  std::vector<const ir::BlockNode*> v;
  for (const ir::BlockNode& n : bg.nodes)
    if (n.kind == kind) v.push_back(&n);
  return v;
}

BlockPlan plan_block(const ir::KernelOp& op,
                     const std::vector<std::optional<Box>>& demand) {
  const ir::BlockGraph& bg = *op.block;
  const auto savers = nodes_of(bg, ir::BlockNodeKind::kOutputSaver);
  const auto iters = nodes_of(bg, ir::BlockNodeKind::kInputIterator);
  BlockPlan p;
  std::vector<std::optional<Box>> prod(op.outputs.size()), ins(op.inputs.size());
  for (int64_t bz = 0; bz < bg.grid[2]; ++bz)
    for (int64_t by = 0; by < bg.grid[1]; ++by)
      for (int64_t bx = 0; bx < bg.grid[0]; ++bx) {
        const std::array<int64_t, 3> b{bx, by, bz};
        bool needed = false;
        for (size_t o = 0; o < savers.size() && !needed; ++o) {
          const auto& want = demand[static_cast<size_t>(op.outputs[o])];
          if (!want) continue;
          const ir::Shape& s = bg.output_types[o].shape;
          needed = true;
          for (int gd = 0; gd < 3; ++gd) {
            const int d = savers[o]->omap[gd];
            if (d == kReplica) continue;
            const int64_t len = s[d] / bg.grid[gd];
            needed = needed && meets(want->idx[d], b[static_cast<size_t>(gd)] * len,
                                     (b[static_cast<size_t>(gd)] + 1) * len);
          }
        }
        if (!needed) continue;
        p.blocks.push_back(b);
        for (size_t o = 0; o < savers.size(); ++o)
          unite(prod[o], block_region(bg, savers[o]->omap, bg.output_types[o].shape, b));
        for (const ir::BlockNode* it : iters)
          unite(ins[static_cast<size_t>(it->input_index)],
                block_region(bg, it->imap, bg.input_types[static_cast<size_t>(it->input_index)].shape, b));
      }
  for (auto& b : prod) p.produced.push_back(*b);
  for (auto& b : ins) p.inputs.push_back(*b);
  return p;
}

// Per-dim position of each global index in a box (-1 where absent).
std::array<std::vector<int64_t>, 4> positions(const Box& box, const ir::Shape& shape) {
  std::array<std::vector<int64_t>, 4> pos;
  for (int d = 0; d < box.rank; ++d) {
    pos[d].assign(static_cast<size_t>(shape[d]), -1);
    for (size_t i = 0; i < box.idx[d].size(); ++i) pos[d][static_cast<size_t>(box.idx[d][i])] = static_cast<int64_t>(i);
  }
  return pos;
}

// Calls f(compact offset in `box`, compact offset in the container box) for every entry of box.
template <class F>
void for_each_entry(const Box& box, const std::array<std::vector<int64_t>, 4>& pos,
                    const ir::Shape& container, F f) {
  const ir::Shape ext = box.extents();
  const int64_t n = ext.numel();
  const int last = box.rank - 1;
  for (int64_t r = 0; r < n / ext[last]; ++r) {
    int64_t rem = r, base = 0, stride = container[last];
    std::array<int64_t, 4> ix{};
    for (int d = last - 1; d >= 0; --d) ix[d] = rem % ext[d], rem /= ext[d];
    for (int d = last - 1; d >= 0; --d) {
      const int64_t pd = pos[d][static_cast<size_t>(box.idx[d][static_cast<size_t>(ix[d])])];
      MG_CHECK(pd >= 0, "box entry outside the computed box");
      base += pd * stride;
      stride *= container[d];
    }
    for (int64_t j = 0; j < ext[last]; ++j) {
      const int64_t pl = pos[last][static_cast<size_t>(box.idx[last][static_cast<size_t>(j)])];
      MG_CHECK(pl >= 0, "box entry outside the computed box");
      f(r * ext[last] + j, base + pl);
    }
  }
}

// Writes `tile` (the values of `region`) into dst.
void scatter(BoxTensor& dst, const Box& region, const HostTensor<FF>& tile) {
  const auto pos = positions(dst.box, dst.shape);
  for_each_entry(region, pos, dst.data.shape, [&](int64_t from, int64_t to) {
    dst.data.data[static_cast<size_t>(to)] = tile.data[static_cast<size_t>(from)];
  });
}

BoxTensor hashed_input(const ir::Shape& shape, const Box& box, uint64_t key, uint64_t stream) {
  BoxTensor t{shape, box, HostTensor<FF>(box.extents(), FF{})};
  const FieldParams& f = field_context().params;
  const ir::Shape ext = box.extents();
  for (int64_t c = 0; c < ext.numel(); ++c) {
    int64_t rem = c, lin = 0, stride = 1;
    for (int d = box.rank - 1; d >= 0; --d) {
      lin += box.idx[d][static_cast<size_t>(rem % ext[d])] * stride;
      rem /= ext[d];
      stride *= shape[d];
    }
    t.data.data[static_cast<size_t>(c)] = hashed_ff(f, key, stream, static_cast<uint64_t>(lin));
  }
  return t;
}

// The compact `want` part of src: src's own storage when it is exactly that box.
const HostTensor<FF>* view(const BoxTensor& src, const Box& want, std::vector<HostTensor<FF>>& keep) {
  if (src.box == want) return &src.data;
  keep.push_back(gather(src, want));
  return &keep.back();
}

// Runs blocks begin, begin + step, ... of the plan, writing their tiles into `outs`.
void run_blocks(const ir::KernelOp& op, const BlockPlan& plan,
                const std::vector<std::optional<BoxTensor>>& v, std::vector<BoxTensor>& outs,
                size_t begin, size_t step) {
  const ir::BlockGraph& bg = *op.block;
  const auto savers = nodes_of(bg, ir::BlockNodeKind::kOutputSaver);
  const auto iters = nodes_of(bg, ir::BlockNodeKind::kInputIterator);
  for (size_t k = begin; k < plan.blocks.size(); k += step) {
    const auto& b = plan.blocks[k];
    std::vector<HostTensor<FF>> chunks(op.inputs.size());
    for (const ir::BlockNode* it : iters) {
      const auto j = static_cast<size_t>(it->input_index);
      chunks[j] = gather(*v[static_cast<size_t>(op.inputs[j])],
                         block_region(bg, it->imap, bg.input_types[j].shape, b));
    }
    std::vector<const HostTensor<FF>*> ptrs;
    for (const auto& c : chunks) ptrs.push_back(&c);
    const Tensors<FF> tiles = detail::run_block_on_chunks(bg, ptrs);
    for (size_t o = 0; o < savers.size(); ++o)
      scatter(outs[o], block_region(bg, savers[o]->omap, bg.output_types[o].shape, b), tiles[o]);
  }
}

// Runs the plan's blocks, spread over the machine's cores: blocks write disjoint tiles, and each
// worker gets its own copy of the field context (its flags are merged back), so the result does
// not depend on the number of threads.
void run_graph_defined(const ir::KernelOp& op, const BlockPlan& plan,
                       std::vector<std::optional<BoxTensor>>& v, const ir::KernelGraph& g) {
  std::vector<BoxTensor> outs;
  for (size_t o = 0; o < op.outputs.size(); ++o)
    outs.push_back({g.tensor(op.outputs[o]).type.shape, plan.produced[o],
                    HostTensor<FF>(plan.produced[o].extents(), FF{})});
  const size_t n = std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), plan.blocks.size());
  FieldContext& parent = field_context();
  std::vector<FieldContext> ctx(n > 1 ? n - 1 : 0, parent);
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> workers;
  for (size_t t = 1; t < n; ++t)
    workers.emplace_back([&, t] {
      FieldScope scope(ctx[t - 1]);
      try {
        run_blocks(op, plan, v, outs, t, n);
      } catch (...) {
        errors[t] = std::current_exception();
      }
    });
  try {
    run_blocks(op, plan, v, outs, 0, std::max<size_t>(n, 1));
  } catch (...) {
    errors[0] = std::current_exception();
  }
  for (auto& w : workers) w.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  for (const FieldContext& c : ctx) {
    parent.zero_divisor = parent.zero_divisor || c.zero_divisor;
    if (parent.invalid.empty()) parent.invalid = c.invalid;
  }
  for (size_t o = 0; o < op.outputs.size(); ++o) v[static_cast<size_t>(op.outputs[o])] = std::move(outs[o]);
}

}  // namespace

int64_t Box::numel() const {
  int64_t n = 1;
  for (int d = 0; d < rank; ++d) n *= static_cast<int64_t>(idx[d].size());
  return n;
}

ir::Shape Box::extents() const {
  ir::Shape s;
  s.rank = rank;
  for (int d = 0; d < rank; ++d) s[d] = static_cast<int64_t>(idx[d].size());
  return s;
}

Box unite(const Box& a, const Box& b) {
  std::optional<Box> r = a;
  unite(r, b);
  return *r;
}

Box full_box(const ir::Shape& s) {
  Box b;
  b.rank = s.rank;
  for (int d = 0; d < s.rank; ++d) b.idx[d] = iota(0, s[d]);
  return b;
}

HostTensor<FF> gather(const BoxTensor& src, const Box& want) {
  HostTensor<FF> out(want.extents(), FF{});
  const auto pos = positions(src.box, src.shape);
  for_each_entry(want, pos, src.data.shape, [&](int64_t to, int64_t from) {
    out.data[static_cast<size_t>(to)] = src.data.data[static_cast<size_t>(from)];
  });
  return out;
}

std::vector<HostTensor<FF>> hashed_inputs(const ir::KernelGraph& g, uint64_t key) {
  std::vector<HostTensor<FF>> out;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const ir::Shape& s = g.tensor(g.inputs[i]).type.shape;
    out.push_back(hashed_input(s, full_box(s), key, i).data);
  }
  return out;
}

std::vector<BoxTensor> eval_field(const ir::KernelGraph& g, const std::vector<Box>& want,
                                  uint64_t key) {
  MG_CHECK(want.size() == g.outputs.size());
  // Backward: what each tensor must hold.
  std::vector<std::optional<Box>> demand(g.tensors.size());
  for (size_t i = 0; i < want.size(); ++i) unite(demand[static_cast<size_t>(g.outputs[i])], want[i]);
  std::vector<std::optional<OpPlan>> op_plans(g.ops.size());
  std::vector<std::optional<BlockPlan>> block_plans(g.ops.size());
  for (size_t k = g.ops.size(); k-- > 0;) {
    const ir::KernelOp& op = g.ops[k];
    bool any = false;
    for (ir::TensorId o : op.outputs) any = any || demand[static_cast<size_t>(o)].has_value();
    if (!any) continue;
    if (op.graph_defined) {
      block_plans[k] = plan_block(op, demand);
      for (size_t o = 0; o < op.outputs.size(); ++o) demand[static_cast<size_t>(op.outputs[o])] = block_plans[k]->produced[o];
      for (size_t j = 0; j < op.inputs.size(); ++j) unite(demand[static_cast<size_t>(op.inputs[j])], block_plans[k]->inputs[j]);
    } else {
      op_plans[k] = plan_op(g, op, *demand[static_cast<size_t>(op.outputs[0])]);
      demand[static_cast<size_t>(op.outputs[0])] = op_plans[k]->produced;
      for (size_t j = 0; j < op.inputs.size(); ++j) unite(demand[static_cast<size_t>(op.inputs[j])], op_plans[k]->inputs[j]);
    }
  }
  // Forward: inputs from the hash, then every needed op on its box.
  std::vector<std::optional<BoxTensor>> v(g.tensors.size());
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const auto id = static_cast<size_t>(g.inputs[i]);
    if (demand[id]) v[id] = hashed_input(g.tensors[id].type.shape, *demand[id], key, i);
  }
  for (size_t k = 0; k < g.ops.size(); ++k) {
    const ir::KernelOp& op = g.ops[k];
    if (block_plans[k]) {
      run_graph_defined(op, *block_plans[k], v, g);
    } else if (op_plans[k]) {
      std::vector<HostTensor<FF>> keep;
      keep.reserve(op.inputs.size());
      std::vector<const HostTensor<FF>*> in;
      for (size_t j = 0; j < op.inputs.size(); ++j)
        in.push_back(view(*v[static_cast<size_t>(op.inputs[j])], op_plans[k]->inputs[j], keep));
      const ir::Tensor& t = g.tensor(op.outputs[0]);
      v[static_cast<size_t>(op.outputs[0])] =
          BoxTensor{t.type.shape, op_plans[k]->produced, eval_op(op.op, op.attrs, in, op_plans[k]->produced.extents())};
    }
  }
  std::vector<BoxTensor> out;
  for (ir::TensorId id : g.outputs) out.push_back(*v[static_cast<size_t>(id)]);
  return out;
}

}  // namespace mugraph::verify
