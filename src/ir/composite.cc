#include "ir/composite.h"

namespace mugraph::ir {
namespace {

Status check_dim(const KernelBuilder& kb, TensorId x, int dim, std::string_view what) {
  const Shape& s = kb.graph().tensor(x).type.shape;
  if (dim < 0 || dim >= s.rank)
    return error(what, ": dim=", dim, " is out of range for ", s.to_string());
  return ok_status();
}

// sum of `x` over the whole of `dim`.
Result<TensorId> sum_all(KernelBuilder& kb, TensorId x, int dim, const std::string& name) {
  OpAttrs a;
  a.dim = dim;
  a.group = kb.graph().tensor(x).type.shape[dim];
  return kb.op(OpKind::kSum, {x}, a, name);
}

}  // namespace

Result<TensorId> rms_norm(KernelBuilder& kb, TensorId x, int dim, const std::string& name) {
  MG_RETURN_IF_ERROR(check_dim(kb, x, dim, "rms_norm"));
  MG_ASSIGN_OR_RETURN(TensorId sq, kb.op(OpKind::kSquare, {x}, {}, name + ".sq"));
  MG_ASSIGN_OR_RETURN(TensorId ss, sum_all(kb, sq, dim, name + ".ss"));
  OpAttrs mean;
  mean.factor = {1, kb.graph().tensor(x).type.shape[dim]};
  MG_ASSIGN_OR_RETURN(TensorId ms, kb.op(OpKind::kScale, {ss}, mean, name + ".ms"));
  MG_ASSIGN_OR_RETURN(TensorId rms, kb.op(OpKind::kSqrt, {ms}, {}, name + ".rms"));
  return kb.op(OpKind::kDiv, {x, rms}, {}, name);
}

Result<TensorId> softmax(KernelBuilder& kb, TensorId x, int dim, const std::string& name) {
  MG_RETURN_IF_ERROR(check_dim(kb, x, dim, "softmax"));
  MG_ASSIGN_OR_RETURN(TensorId e, kb.op(OpKind::kExp, {x}, {}, name + ".exp"));
  MG_ASSIGN_OR_RETURN(TensorId d, sum_all(kb, e, dim, name + ".den"));
  return kb.op(OpKind::kDiv, {e, d}, {}, name);
}

Result<TensorId> attention(KernelBuilder& kb, TensorId q, TensorId k, TensorId v,
                           const std::string& name) {
  MG_ASSIGN_OR_RETURN(TensorId s, kb.op(OpKind::kMatmul, {q, k}, {}, name + ".scores"));
  const int last = kb.graph().tensor(s).type.shape.rank - 1;
  MG_ASSIGN_OR_RETURN(TensorId p, softmax(kb, s, last, name + ".probs"));
  return kb.op(OpKind::kMatmul, {p, v}, {}, name);
}

const std::vector<CompositeInfo>& composites() {
  static const std::vector<CompositeInfo> kTable = {
      {"rms_norm", 1, true}, {"softmax", 1, true}, {"attention", 3, false}};
  return kTable;
}

std::optional<CompositeInfo> find_composite(std::string_view name) {
  for (const CompositeInfo& c : composites())
    if (c.name == name) return c;
  return std::nullopt;
}

Result<TensorId> build_composite(KernelBuilder& kb, std::string_view composite,
                                 const std::vector<TensorId>& in, int dim,
                                 const std::string& name) {
  auto info = find_composite(composite);
  MG_CHECK(info.has_value(), composite);
  if (static_cast<int>(in.size()) != info->arity)
    return error(composite, ": expects ", info->arity, " input(s), got ", in.size());
  if (composite == "rms_norm") return rms_norm(kb, in[0], dim, name);
  if (composite == "softmax") return softmax(kb, in[0], dim, name);
  return attention(kb, in[0], in[1], in[2], name);
}

}  // namespace mugraph::ir
