#include "verify/field_eval.h"

#include <algorithm>
#include <exception>
#include <optional>
#include <thread>

#include "support/deadline.h"
#include "support/memory.h"
#include "verify/demand.h"
#include "verify/interpret.h"

namespace mugraph::verify {
namespace {

using ir::kReplica;

using detail::iota;
using detail::OpPlan;
using detail::plan_op;
using detail::unite;

// Calls f(compact offset in `box`, compact offset in `container`, n) for runs of n entries that
// are consecutive in both, covering every entry of box, which must lie in container (both boxes
// of the same tensor). Each index of box is located in container's sorted list once per dim (by
// subtraction when that list is a contiguous range). A row whose last-dim indices sit
// consecutively in container is one run (a tile of a whole tensor: gather and scatter copy
// it at once; entry by entry they took a quarter of a search's every-entry test).
template <class F> void for_each_run(const Box& box, const Box& container, F f) {
  std::array<std::vector<int64_t>, 4> pos;  // per dim: where box's j-th index sits in container
  for (int d = 0; d < box.rank; ++d) {
    const auto& have = container.idx[d];
    pos[d].reserve(box.idx[d].size());
    const bool range =
        !have.empty() && have.back() - have.front() + 1 == static_cast<int64_t>(have.size());
    for (int64_t i : box.idx[d]) {
      int64_t at = -1;
      if (range) {
        at = i - have.front();
        if (at >= static_cast<int64_t>(have.size()))
          at = -1;
      } else {
        const auto it = std::lower_bound(have.begin(), have.end(), i);
        if (it != have.end() && *it == i)
          at = it - have.begin();
      }
      MG_CHECK(at >= 0, "box entry outside the computed box");
      pos[d].push_back(at);
    }
  }
  const ir::Shape ext = box.extents(), cext = container.extents();
  const int64_t n = ext.numel();
  if (n == 0)
    return;
  const int last = box.rank - 1;
  const std::vector<int64_t>& lp = pos[last];
  bool consecutive = true;
  for (size_t j = 1; j < lp.size() && consecutive; ++j) consecutive = lp[j] == lp[j - 1] + 1;
  for (int64_t r = 0; r < n / ext[last]; ++r) {
    if ((r & 0xff) == 0) check_deadline();  // per 256 rows: copies of model-size tensors
    int64_t rem = r, base = 0, stride = cext[last];
    std::array<int64_t, 4> ix{};
    for (int d = last - 1; d >= 0; --d)
      ix[d] = rem % ext[d], rem /= ext[d];
    for (int d = last - 1; d >= 0; --d) {
      base += pos[d][static_cast<size_t>(ix[d])] * stride;
      stride *= cext[d];
    }
    if (consecutive) {
      f(r * ext[last], base + lp[0], ext[last]);
      continue;
    }
    for (int64_t j = 0; j < ext[last]; ++j)
      f(r * ext[last] + j, base + lp[static_cast<size_t>(j)], 1);
  }
}

// Writes `tile` (the values of `region`) into dst.
template <class T>
void scatter(BoxTensorT<T>& dst, const Box& region, const HostTensor<T>& tile) {
  for_each_run(region, dst.box, [&](int64_t from, int64_t to, int64_t n) {
    std::copy_n(tile.data.begin() + from, n, dst.data.data.begin() + to);
  });
}

BoxTensor hashed_input(const ir::Shape& shape, const Box& box, uint64_t key, uint64_t stream) {
  BoxTensor t{shape, box, HostTensor<FF>(box.extents(), FF{})};
  const FieldParams& f = field_context().params;
  const ir::Shape ext = box.extents();
  const uint64_t sh = hashed_stream(key, stream);
  if (box.rank == 0) {
    t.data.data[0] = hashed_ff_at(f, sh, 0);
    return t;
  }
  // Row by row along the last dim (no division per entry): the row's offset in the whole
  // tensor from its outer indices, then the last dim's indices.
  const int last = box.rank - 1;
  const int64_t row_len = ext[last], rows = ext.numel() / std::max<int64_t>(row_len, 1);
  const std::vector<int64_t>& cols = box.idx[last];
  for (int64_t r = 0; r < rows && row_len > 0; ++r) {
    if ((r & 0xff) == 0) check_deadline();  // a weight matrix has 10^8 entries
    int64_t rem = r, base = 0, stride = shape[last];
    for (int d = last - 1; d >= 0; --d) {
      base += box.idx[d][static_cast<size_t>(rem % ext[d])] * stride;
      rem /= ext[d];
      stride *= shape[d];
    }
    FF* out = t.data.data.data() + r * row_len;
    for (int64_t j = 0; j < row_len; ++j) {
      if ((j & 0xfffff) == 0xfffff) check_deadline();
      out[j] = hashed_ff_at(f, sh, static_cast<uint64_t>(base + cols[static_cast<size_t>(j)]));
    }
  }
  return t;
}

int64_t& input_memo_hits_here() {
  thread_local int64_t hits = 0;
  return hits;
}

// hashed_input through a per-thread memo of the last kMemoSlots tensors it made (at most
// kMemoEntries values in all, and at most 1/128 of the memory budget: with 16 threads the memos
// hold at most 1/8 of it; a larger tensor is not kept). A search screens every candidate with
// the same draw (one key, one field), and the candidates' demanded boxes of an input mostly
// repeat: a copy of the kept tensor replaces hashing every entry again (QKNorm's screens spent
// ~12% of their time in hashed_input). The values are a function of (p, q, key, stream, shape,
// box) alone, all compared here, so a kept tensor is the one hashed_input would make. (Certify
// draws a new key per test, so there the memo only costs a copy per input.)
BoxTensor memo_hashed_input(const ir::Shape& shape, const Box& box, uint64_t key, uint64_t stream) {
  constexpr size_t kMemoSlots = 8;
  const int64_t kMemoEntries =  // 48 MiB of FF values per thread at most
      std::min<int64_t>(int64_t{1} << 21, memory_budget() / 128 / static_cast<int64_t>(sizeof(FF)));
  struct Kept {
    uint64_t p, q, key, stream, used;
    BoxTensor t;
  };
  thread_local std::vector<Kept> kept;
  thread_local uint64_t clock = 0;
  thread_local int64_t& hits = input_memo_hits_here();
  const FieldParams& f = field_context().params;
  for (Kept& k : kept)
    if (k.p == f.p && k.q == f.q && k.key == key && k.stream == stream && k.t.shape == shape &&
        k.t.box == box) {
      k.used = ++clock;
      ++hits;
      return k.t;
    }
  BoxTensor t = hashed_input(shape, box, key, stream);
  const int64_t n = static_cast<int64_t>(t.data.data.size());
  if (n > kMemoEntries) return t;
  auto total = [&] {
    int64_t s = 0;
    for (const Kept& k : kept) s += static_cast<int64_t>(k.t.data.data.size());
    return s;
  };
  while (!kept.empty() && (kept.size() >= kMemoSlots || total() + n > kMemoEntries)) {
    auto lru = std::min_element(kept.begin(), kept.end(),
                                [](const Kept& a, const Kept& b) { return a.used < b.used; });
    kept.erase(lru);
  }
  kept.push_back({f.p, f.q, key, stream, ++clock, t});
  return t;
}

// The compact `want` part of src: src's own storage when it is exactly that box.
template <class T>
const HostTensor<T>* view(const BoxTensorT<T>& src, const Box& want,
                          std::vector<HostTensor<T>>& keep) {
  if (src.box == want)
    return &src.data;
  keep.push_back(gather(src, want));
  return &keep.back();
}

// ---- Graph-defined kernels: every needed block computes only the demanded entries of its tiles.

template <class T>
using Values = std::vector<std::optional<BoxTensorT<T>>>;
// Kernel-level values: shared, so that an input can be a FullInputs tensor that every candidate
// of a search's every-entry test reads (never written through).
template <class T>
using KernelValues = std::vector<std::shared_ptr<BoxTensorT<T>>>;

// Computes a planned op from its operands' values (compacted to what the plan reads); `v`: a
// block's Values or a kernel's KernelValues.
template <class V>
auto eval_planned(ir::OpKind op, const ir::OpAttrs& attrs, const OpPlan& plan,
                  const std::vector<ir::TensorId>& inputs, const ir::Shape& out, const V& v) {
  using T = typename std::decay_t<decltype(v[0]->data.data)>::value_type;
  std::vector<HostTensor<T>> keep;
  keep.reserve(inputs.size());
  std::vector<const HostTensor<T>*> in;
  for (size_t j = 0; j < inputs.size(); ++j)
    in.push_back(view(*v[static_cast<size_t>(inputs[j])], plan.inputs[j], keep));
  return BoxTensorT<T>{out, plan.produced, eval_op(op, attrs, in, plan.produced.extents())};
}

// Plans an op node whose output is demanded: widens that demand to what the op produces and adds
// what it reads to its operands' demands.
OpPlan plan_node(ir::OpKind op, const ir::OpAttrs& attrs, const std::vector<ir::TensorId>& inputs,
                 ir::TensorId output, const std::vector<ir::Tensor>& tensors,
                 std::vector<std::optional<Box>>& box) {
  std::vector<ir::Shape> shapes;
  for (ir::TensorId id : inputs)
    shapes.push_back(tensors[static_cast<size_t>(id)].type.shape);
  OpPlan p = plan_op(op, attrs, shapes, tensors[static_cast<size_t>(output)].type.shape,
                     *box[static_cast<size_t>(output)]);
  box[static_cast<size_t>(output)] = p.produced;
  for (size_t j = 0; j < inputs.size(); ++j)
    unite(box[static_cast<size_t>(inputs[j])], p.inputs[j]);
  return p;
}

// Where block b's tile of a tensor of shape `s` cut by `map` (grid dim -> tensor dim) starts.
std::array<int64_t, 4> block_offset(const ir::BlockGraph& bg, const ir::DimMap& map,
                                    const ir::Shape& s, const std::array<int64_t, 3>& b) {
  std::array<int64_t, 4> off{};
  for (int g = 0; g < 3; ++g)
    if (map[g] != kReplica)
      off[static_cast<size_t>(map[g])] = b[static_cast<size_t>(g)] * (s[map[g]] / bg.grid[g]);
  return off;
}

Box shifted(Box box, const std::array<int64_t, 4>& off) {
  for (int d = 0; d < box.rank; ++d)
    for (int64_t& i : box.idx[d])
      i += off[static_cast<size_t>(d)];
  return box;
}

// The entries of `global` in the tile of shape `tile` at `off`, in tile coordinates; nullopt if
// none.
std::optional<Box> localized(const Box& global, const std::array<int64_t, 4>& off,
                             const ir::Shape& tile) {
  Box r;
  r.rank = global.rank;
  for (int d = 0; d < r.rank; ++d) {
    const int64_t lo = off[static_cast<size_t>(d)];
    for (int64_t i : global.idx[d])
      if (i >= lo && i < lo + tile[d])
        r.idx[d].push_back(i - lo);
    if (r.idx[d].empty())
      return std::nullopt;
  }
  return r;
}

// Demands in a block or thread graph (tile coordinates) and the plans of its demanded op nodes.
struct Demands {
  std::vector<std::optional<Box>> box;      // per tensor
  std::vector<std::optional<OpPlan>> plan;  // per node
};

// What one block computes. One box per tensor for all iterations (their union): in-loop tensors
// are computed on the same entries every iteration.
struct BlockDemand {
  std::array<int64_t, 3> block{};
  Demands tiles;
  std::vector<Demands> threads;           // per block node; thread-graph nodes only
  std::vector<std::optional<Box>> saved;  // per output saver: the tile entries it saves
  std::vector<int64_t> iterations;        // the loop iterations that contribute to them
};

std::vector<const ir::BlockNode*> nodes_of(const ir::BlockGraph& bg, ir::BlockNodeKind kind) {
  std::vector<const ir::BlockNode*> v;
  for (const ir::BlockNode& n : bg.nodes)
    if (n.kind == kind)
      v.push_back(&n);
  return v;
}

void plan_thread_graph(const ir::BlockNode& n, std::vector<std::optional<Box>>& tiles,
                       Demands& td) {
  const ir::ThreadGraph& tg = *n.thread;
  td.box.assign(tg.tensors.size(), std::nullopt);
  td.plan.assign(tg.nodes.size(), std::nullopt);
  for (size_t i = 0; i < tg.outputs.size(); ++i)
    if (const auto& want = tiles[static_cast<size_t>(n.outputs[i])])
      unite(td.box[static_cast<size_t>(tg.outputs[i])], *want);
  for (size_t j = tg.nodes.size(); j-- > 0;) {
    const ir::ThreadGraph::Node& tn = tg.nodes[j];
    if (td.box[static_cast<size_t>(tn.output)])
      td.plan[j] = plan_node(tn.op, tn.attrs, tn.inputs, tn.output, tg.tensors, td.box);
  }
  for (size_t i = 0; i < tg.inputs.size(); ++i)
    if (const auto& want = td.box[static_cast<size_t>(tg.inputs[i])])
      unite(tiles[static_cast<size_t>(n.inputs[i])], *want);
}

// The iterations whose values reach a demanded accumulator: all of them when one adds its
// input up (or none accumulates), else those that write a demanded part of a concatenating one.
std::vector<int64_t> needed_iterations(const ir::BlockGraph& bg,
                                       const std::vector<std::optional<Box>>& box) {
  std::vector<char> need(static_cast<size_t>(bg.forloop), 0);
  bool any = false;
  for (const ir::BlockNode& n : bg.nodes) {
    if (n.kind != ir::BlockNodeKind::kAccumulator || !box[static_cast<size_t>(n.outputs[0])])
      continue;
    any = true;
    if (n.fmap == kReplica) {
      std::fill(need.begin(), need.end(), 1);
      break;
    }
    const int64_t len = bg.tensors[static_cast<size_t>(n.inputs[0])].type.shape[n.fmap];
    for (int64_t i : box[static_cast<size_t>(n.outputs[0])]->idx[n.fmap])
      need[static_cast<size_t>(i / len)] = 1;
  }
  std::vector<int64_t> its;
  for (int64_t it = 0; it < bg.forloop; ++it)
    if (!any || need[static_cast<size_t>(it)])
      its.push_back(it);
  return its;
}

// Block b's demands, from the demanded entries `out` of each output (global coordinates);
// nullopt when the block saves none of them.
std::optional<BlockDemand> plan_one_block(const ir::BlockGraph& bg,
                                          const std::vector<std::optional<Box>>& out,
                                          const std::array<int64_t, 3>& b) {
  // Most blocks of a sampled screen save none of the demanded entries: found without
  // allocating (a grid has up to thousands of blocks).
  bool meets = false;
  for (size_t o = 0; o < bg.savers.size() && !meets; ++o) {
    if (!out[o])
      continue;
    const ir::BlockNode& saver = bg.nodes[static_cast<size_t>(bg.savers[o])];
    const std::array<int64_t, 4> off = block_offset(bg, saver.omap, bg.output_types[o].shape, b);
    const ir::Shape& tile = bg.tensors[static_cast<size_t>(saver.inputs[0])].type.shape;
    bool all = true;
    for (int dim = 0; dim < out[o]->rank && all; ++dim) {
      const auto& v = out[o]->idx[dim];
      const int64_t lo = off[static_cast<size_t>(dim)];
      const auto it = std::lower_bound(v.begin(), v.end(), lo);
      all = it != v.end() && *it < lo + tile[dim];
    }
    meets = all;
  }
  if (!meets)
    return std::nullopt;
  BlockDemand d;
  d.block = b;
  d.tiles.box.resize(bg.tensors.size());
  d.tiles.plan.resize(bg.nodes.size());
  d.threads.resize(bg.nodes.size());
  d.saved.resize(bg.savers.size());
  bool any = false;
  for (size_t o = 0; o < bg.savers.size(); ++o) {
    if (!out[o])
      continue;
    const ir::BlockNode& saver = bg.nodes[static_cast<size_t>(bg.savers[o])];
    const auto t = static_cast<size_t>(saver.inputs[0]);
    d.saved[o] = localized(*out[o], block_offset(bg, saver.omap, bg.output_types[o].shape, b),
                           bg.tensors[t].type.shape);
    if (!d.saved[o])
      continue;
    unite(d.tiles.box[t], *d.saved[o]);
    any = true;
  }
  if (!any)
    return std::nullopt;
  auto& box = d.tiles.box;
  for (size_t k = bg.nodes.size(); k-- > 0;) {
    const ir::BlockNode& n = bg.nodes[k];
    // A node is needed when any of its outputs is demanded (a thread graph may have several,
    // its first one undemanded).
    if (std::none_of(n.outputs.begin(), n.outputs.end(),
                     [&](ir::TensorId t) { return box[static_cast<size_t>(t)].has_value(); }))
      continue;
    switch (n.kind) {
    case ir::BlockNodeKind::kInputIterator:
    case ir::BlockNodeKind::kOutputSaver:
      break;
    case ir::BlockNodeKind::kCompute:
      d.tiles.plan[k] = plan_node(n.op, n.attrs, n.inputs, n.outputs[0], bg.tensors, box);
      break;
    case ir::BlockNodeKind::kThreadGraph:
      plan_thread_graph(n, box, d.threads[k]);
      break;
    case ir::BlockNodeKind::kAccumulator: {  // a concatenating one reads index i % len per
                                             // iteration
      Box x = *box[static_cast<size_t>(n.outputs[0])];
      if (n.fmap != kReplica) {
        const int64_t len = bg.tensors[static_cast<size_t>(n.inputs[0])].type.shape[n.fmap];
        auto& v = x.idx[n.fmap];
        for (int64_t& i : v)
          i %= len;
        std::sort(v.begin(), v.end());
        v.erase(std::unique(v.begin(), v.end()), v.end());
      }
      unite(box[static_cast<size_t>(n.inputs[0])], x);
      break;
    }
    }
  }
  d.iterations = needed_iterations(bg, box);
  return d;
}

// Where iteration `it` of block b reads the tile of iterator n (per imap and fmap).
std::array<int64_t, 4> iterator_offset(const ir::BlockGraph& bg, const ir::BlockNode& n,
                                       const std::array<int64_t, 3>& b, int64_t it) {
  std::array<int64_t, 4> off =
      block_offset(bg, n.imap, bg.input_types[static_cast<size_t>(n.input_index)].shape, b);
  if (n.fmap != kReplica)
    off[static_cast<size_t>(n.fmap)] +=
        it * bg.tensors[static_cast<size_t>(n.outputs[0])].type.shape[n.fmap];
  return off;
}

struct BlockPlan {
  std::vector<BlockDemand> blocks;         // the blocks to run
  std::vector<Box> produced;               // per output (no entries when not demanded)
  std::vector<std::optional<Box>> inputs;  // per input: what the blocks read over all iterations
};

BlockPlan plan_block(const ir::KernelOp& op, const std::vector<std::optional<Box>>& demand) {
  const ir::BlockGraph& bg = *op.block;
  const auto iters = nodes_of(bg, ir::BlockNodeKind::kInputIterator);
  BlockPlan p;
  p.inputs.resize(op.inputs.size());
  std::vector<std::optional<Box>> out;
  for (ir::TensorId id : op.outputs)
    out.push_back(demand[static_cast<size_t>(id)]);
  // Per input, each dim's indices over all blocks and iterations, marked in one flag per index
  // (uniting tile by tile re-merged the growing lists: quadratic in the loop's range).
  std::vector<std::optional<std::array<std::vector<char>, 4>>> read(op.inputs.size());
  for (int64_t bz = 0; bz < bg.grid[2]; ++bz)
    for (int64_t by = 0; by < bg.grid[1]; ++by)
      for (int64_t bx = 0; bx < bg.grid[0]; ++bx) {
        std::optional<BlockDemand> d = plan_one_block(bg, out, {bx, by, bz});
        if (!d)
          continue;
        for (const ir::BlockNode* n : iters) {
          const auto& tile = d->tiles.box[static_cast<size_t>(n->outputs[0])];
          if (!tile)
            continue;
          const ir::Shape& in = bg.input_types[static_cast<size_t>(n->input_index)].shape;
          auto& r = read[static_cast<size_t>(n->input_index)];
          if (!r) {
            r.emplace();
            for (int dim = 0; dim < in.rank; ++dim)
              (*r)[static_cast<size_t>(dim)].assign(static_cast<size_t>(in[dim]), 0);
          }
          for (int64_t it : d->iterations) {
            const std::array<int64_t, 4> off = iterator_offset(bg, *n, d->block, it);
            for (int dim = 0; dim < tile->rank; ++dim) {
              auto& marks = (*r)[static_cast<size_t>(dim)];
              for (int64_t i : tile->idx[dim]) {
                const auto at = static_cast<size_t>(i + off[static_cast<size_t>(dim)]);
                MG_CHECK(at < marks.size(), "block " << d->block[0] << " reads index " << at
                                                     << " of an input dim of " << marks.size());
                marks[at] = 1;
              }
            }
            if (n->fmap == kReplica)
              break;  // the same tile every iteration
          }
        }
        p.blocks.push_back(std::move(*d));
      }
  for (size_t j = 0; j < read.size(); ++j) {
    if (!read[j])
      continue;
    const ir::Shape& in = bg.input_types[j].shape;
    Box b;
    b.rank = in.rank;
    for (int dim = 0; dim < in.rank; ++dim) {
      const auto& marked = (*read[j])[static_cast<size_t>(dim)];
      for (size_t i = 0; i < marked.size(); ++i)
        if (marked[i]) b.idx[dim].push_back(static_cast<int64_t>(i));
    }
    p.inputs[j] = std::move(b);
  }
  for (size_t o = 0; o < out.size(); ++o) {
    Box none;
    none.rank = bg.output_types[o].shape.rank;
    p.produced.push_back(out[o] ? *out[o] : none);
  }
  return p;
}

// Runs a compute or thread-graph node of block demand d on the values `v`.
template <class T>
void eval_block_node(const ir::BlockGraph& bg, const BlockDemand& d, size_t k, Values<T>& v) {
  const ir::BlockNode& n = bg.nodes[k];
  if (n.kind == ir::BlockNodeKind::kCompute) {
    if (d.tiles.plan[k])
      v[static_cast<size_t>(n.outputs[0])] =
          eval_planned(n.op, n.attrs, *d.tiles.plan[k], n.inputs,
                       bg.tensors[static_cast<size_t>(n.outputs[0])].type.shape, v);
    return;
  }
  const ir::ThreadGraph& tg = *n.thread;
  const Demands& td = d.threads[k];
  if (td.box.empty())  // none of its outputs is demanded
    return;
  Values<T> tv(tg.tensors.size());
  for (size_t i = 0; i < tg.inputs.size(); ++i)
    if (td.box[static_cast<size_t>(tg.inputs[i])])
      tv[static_cast<size_t>(tg.inputs[i])] = v[static_cast<size_t>(n.inputs[i])];
  for (size_t j = 0; j < tg.nodes.size(); ++j) {
    const ir::ThreadGraph::Node& tn = tg.nodes[j];
    if (td.plan[j])
      tv[static_cast<size_t>(tn.output)] =
          eval_planned(tn.op, tn.attrs, *td.plan[j], tn.inputs,
                       tg.tensors[static_cast<size_t>(tn.output)].type.shape, tv);
  }
  for (size_t i = 0; i < tg.outputs.size(); ++i)
    if (d.tiles.box[static_cast<size_t>(n.outputs[i])])
      v[static_cast<size_t>(n.outputs[i])] = tv[static_cast<size_t>(tg.outputs[i])];
}

// Adds (replica fmap) or writes (concatenating fmap) iteration it's demanded entries of x into acc.
template <class T>
void accumulate_demanded(const ir::BlockNode& n, const BoxTensorT<T>& x, int64_t it,
                         BoxTensorT<T>& acc) {
  if (n.fmap == kReplica) {
    std::vector<HostTensor<T>> keep;
    const HostTensor<T>& xs = *view(x, acc.box, keep);
    for (size_t i = 0; i < xs.data.size(); ++i)
      add_into(acc.data.data[i], xs.data[i]);
    return;
  }
  const int f = n.fmap;
  const int64_t len = x.shape[f];
  Box part = acc.box;  // the entries this iteration writes
  part.idx[f].clear();
  for (int64_t i : acc.box.idx[f])
    if (i >= it * len && i < (it + 1) * len)
      part.idx[f].push_back(i);
  if (part.idx[f].empty())
    return;
  std::array<int64_t, 4> back{};
  back[static_cast<size_t>(f)] = -it * len;
  scatter(acc, part, gather(x, shifted(part, back)));
}

// Runs one block on the demanded entries of its tiles: the for-loop (iterators, in-loop ops,
// accumulators), then the post-loop ops; writes the saved entries into `outs`.
template <class T>
void run_block(const ir::KernelOp& op, const BlockDemand& d, const KernelValues<T>& kernel_values,
               std::vector<BoxTensorT<T>>& outs) {
  using ir::BlockNodeKind;
  const ir::BlockGraph& bg = *op.block;
  Values<T> v(bg.tensors.size());
  auto in_loop = [&](const ir::BlockNode& n) {
    return bg.phases[static_cast<size_t>(n.outputs[0])] == ir::Phase::kInLoop;
  };
  // In-loop values that do not depend on the iteration (no iterator with an fmap upstream) are
  // the same every time: computed in iteration 0 and kept.
  std::vector<char> varies(bg.tensors.size(), 0);
  for (const ir::BlockNode& n : bg.nodes) {
    bool any = n.kind == BlockNodeKind::kInputIterator && n.fmap != kReplica;
    for (ir::TensorId i : n.inputs)
      any = any || varies[static_cast<size_t>(i)];
    for (ir::TensorId o : n.outputs)
      varies[static_cast<size_t>(o)] = any;
  }
  for (const ir::BlockNode& n : bg.nodes) {
    const auto out = n.outputs.empty() ? size_t{0} : static_cast<size_t>(n.outputs[0]);
    if (n.kind == BlockNodeKind::kAccumulator && d.tiles.box[out])
      v[out] = BoxTensorT<T>{bg.tensors[out].type.shape, *d.tiles.box[out],
                             HostTensor<T>(d.tiles.box[out]->extents(), Arith<T>::zero())};
  }
  for (int64_t it : d.iterations)
    for (size_t k = 0; k < bg.nodes.size(); ++k) {
      const ir::BlockNode& n = bg.nodes[k];
      if (n.kind == BlockNodeKind::kOutputSaver)
        continue;
      const auto out = static_cast<size_t>(n.outputs[0]);
      if (it != d.iterations.front() && n.kind != BlockNodeKind::kAccumulator && !varies[out])
        continue;
      if (n.kind == BlockNodeKind::kInputIterator) {
        if (!d.tiles.box[out])
          continue;
        const BoxTensorT<T>& src =
            *kernel_values[static_cast<size_t>(op.inputs[static_cast<size_t>(n.input_index)])];
        v[out] =
            BoxTensorT<T>{bg.tensors[out].type.shape, *d.tiles.box[out],
                      gather(src, shifted(*d.tiles.box[out], iterator_offset(bg, n, d.block, it)))};
      } else if (n.kind == BlockNodeKind::kAccumulator) {
        if (d.tiles.box[out])
          accumulate_demanded(n, *v[static_cast<size_t>(n.inputs[0])], it, *v[out]);
      } else if (in_loop(n)) {
        eval_block_node(bg, d, k, v);
      }
    }
  for (const ir::BlockNode& n : bg.nodes)  // sums accumulated in place are complete
    if (n.kind == BlockNodeKind::kAccumulator && v[static_cast<size_t>(n.outputs[0])])
      for (T& x : v[static_cast<size_t>(n.outputs[0])]->data.data) finish_sum(x);
  for (size_t k = 0; k < bg.nodes.size(); ++k) {
    const ir::BlockNode& n = bg.nodes[k];
    if ((n.kind == BlockNodeKind::kCompute || n.kind == BlockNodeKind::kThreadGraph) && !in_loop(n))
      eval_block_node(bg, d, k, v);
  }
  for (size_t o = 0; o < outs.size(); ++o) {
    const ir::BlockNode& saver = bg.nodes[static_cast<size_t>(bg.savers[o])];
    if (!d.saved[o])
      continue;
    scatter(outs[o],
            shifted(*d.saved[o], block_offset(bg, saver.omap, bg.output_types[o].shape, d.block)),
            gather(*v[static_cast<size_t>(saver.inputs[0])], *d.saved[o]));
  }
}

// Runs blocks begin, begin + step, ... of the plan, writing their entries into `outs`.
template <class T>
void run_blocks(const ir::KernelOp& op, const BlockPlan& plan, const KernelValues<T>& v,
                std::vector<BoxTensorT<T>>& outs, size_t begin, size_t step) {
  for (size_t k = begin; k < plan.blocks.size(); k += step) {
    check_deadline();
    run_block(op, plan.blocks[k], v, outs);
  }
}

// Runs the plan's blocks, spread over `threads` threads (0: all cores): blocks write disjoint
// tiles, and each worker gets its own copy of the field context (its flags are merged back), so the
// result does not depend on the number of threads.
template <class T>
void run_graph_defined(const ir::KernelOp& op, const BlockPlan& plan, KernelValues<T>& v,
                       const ir::KernelGraph& g, int threads) {
  std::vector<BoxTensorT<T>> outs;
  for (size_t o = 0; o < op.outputs.size(); ++o)
    outs.push_back({g.tensor(op.outputs[o]).type.shape, plan.produced[o],
                    HostTensor<T>(plan.produced[o].extents(), Arith<T>::zero())});
  const size_t n = std::min<size_t>(threads > 0 ? static_cast<size_t>(threads)
                                                : std::max(1u, std::thread::hardware_concurrency()),
                                    plan.blocks.size());
  parallel_in_field(n, [&](size_t t) { run_blocks(op, plan, v, outs, t, std::max<size_t>(n, 1)); });
  for (size_t o = 0; o < op.outputs.size(); ++o)
    v[static_cast<size_t>(op.outputs[o])] = std::make_shared<BoxTensorT<T>>(std::move(outs[o]));
}

}  // namespace

template <class T>
HostTensor<T> gather(const BoxTensorT<T>& src, const Box& want) {
  HostTensor<T> out(want.extents(), Arith<T>::zero());
  for_each_run(want, src.box, [&](int64_t to, int64_t from, int64_t n) {
    std::copy_n(src.data.data.begin() + from, n, out.data.begin() + to);
  });
  return out;
}
template HostTensor<FF> gather(const BoxTensorT<FF>&, const Box&);
template HostTensor<GR> gather(const BoxTensorT<GR>&, const Box&);

std::vector<HostTensor<FF>> hashed_inputs(const ir::KernelGraph& g, uint64_t key) {
  std::vector<HostTensor<FF>> out;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const ir::Shape& s = g.tensor(g.inputs[i]).type.shape;
    out.push_back(hashed_input(s, full_box(s), key, i).data);
  }
  return out;
}

namespace {

// What a demand-driven evaluation computes: each tensor's box, each op's plan.
struct DemandPlan {
  std::vector<std::optional<Box>> demand;  // per tensor
  std::vector<std::optional<OpPlan>> op_plans;
  std::vector<std::optional<BlockPlan>> block_plans;
};

// Backward from `want`: what each tensor must hold.
DemandPlan plan_demand(const ir::KernelGraph& g, const std::vector<std::optional<Box>>& want) {
  MG_CHECK(want.size() == g.outputs.size());
  DemandPlan dp;
  dp.demand.resize(g.tensors.size());
  dp.op_plans.resize(g.ops.size());
  dp.block_plans.resize(g.ops.size());
  auto& demand = dp.demand;
  auto& op_plans = dp.op_plans;
  auto& block_plans = dp.block_plans;
  for (size_t i = 0; i < want.size(); ++i)
    if (want[i]) unite(demand[static_cast<size_t>(g.outputs[i])], *want[i]);
  for (size_t k = g.ops.size(); k-- > 0;) {
    const ir::KernelOp& op = g.ops[k];
    bool any = false;
    for (ir::TensorId o : op.outputs)
      any = any || demand[static_cast<size_t>(o)].has_value();
    if (!any)
      continue;
    if (op.graph_defined) {
      block_plans[k] = plan_block(op, demand);
      for (size_t o = 0; o < op.outputs.size(); ++o)
        demand[static_cast<size_t>(op.outputs[o])] = block_plans[k]->produced[o];
      for (size_t j = 0; j < op.inputs.size(); ++j)
        if (const auto& in = block_plans[k]->inputs[j])
          unite(demand[static_cast<size_t>(op.inputs[j])], *in);
    } else {
      std::vector<ir::Shape> shapes;
      for (ir::TensorId id : op.inputs)
        shapes.push_back(g.tensor(id).type.shape);
      op_plans[k] = plan_op(op.op, op.attrs, shapes, g.tensor(op.outputs[0]).type.shape,
                            *demand[static_cast<size_t>(op.outputs[0])]);
      demand[static_cast<size_t>(op.outputs[0])] = op_plans[k]->produced;
      for (size_t j = 0; j < op.inputs.size(); ++j)
        unite(demand[static_cast<size_t>(op.inputs[j])], op_plans[k]->inputs[j]);
    }
  }
  return dp;
}

// eval_field and eval_group_ring: `input(i, box)` materializes input i on `box` (a shared
// tensor).
template <class T, class Input>
std::vector<std::optional<BoxTensorT<T>>> evaluate(const ir::KernelGraph& g,
                                                   const std::vector<std::optional<Box>>& want,
                                                   Input input, int threads) {
  const DemandPlan dp = plan_demand(g, want);
  const auto& demand = dp.demand;
  const auto& op_plans = dp.op_plans;
  const auto& block_plans = dp.block_plans;
  // Forward: inputs, then every needed op on its box.
  KernelValues<T> v(g.tensors.size());
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const auto id = static_cast<size_t>(g.inputs[i]);
    if (demand[id])
      v[id] = input(i, *demand[id]);
  }
  const std::vector<size_t> last = detail::last_uses(g);
  for (size_t k = 0; k < g.ops.size(); ++k) {
    check_deadline();
    const ir::KernelOp& op = g.ops[k];
    if (block_plans[k]) {
      run_graph_defined(op, *block_plans[k], v, g, threads);
    } else if (op_plans[k]) {
      v[static_cast<size_t>(op.outputs[0])] = std::make_shared<BoxTensorT<T>>(eval_planned(
          op.op, op.attrs, *op_plans[k], op.inputs, g.tensor(op.outputs[0]).type.shape, v));
    }
    for (ir::TensorId id : op.inputs)  // dropped after their last reader: linear memory
      if (last[static_cast<size_t>(id)] == k) v[static_cast<size_t>(id)].reset();
  }
  std::vector<std::optional<BoxTensorT<T>>> out;
  for (size_t i = 0; i < g.outputs.size(); ++i) {  // moved unless shared (another output, an input)
    const auto id = static_cast<size_t>(g.outputs[i]);
    const bool again = std::count(g.outputs.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                                  g.outputs.end(), g.outputs[i]) > 0;
    if (!want[i])
      out.push_back(std::nullopt);
    else if (again || v[id].use_count() > 1)
      out.push_back(*v[id]);
    else
      out.push_back(std::move(*v[id]));
  }
  return out;
}

}  // namespace

int64_t demanded_peak_entries(const ir::KernelGraph& g,
                              const std::vector<std::optional<Box>>& want) {
  const DemandPlan dp = plan_demand(g, want);
  return detail::live_peak(g, [&](ir::TensorId id) -> int64_t {
    const auto& b = dp.demand[static_cast<size_t>(id)];
    return b ? b->numel() : 0;
  });
}

int64_t input_memo_hits() { return input_memo_hits_here(); }

FullInputs full_inputs(const ir::KernelGraph& g, uint64_t key) {
  const FieldParams& f = field_context().params;
  FullInputs in{f.p, f.q, key, {}};
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const ir::Shape& s = g.tensor(g.inputs[i]).type.shape;
    in.tensors.push_back(std::make_shared<BoxTensor>(hashed_input(s, full_box(s), key, i)));
  }
  return in;
}

std::vector<BoxTensor> eval_field(const ir::KernelGraph& g, const std::vector<Box>& want,
                                  uint64_t key, int threads, const FullInputs* shared) {
  if (shared) {
    const FieldParams& f = field_context().params;
    MG_CHECK(shared->p == f.p && shared->q == f.q && shared->key == key &&
                 shared->tensors.size() == g.inputs.size(),
             "shared inputs of another draw or another program");
  }
  std::vector<std::optional<Box>> w(want.begin(), want.end());
  auto input = [&](size_t i, const Box& box) {
    const ir::Shape& s = g.tensor(g.inputs[i]).type.shape;
    if (shared && shared->tensors[i]->shape == s && shared->tensors[i]->box == box)
      return shared->tensors[i];
    return std::make_shared<BoxTensor>(memo_hashed_input(s, box, key, i));
  };
  std::vector<BoxTensor> out;
  for (auto& t : evaluate<FF>(g, w, input, threads)) out.push_back(std::move(*t));
  return out;
}

std::vector<std::optional<BoxTensorT<GR>>> eval_group_ring(
    const ir::KernelGraph& g, const std::vector<std::optional<Box>>& want, uint64_t key,
    int threads) {
  auto input = [&](size_t i, const Box& box) {  // hashed as the field's inputs, on demand
    const BoxTensor f = memo_hashed_input(g.tensor(g.inputs[i]).type.shape, box, key, i);
    auto t = std::make_shared<BoxTensorT<GR>>(
        BoxTensorT<GR>{f.shape, f.box, HostTensor<GR>(f.data.shape, Arith<GR>::zero())});
    for (size_t k = 0; k < f.data.data.size(); ++k)
      t->data.data[k] = Arith<GR>::from_ff(f.data.data[k]);
    return t;
  };
  return evaluate<GR>(g, want, input, threads);
}

}  // namespace mugraph::verify
