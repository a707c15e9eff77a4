#include "verify/demand.h"

#include <algorithm>

namespace mugraph::verify::detail {
std::vector<int64_t> iota(int64_t lo, int64_t hi) {
  std::vector<int64_t> v;
  for (int64_t i = lo; i < hi; ++i)
    v.push_back(i);
  return v;
}

namespace {

std::vector<int64_t> merge(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> out;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

}  // namespace

void unite(std::optional<Box>& into, const Box& b) {
  if (!into) {
    into = b;
    return;
  }
  for (int d = 0; d < b.rank; ++d)
    into->idx[d] = merge(into->idx[d], b.idx[d]);
}

namespace {

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

// Matmul operand boxes: a[..., M, K] reads rows want[M], all of K; b[..., K, N] all K, cols
// want[N].
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

}  // namespace

// `in` are the operands' shapes, `out` the result's.
OpPlan plan_op(ir::OpKind kind, const ir::OpAttrs& attrs, const std::vector<ir::Shape>& operands,
               const ir::Shape& out, const Box& want) {
  auto shape = [&](size_t i) -> const ir::Shape& { return operands[i]; };
  OpPlan p{want, {}};
  const int dim = attrs.dim;
  switch (ir::op_info(kind).cls) {
  case ir::OpClass::kUnary:
    p.inputs = {want};
    break;
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
      for (int64_t t = 0; t < attrs.group; ++t)
        in.idx[dim].push_back(j * attrs.group + t);
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
  case ir::OpClass::kReshape: {
    // Inserting or dropping size-1 dims keeps the other dims in order: the demand maps over
    // (the compact data is the same). Any other reshape computes the whole tensor.
    std::vector<int> in_dims, out_dims;
    for (int d = 0; d < shape(0).rank; ++d)
      if (shape(0)[d] != 1) in_dims.push_back(d);
    for (int d = 0; d < out.rank; ++d)
      if (out[d] != 1) out_dims.push_back(d);
    bool units = in_dims.size() == out_dims.size();
    for (size_t i = 0; units && i < in_dims.size(); ++i)
      units = shape(0)[in_dims[i]] == out[out_dims[i]];
    if (!units) {
      p.produced = full_box(out);
      p.inputs = {full_box(shape(0))};
      break;
    }
    Box in;
    in.rank = shape(0).rank;
    for (int d = 0; d < in.rank; ++d) in.idx[d] = {0};
    for (size_t i = 0; i < in_dims.size(); ++i) in.idx[in_dims[i]] = want.idx[out_dims[i]];
    for (int d = 0; d < out.rank; ++d)
      if (out[d] == 1) p.produced.idx[d] = {0};
    p.inputs = {in};
    break;
  }
  case ir::OpClass::kTranspose: {  // the same box, its dims permuted back
    Box in;
    in.rank = out.rank;
    for (int d = 0; d < out.rank; ++d) in.idx[static_cast<int>(attrs.perm[d])] = want.idx[d];
    p.inputs = {in};
    break;
  }
  case ir::OpClass::kConcat: {  // each side contributes at least one index
    const int64_t na = shape(0)[dim];
    Box a = want, b = want;
    a.idx[dim].clear();
    b.idx[dim].clear();
    for (int64_t j : want.idx[dim])
      (j < na ? a.idx[dim].push_back(j) : b.idx[dim].push_back(j - na));
    if (a.idx[dim].empty())
      a.idx[dim] = {0};
    if (b.idx[dim].empty())
      b.idx[dim] = {0};
    p.produced.idx[dim] = a.idx[dim];
    for (int64_t j : b.idx[dim])
      p.produced.idx[dim].push_back(j + na);
    p.inputs = {a, b};
    break;
  }
  }
  return p;
}

}  // namespace mugraph::verify::detail

namespace mugraph::verify {

// ---- Box (field_eval.h)

int64_t Box::numel() const {
  int64_t n = 1;
  for (int d = 0; d < rank; ++d)
    n *= static_cast<int64_t>(idx[d].size());
  return n;
}

ir::Shape Box::extents() const {
  ir::Shape s;
  s.rank = rank;
  for (int d = 0; d < rank; ++d)
    s[d] = static_cast<int64_t>(idx[d].size());
  return s;
}

Box unite(const Box& a, const Box& b) {
  std::optional<Box> r = a;
  detail::unite(r, b);
  return *r;
}

Box full_box(const ir::Shape& s) {
  Box b;
  b.rank = s.rank;
  for (int d = 0; d < s.rank; ++d)
    b.idx[d] = detail::iota(0, s[d]);
  return b;
}

std::string index_text(const Box& box, int64_t compact) {
  const ir::Shape ext = box.extents();
  std::array<int64_t, 4> ix{};
  for (int d = box.rank - 1; d >= 0; --d) {
    ix[d] = box.idx[d][static_cast<size_t>(compact % ext[d])];
    compact /= ext[d];
  }
  std::string s = "[";
  for (int d = 0; d < box.rank; ++d) s += (d ? ", " : "") + std::to_string(ix[d]);
  return s + "]";
}

}  // namespace mugraph::verify
