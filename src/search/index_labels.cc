#include "search/index_labels.h"

#include <algorithm>

#include "support/status.h"

namespace mugraph::search {

int IndexClasses::make() {
  parent.push_back(static_cast<int>(parent.size()));
  return parent.back();
}

int IndexClasses::find(int x) {
  while (x >= 0 && parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

namespace {

bool pair_labels(int x, int y, IndexClasses* uf) {
  if (x == kAnyLabel || y == kAnyLabel || x < 0 || y < 0) return true;
  if (!uf) return x == y;
  x = uf->find(x), y = uf->find(y);
  if (x != y) uf->parent[x] = y;
  return true;
}

// Labels of a (batch of) dims broadcast right-aligned, out[0..rank).
bool broadcast_labels(const ir::Shape& a, const Labels& la, const ir::Shape& b, const Labels& lb,
                      int rank, Labels& out, IndexClasses* uf) {
  for (int i = 0; i < rank; ++i) {
    const int ia = a.rank - rank + i, ib = b.rank - rank + i;
    const bool ha = ia >= 0 && a[ia] > 1, hb = ib >= 0 && b[ib] > 1;
    if (ha && hb && !pair_labels(la[ia], lb[ib], uf)) return false;
    out[i] = ha ? la[ia] : hb ? lb[ib] : -1;
  }
  return true;
}

// Adds the labels >= 0 of the first `rank` dims of `l` to the class set `set`; returns false
// if one is kAnyLabel or beyond kMaxSummandClass.
bool add_indices(const Labels& l, int rank, uint64_t& set) {
  bool known = true;
  for (int d = 0; d < rank; ++d) {
    if (l[d] == kAnyLabel || l[d] > kMaxSummandClass) known = false;
    if (l[d] >= 0 && l[d] <= kMaxSummandClass) set |= uint64_t{1} << l[d];
  }
  return known;
}

}  // namespace

std::optional<LabelResult> propagate_labels(ir::OpKind op, const ir::OpAttrs& attrs,
                                            const std::vector<ir::TensorType>& t,
                                            const std::vector<Labels>& l, const ir::TensorType& out,
                                            IndexClasses* uf) {
  LabelResult r;
  r.out.fill(-1);
  const int rank = out.shape.rank;
  auto matmul = [&](int a, int b, int* reduced) {
    const ir::Shape &sa = t[a].shape, &sb = t[b].shape;
    if (!pair_labels(l[a][sa.rank - 1], l[b][sb.rank - 2], uf)) return false;
    *reduced = l[a][sa.rank - 1];
    const int k = reduced == &r.reduced[0] ? 0 : 1;
    const bool known_a = add_indices(l[a], sa.rank, r.summand[k]);
    const bool known_b = add_indices(l[b], sb.rank, r.summand[k]);
    r.summand_any[k] = !known_a || !known_b;
    ir::Shape ba = sa, bb = sb;
    ba.rank -= 2, bb.rank -= 2;
    Labels batch;
    batch.fill(-1);
    if (!broadcast_labels(ba, l[a], bb, l[b], rank - 2, batch, uf)) return false;
    Labels o = batch;
    o[rank - 2] = sa[sa.rank - 2] > 1 ? l[a][sa.rank - 2] : -1;
    o[rank - 1] = sb[sb.rank - 1] > 1 ? l[b][sb.rank - 1] : -1;
    if (reduced == &r.reduced[0]) {
      r.out = o;
      return true;
    }
    for (int i = 0; i < rank; ++i)
      if (!pair_labels(o[i], r.out[i], uf)) return false;
    return true;
  };
  switch (ir::op_info(op).cls) {
    case ir::OpClass::kUnary:
      r.out = l[0];
      return r;
    case ir::OpClass::kBinary:
      if (!broadcast_labels(t[0].shape, l[0], t[1].shape, l[1], rank, r.out, uf)) return {};
      return r;
    case ir::OpClass::kMatmul:
      if (!matmul(0, 1, &r.reduced[0])) return {};
      return r;
    case ir::OpClass::kConcatMatmul:
      if (!matmul(0, 2, &r.reduced[0]) || !matmul(1, 3, &r.reduced[1])) return {};
      return r;
    case ir::OpClass::kSum:
      r.out = l[0];
      r.reduced[0] = l[0][attrs.dim];
      r.summand_any[0] = !add_indices(l[0], t[0].shape.rank, r.summand[0]);
      r.out[attrs.dim] = attrs.group == t[0].shape[attrs.dim] ? -1 : kAnyLabel;
      return r;
    case ir::OpClass::kTranspose:  // the same indices, reordered
      for (int i = 0; i < rank; ++i) r.out[i] = l[0][static_cast<int>(attrs.perm[i])];
      return r;
    case ir::OpClass::kRepeat:
    case ir::OpClass::kReshape:
    case ir::OpClass::kConcat:
      for (int i = 0; i < rank; ++i) r.out[i] = out.shape[i] > 1 ? kAnyLabel : -1;
      return r;
  }
  return {};
}

ProgramLabels program_labels(const ir::KernelGraph& program) {
  IndexClasses uf;
  std::vector<Labels> labels(program.tensors.size());
  for (ir::TensorId id : program.inputs) {
    labels[id].fill(-1);
    for (int d = 0; d < program.tensor(id).type.shape.rank; ++d)
      if (program.tensor(id).type.shape[d] > 1) labels[id][d] = uf.make();
  }
  std::vector<int> sums, free_sums;
  std::vector<SumShape> shapes;  // raw classes, canonicalized once all are unified
  // Per tensor: made by an op that is not multilinear (exp, div, square...).
  std::vector<bool> nonlinear(program.tensors.size(), false);
  std::vector<std::vector<int>> sums_above(program.tensors.size());  // sums each tensor depends on
  for (const ir::KernelOp& op : program.ops) {
    MG_CHECK(!op.graph_defined, "program_labels: predefined ops only");
    std::vector<ir::TensorType> types;
    std::vector<Labels> labs;
    for (ir::TensorId i : op.inputs) types.push_back(program.tensor(i).type), labs.push_back(labels[i]);
    auto r = propagate_labels(op.op, op.attrs, types, labs, program.tensor(op.outputs[0]).type, &uf);
    MG_CHECK(r.has_value(), "index labels of a valid program");
    labels[op.outputs[0]] = r->out;
    std::vector<int>& above = sums_above[op.outputs[0]];
    for (ir::TensorId i : op.inputs) above.insert(above.end(), sums_above[i].begin(), sums_above[i].end());
    nonlinear[op.outputs[0]] = ir::op_info(op.op).lax != ir::LaxRole::kMultilinear;
    for (int k = 0; k < 2; ++k) {
      const int red = r->reduced[k];
      if (red < 0) continue;
      sums.push_back(red), above.push_back(red);
      // The operands of this reduction: concat_matmul's k-th pair (k, k + 2), else all.
      const bool pairs = ir::op_info(op.op).cls == ir::OpClass::kConcatMatmul;
      bool rigid = false;
      for (size_t i = 0; i < op.inputs.size(); ++i)
        if (!pairs || static_cast<int>(i % 2) == k) rigid |= nonlinear[op.inputs[i]];
      if (rigid && !r->summand_any[k])
        shapes.push_back({red, r->summand[k]});
      else
        free_sums.push_back(red);  // regroupable, or a summand set too large to record
    }
  }
  ProgramLabels out;
  out.reduced.assign(uf.parent.size(), false);
  out.reductions.assign(uf.parent.size(), 0);
  for (int red : sums) {
    out.reduced[static_cast<size_t>(uf.find(red))] = true;
    ++out.reductions[static_cast<size_t>(uf.find(red))];
  }
  out.reduced_by_every_output.assign(uf.parent.size(), true);
  for (ir::TensorId id : program.outputs) {
    std::vector<bool> mine(uf.parent.size(), false);
    for (int red : sums_above[id]) mine[static_cast<size_t>(uf.find(red))] = true;
    for (size_t c = 0; c < mine.size(); ++c) out.reduced_by_every_output[c] = out.reduced_by_every_output[c] && mine[c];
  }
  for (const SumShape& sh : shapes) {  // raw classes -> canonical ones
    SumShape c{uf.find(sh.index), 0};
    for (int x = 0; x <= kMaxSummandClass; ++x)
      if (sh.summand >> x & 1) c.summand |= uint64_t{1} << uf.find(x);
    out.rigid_sums.push_back(c);
  }
  std::sort(out.rigid_sums.begin(), out.rigid_sums.end());
  out.rigid_sums.erase(std::unique(out.rigid_sums.begin(), out.rigid_sums.end()), out.rigid_sums.end());
  out.freely_summed.assign(uf.parent.size(), false);
  for (int red : free_sums) out.freely_summed[static_cast<size_t>(uf.find(red))] = true;
  for (ir::TensorId id : program.inputs) {
    Labels l = labels[id];
    for (int& x : l) x = x >= 0 ? uf.find(x) : x;
    out.inputs.push_back(l);
  }
  return out;
}

}  // namespace mugraph::search
