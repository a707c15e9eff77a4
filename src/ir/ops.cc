#include "ir/ops.h"

#include <algorithm>

namespace mugraph::ir {

const std::vector<OpInfo>& all_ops() {
  static const std::vector<OpInfo> table(std::begin(kOpTable), std::end(kOpTable));
  return table;
}

std::optional<OpKind> parse_op(std::string_view name) {
  for (const OpInfo& info : all_ops())
    if (info.name == name) return info.kind;
  return std::nullopt;
}

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  Shape out;
  out.rank = std::max(a.rank, b.rank);
  for (int i = 0; i < out.rank; ++i) {
    const int ia = a.rank - out.rank + i, ib = b.rank - out.rank + i;
    const int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = std::max(da, db);
  }
  return out;
}

namespace {

// Broadcast shape of the batch (all but last two) dims of two matmul operands.
std::optional<Shape> batch_dims(const Shape& a, const Shape& b) {
  Shape ba, bb;
  ba.rank = a.rank - 2;
  bb.rank = b.rank - 2;
  for (int i = 0; i < ba.rank; ++i) ba[i] = a[i];
  for (int i = 0; i < bb.rank; ++i) bb[i] = b[i];
  return broadcast_shapes(ba, bb);
}

Result<Shape> matmul_shape(const Shape& a, const Shape& b, const char* an, const char* bn) {
  if (a.rank < 2 || b.rank < 2)
    return error("operands must have rank >= 2, got ", an, " ", a.to_string(), " and ", bn, " ",
                 b.to_string());
  if (a[a.rank - 1] != b[b.rank - 2])
    return error("inner dimensions differ: ", an, " ", a.to_string(), " has k=", a[a.rank - 1],
                 ", ", bn, " ", b.to_string(), " has k=", b[b.rank - 2]);
  auto batch = batch_dims(a, b);
  if (!batch)
    return error("batch dimensions of ", an, " ", a.to_string(), " and ", bn, " ",
                 b.to_string(), " do not broadcast");
  Shape out = *batch;
  out.rank += 2;
  out[out.rank - 2] = a[a.rank - 2];
  out[out.rank - 1] = b[b.rank - 1];
  return out;
}

Status check_dim(int dim, const Shape& s) {
  if (dim < 0 || dim >= s.rank)
    return error("dim=", dim, " is out of range for rank-", s.rank, " input ", s.to_string());
  return ok_status();
}

Result<Shape> infer_shape(OpKind kind, const OpAttrs& at, const std::vector<TensorType>& in) {
  const Shape& a = in[0].shape;
  switch (op_info(kind).cls) {
    case OpClass::kUnary:
      if (kind == OpKind::kScale && at.factor.den <= 0)
        return error("factor ", at.factor.to_string(), " must have a positive denominator");
      return a;
    case OpClass::kBinary: {
      auto s = broadcast_shapes(a, in[1].shape);
      if (!s)
        return error("shapes ", a.to_string(), " and ", in[1].shape.to_string(),
                     " do not broadcast (each dim must be equal or 1)");
      return *s;
    }
    case OpClass::kMatmul:
      return matmul_shape(a, in[1].shape, "input 0", "input 1");
    case OpClass::kConcatMatmul: {
      MG_ASSIGN_OR_RETURN(Shape wy, matmul_shape(a, in[2].shape, "W (input 0)", "Y (input 2)"));
      MG_ASSIGN_OR_RETURN(Shape xz,
                          matmul_shape(in[1].shape, in[3].shape, "X (input 1)", "Z (input 3)"));
      if (!(wy == xz))
        return error("W x Y is ", wy.to_string(), " but X x Z is ", xz.to_string());
      return wy;
    }
    case OpClass::kSum: {
      MG_RETURN_IF_ERROR(check_dim(at.dim, a));
      if (at.group < 1 || a[at.dim] % at.group != 0)
        return error("group=", at.group, " does not divide dim ", at.dim, " of size ", a[at.dim]);
      Shape out = a;
      out[at.dim] = a[at.dim] / at.group;
      return out;
    }
    case OpClass::kRepeat: {
      MG_RETURN_IF_ERROR(check_dim(at.dim, a));
      if (at.times < 1) return error("times=", at.times, " must be >= 1");
      Shape out = a;
      MG_ASSIGN_OR_RETURN(out[at.dim], checked_mul(a[at.dim], at.times));
      return out;
    }
    case OpClass::kReshape: {
      if (at.shape.rank < 1) return error("reshape needs a target shape");
      MG_RETURN_IF_ERROR(check_shape(at.shape));
      if (at.shape.numel() != a.numel())
        return error("cannot reshape ", a.to_string(), " (", a.numel(), " elements) to ",
                     at.shape.to_string(), " (", at.shape.numel(), " elements)");
      return at.shape;
    }
    case OpClass::kTranspose: {
      if (at.perm.rank != a.rank)
        return error("perm=", at.perm.to_string(), " has ", at.perm.rank,
                     " entries; the input ", a.to_string(), " has rank ", a.rank);
      std::array<bool, kMaxRank> seen{};
      Shape out = a;
      for (int d = 0; d < a.rank; ++d) {
        const int64_t p = at.perm[d];
        if (p < 0 || p >= a.rank || seen[static_cast<size_t>(p)])
          return error("perm=", at.perm.to_string(), " is not a permutation of the input's ",
                       a.rank, " dims");
        seen[static_cast<size_t>(p)] = true;
        out[d] = a[static_cast<int>(p)];
      }
      return out;
    }
    case OpClass::kConcat: {
      const Shape& b = in[1].shape;
      MG_RETURN_IF_ERROR(check_dim(at.dim, a));
      bool same = a.rank == b.rank;
      for (int i = 0; same && i < a.rank; ++i) same = i == at.dim || a[i] == b[i];
      if (!same)
        return error("shapes ", a.to_string(), " and ", b.to_string(),
                     " differ outside concat dim ", at.dim);
      Shape out = a;
      out[at.dim] = a[at.dim] + b[at.dim];
      return out;
    }
  }
  MG_CHECK(false, "bad op class");
}

}  // namespace

Result<TensorType> infer_type(OpKind kind, const OpAttrs& attrs,
                              const std::vector<TensorType>& inputs) {
  const OpInfo& info = op_info(kind);
  auto fail = [&](const Status& st) {
    return Status::error(std::string(info.name) + ": " + st.message());
  };
  if (static_cast<int>(inputs.size()) != info.arity)
    return fail(error("expects ", info.arity, " input(s), got ", inputs.size()));
  for (size_t i = 1; i < inputs.size(); ++i)
    if (inputs[i].dtype != inputs[0].dtype)
      return fail(error("input ", i, " has dtype ", dtype_name(inputs[i].dtype), " but input 0 has ",
                        dtype_name(inputs[0].dtype)));
  auto shape = infer_shape(kind, attrs, inputs);
  if (!shape.ok()) return fail(shape.status());
  if (Status s = check_shape(*shape); !s.ok()) return fail(s);
  return TensorType::make(inputs[0].dtype, *shape);
}

}  // namespace mugraph::ir
