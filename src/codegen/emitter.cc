#include "codegen/emitter.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <set>

namespace mugraph::codegen {

void Writer::line(std::string_view text) {
  out_.append(static_cast<size_t>(2 * indent_), ' ');
  out_ += text;
  out_ += '\n';
}

void Writer::text(std::string_view lines) {
  while (!lines.empty()) {
    const size_t nl = lines.find('\n');
    const std::string_view l = lines.substr(0, nl);
    if (l.empty())
      blank();
    else
      line(l);
    if (nl == std::string_view::npos) break;
    lines.remove_prefix(nl + 1);
  }
}

void Writer::open(std::string_view head) {
  line(head.empty() ? std::string("{") : std::string(head) + " {");
  ++indent_;
}

void Writer::close(std::string_view tail) {
  MG_CHECK(indent_ > 0, "Writer::close without open");
  --indent_;
  line(tail);
}

Operand device_operand(const std::string& ptr, const ir::TensorType& t) {
  Operand o;
  o.ptr = ptr;
  o.dtype = t.dtype;
  o.shape = t.shape;
  o.strides = t.layout.strides;
  return o;
}

Operand local_operand(const std::string& ptr, const ir::Shape& s) {
  Operand o;
  o.ptr = ptr;
  o.dtype = ir::DType::kF32;
  o.shape = s;
  o.strides = ir::row_major(s).strides;
  return o;
}

Operand sub_view(const Operand& o, const ir::Shape& s, const std::vector<std::string>& offset) {
  Operand v = o;
  v.shape = s;
  v.base = element(o, offset);
  return v;
}

Operand permuted_view(const Operand& o, const ir::Shape& perm) {
  Operand v = o;
  for (int d = 0; d < perm.rank; ++d) {
    const size_t p = static_cast<size_t>(perm[d]);
    v.shape[d] = o.shape[static_cast<int>(p)];
    v.strides[static_cast<size_t>(d)] = o.strides[p];
  }
  return v;
}

std::vector<std::string> broadcast_index(const Operand& o, const ir::Shape& loop,
                                         const std::vector<std::string>& vars) {
  MG_CHECK(o.shape.rank <= loop.rank && static_cast<int>(vars.size()) == loop.rank,
           "operand of rank " << o.shape.rank << " under a loop of rank " << loop.rank);
  std::vector<std::string> idx;
  const int shift = loop.rank - o.shape.rank;
  for (int d = 0; d < o.shape.rank; ++d) {
    const bool broadcast = o.shape[d] == 1 && loop[d + shift] != 1;
    MG_CHECK(broadcast || o.shape[d] == loop[d + shift] || o.shape[d] == 1,
             "operand dim " << d << " (" << o.shape[d] << ") does not broadcast to "
                            << loop.to_string());
    idx.push_back(o.shape[d] == 1 ? "0" : vars[static_cast<size_t>(d + shift)]);
  }
  return idx;
}

std::string mul_expr(const std::string& a, int64_t b) {
  if (a == "0" || b == 0) return "0";
  if (b == 1) return a;
  if (a == "1") return std::to_string(b);
  // A sum must be parenthesized before it is scaled.
  const bool compound = a.find_first_of("+-") != std::string::npos;
  return (compound ? "(" + a + ")" : a) + " * " + std::to_string(b);
}

std::string add_expr(const std::string& a, const std::string& b) {
  if (a == "0") return b;
  if (b == "0") return a;
  return a + " + " + b;
}

std::string element(const Operand& o, const std::vector<std::string>& idx) {
  MG_CHECK(static_cast<int>(idx.size()) == o.shape.rank, "index rank mismatch");
  std::string e = o.base;
  for (int d = 0; d < o.shape.rank; ++d)
    e = add_expr(e, mul_expr(idx[static_cast<size_t>(d)], o.strides[static_cast<size_t>(d)]));
  return e;
}

std::string float_literal(double x) {
  const float f = static_cast<float>(x);
  MG_CHECK(std::isfinite(f), "non-finite constant " << x);
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, f);  // shortest round-trip form
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s + "f";
}

std::string identifier(std::string_view name) {
  std::string s;
  for (char c : name) s += (std::isalnum(static_cast<unsigned char>(c)) != 0) ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])) != 0) s = "t_" + s;
  return s;
}

std::string storage_type(ir::DType t) {
  switch (t) {
    case ir::DType::kF16: return "mg::f16";
    case ir::DType::kBF16: return "mg::bf16";
    case ir::DType::kF32: return "float";
  }
  return "float";
}

std::vector<std::string> block_offsets(const ir::DimMap& map, const ir::Shape& s,
                                       const ir::Dim3& grid) {
  static const std::array<std::string, 3> kVars = {"bx", "by", "bz"};
  std::vector<std::string> off(static_cast<size_t>(s.rank), "0");
  for (int gd = 0; gd < 3; ++gd)
    if (map[gd] != ir::kReplica)
      off[static_cast<size_t>(map[gd])] =
          mul_expr(kVars[static_cast<size_t>(gd)], s[map[gd]] / grid[gd]);
  return off;
}

ThreadOutput thread_output(const ir::ThreadGraph& tg, size_t output, const ScalarFn& scalar) {
  const ir::TensorId target = tg.outputs[output];
  // The ancestors of the output: one fused expression computes exactly these.
  std::set<ir::TensorId> need{target};
  for (auto it = tg.nodes.rbegin(); it != tg.nodes.rend(); ++it)
    if (need.count(it->output) != 0) need.insert(it->inputs.begin(), it->inputs.end());
  ThreadOutput out;
  for (size_t i = 0; i < tg.inputs.size(); ++i)
    if (need.count(tg.inputs[i]) != 0) out.inputs.push_back(i);
  out.value = [&tg, need, target, used = out.inputs, scalar](const std::vector<std::string>& x) {
    std::vector<std::string> val(tg.tensors.size());
    for (size_t i = 0; i < used.size(); ++i) val[static_cast<size_t>(tg.inputs[used[i]])] = x[i];
    for (const ir::ThreadGraph::Node& n : tg.nodes) {
      if (need.count(n.output) == 0) continue;
      std::vector<std::string> a;
      for (ir::TensorId t : n.inputs) a.push_back(val[static_cast<size_t>(t)]);
      val[static_cast<size_t>(n.output)] = scalar(n.op, n.attrs, a);
    }
    return val[static_cast<size_t>(target)];
  };
  return out;
}

ThreadBody thread_body(const ir::ThreadGraph& tg, const ScalarFn& scalar,
                       const std::vector<std::string>& inputs) {
  std::vector<std::string> val(tg.tensors.size());
  for (size_t i = 0; i < tg.inputs.size(); ++i) val[static_cast<size_t>(tg.inputs[i])] = inputs[i];
  ThreadBody b;
  for (const ir::ThreadGraph::Node& n : tg.nodes) {
    std::vector<std::string> a;
    for (ir::TensorId t : n.inputs) a.push_back(val[static_cast<size_t>(t)]);
    const std::string name = "v" + std::to_string(n.output);
    b.lines.push_back("const float " + name + " = " + scalar(n.op, n.attrs, a) + ";");
    val[static_cast<size_t>(n.output)] = name;
  }
  for (ir::TensorId t : tg.outputs) b.outputs.push_back(val[static_cast<size_t>(t)]);
  return b;
}

EntryBinding bind_entry(const ir::KernelGraph& g) {
  EntryBinding b;
  b.tensors.resize(g.tensors.size());
  std::vector<bool> bound(g.tensors.size(), false);
  auto bind = [&](ir::TensorId id, EntryBinding::From from, int64_t index) {
    b.tensors[static_cast<size_t>(id)] = {from, index};
    bound[static_cast<size_t>(id)] = true;
  };
  for (size_t i = 0; i < g.inputs.size(); ++i)
    bind(g.inputs[i], EntryBinding::From::kInput, static_cast<int64_t>(i));
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    if (bound[static_cast<size_t>(g.outputs[i])]) {
      b.copied_outputs.push_back(i);
      continue;
    }
    bind(g.outputs[i], EntryBinding::From::kOutput, static_cast<int64_t>(i));
  }
  for (const ir::KernelOp& op : g.ops)
    for (ir::TensorId id : op.outputs) {
      if (bound[static_cast<size_t>(id)]) continue;
      bind(id, EntryBinding::From::kWorkspace, b.workspace_bytes);
      b.workspace_bytes += (g.tensor(id).type.bytes() + 255) / 256 * 256;
    }
  return b;
}

std::vector<std::pair<ir::TensorId, bool>> op_tensors(const ir::KernelOp& op) {
  std::vector<std::pair<ir::TensorId, bool>> v;
  auto add = [&](ir::TensorId id, bool out) {
    for (const auto& [t, o] : v)
      if (t == id) return;
    v.emplace_back(id, out);
  };
  for (ir::TensorId id : op.inputs) add(id, false);
  for (ir::TensorId id : op.outputs) add(id, true);
  return v;
}

std::string scalar_expr(ir::OpKind k, const ir::OpAttrs& a, const std::vector<std::string>& x,
                        const MathNames& m) {
  MG_CHECK(static_cast<int>(x.size()) == ir::op_info(k).arity, "arity of " << ir::op_name(k));
  switch (k) {
    case ir::OpKind::kExp: return m.exp + "(" + x[0] + ")";
    case ir::OpKind::kSquare: return "(" + x[0] + " * " + x[0] + ")";
    case ir::OpKind::kSqrt: return m.sqrt + "(" + x[0] + ")";
    case ir::OpKind::kSilu: return "(" + x[0] + " / (1.f + " + m.exp + "(-" + x[0] + ")))";
    case ir::OpKind::kRelu: return m.max + "(" + x[0] + ", 0.f)";
    case ir::OpKind::kGelu:
      return "(0.5f * " + x[0] + " * (1.f + " + m.erf + "(" + x[0] + " * 0.70710678118654752f)))";
    case ir::OpKind::kNeg: return "(-" + x[0] + ")";
    case ir::OpKind::kReciprocal: return "(1.f / " + x[0] + ")";
    case ir::OpKind::kScale: return "(" + x[0] + " * " + float_literal(a.factor.to_double()) + ")";
    case ir::OpKind::kAdd: return "(" + x[0] + " + " + x[1] + ")";
    case ir::OpKind::kSub: return "(" + x[0] + " - " + x[1] + ")";
    case ir::OpKind::kMul: return "(" + x[0] + " * " + x[1] + ")";
    case ir::OpKind::kDiv: return "(" + x[0] + " / " + x[1] + ")";
    case ir::OpKind::kMatmul:
    case ir::OpKind::kConcatMatmul:
    case ir::OpKind::kSum:
    case ir::OpKind::kRepeat:
    case ir::OpKind::kReshape:
    case ir::OpKind::kTranspose:
    case ir::OpKind::kConcat: break;
  }
  MG_CHECK(false, ir::op_name(k) << " is not element-wise");
  return "";
}

std::string device_name(const ir::Tensor& t) { return "d_" + identifier(t.name); }
std::string shared_name(const ir::Tensor& t) { return "s_" + identifier(t.name); }

std::string op_params(const ir::KernelGraph& g, const ir::KernelOp& op, std::string_view restrict_kw) {
  std::string s;
  for (const auto& [id, out] : op_tensors(op))
    s += (s.empty() ? "" : ", ") + std::string(out ? "" : "const ") +
         storage_type(g.tensor(id).type.dtype) + "* " + std::string(restrict_kw) + " " +
         device_name(g.tensor(id));
  return s;
}

std::string op_args(const ir::KernelGraph& g, const ir::KernelOp& op) {
  std::string s;
  for (const auto& [id, out] : op_tensors(op))
    s += (s.empty() ? "" : ", ") + device_name(g.tensor(id));
  return s;
}

void emit_bindings(Writer& w, const ir::KernelGraph& g, const EntryBinding& b) {
  for (size_t id = 0; id < g.tensors.size(); ++id) {
    const ir::Tensor& t = g.tensors[id];
    const EntryBinding::Source& src = b.tensors[id];
    const bool is_const = src.from == EntryBinding::From::kInput;
    const std::string ty = (is_const ? "const " : "") + storage_type(t.type.dtype) + "*";
    const std::string from = src.from == EntryBinding::From::kInput
                                 ? "in[" + std::to_string(src.index) + "]"
                             : src.from == EntryBinding::From::kOutput
                                 ? "out[" + std::to_string(src.index) + "]"
                                 : "static_cast<void*>(ws + " + std::to_string(src.index) + ")";
    w.line(ty + " const " + device_name(t) + " = static_cast<" + ty + ">(" + from + ");");
  }
}

Status check_entry_args(const Module::Entry& e, size_t in, size_t out) {
  if (static_cast<int>(in) != e.num_inputs || static_cast<int>(out) != e.num_outputs)
    return error(e.symbol, " takes ", e.num_inputs, " inputs and ", e.num_outputs, " outputs, ",
                 in, " and ", out, " given");
  return {};
}

Status emit_graphs(Writer& w, Module& m, const std::vector<NamedGraph>& graphs,
                   std::string_view backend, const OpEmitter& op, const EntryEmitter& entry) {
  std::set<std::string> names;
  for (const NamedGraph& ng : graphs) {
    const std::string name = identifier(ng.name);
    if (!names.insert(name).second)
      return error("codegen/", backend, ": two graphs named '", name, "' in one module");
    const ir::KernelGraph& g = *ng.graph;
    if (g.outputs.empty()) return error("codegen/", backend, ": graph '", ng.name, "' has no outputs");
    w.blank();
    w.line("// ===== " + ng.name + " =====");
    w.line("namespace {");
    for (size_t k = 0; k < g.ops.size(); ++k) {
      w.blank();
      if (Status s = op(w, g, k, name + "_op" + std::to_string(k)); !s.ok())
        return error("graph '", ng.name, "': ", s.message());
    }
    w.line("}  // namespace");
    w.blank();
    m.entries.push_back(entry(w, g, name));
  }
  m.source = w.str();
  return {};
}

}  // namespace mugraph::codegen
