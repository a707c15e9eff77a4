// Canonical printer for the uGraph text format (grammar in ir/text.h).
#include <charconv>
#include <sstream>

#include "ir/text.h"

namespace mugraph::ir {
namespace {

template <class G>
std::string names(const G& g, const std::vector<TensorId>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i)
    out += (i ? ", " : "") + g.tensors[static_cast<size_t>(ids[i])].name;
  return out;
}

// "  # f16[16, 64]": the types of a statement's results, as a trailing comment.
template <class G>
std::string types(const G& g, const std::vector<TensorId>& ids) {
  std::string out = "  # ";
  for (size_t i = 0; i < ids.size(); ++i)
    out += (i ? ", " : "") + g.tensors[static_cast<size_t>(ids[i])].type.to_string();
  return out;
}

// "op(a, b, dim=1, group=4)"
template <class G>
std::string op_call(const G& g, OpKind op, const OpAttrs& a, const std::vector<TensorId>& ins) {
  const unsigned bits = op_info(op).attrs;
  std::string out = std::string(op_name(op)) + "(" + names(g, ins);
  if (bits & kAttrDim) out += ", dim=" + std::to_string(a.dim);
  if (bits & kAttrGroup) out += ", group=" + std::to_string(a.group);
  if (bits & kAttrTimes) out += ", times=" + std::to_string(a.times);
  if (bits & kAttrShape) out += ", shape=" + a.shape.to_string();
  if (bits & kAttrPerm) out += ", perm=" + a.perm.to_string();
  if (bits & kAttrFactor) out += ", factor=" + a.factor.to_string();
  return out + ")";
}

void print_thread(std::ostream& os, const BlockGraph& bg, const BlockNode& n,
                  const std::string& ind) {
  const ThreadGraph& tg = *n.thread;
  os << ind << names(bg, n.outputs) << " = thread_graph(" << names(bg, n.inputs) << ") {"
     << types(bg, n.outputs) << "\n";
  for (const ThreadGraph::Node& t : tg.nodes)
    os << ind << "  " << tg.tensors[static_cast<size_t>(t.output)].name << " = "
       << op_call(tg, t.op, t.attrs, t.inputs) << types(tg, {t.output}) << "\n";
  os << ind << "  output " << names(tg, tg.outputs) << "\n" << ind << "}\n";
}

// One block node as a statement (without indentation and type comment).
std::string block_stmt(const KernelGraph& kg, const KernelOp& op, const BlockNode& n) {
  const BlockGraph& bg = *op.block;
  switch (n.kind) {
    case BlockNodeKind::kInputIterator:
      return names(bg, n.outputs) + " = input_iterator(" +
             kg.tensor(op.inputs[static_cast<size_t>(n.input_index)]).name +
             ", imap=" + n.imap.to_string() + ", fmap=" + map_target_name(n.fmap) + ")";
    case BlockNodeKind::kCompute:
      return names(bg, n.outputs) + " = " + op_call(bg, n.op, n.attrs, n.inputs);
    case BlockNodeKind::kAccumulator:
      return names(bg, n.outputs) + " = accumulator(" + names(bg, n.inputs) +
             ", fmap=" + map_target_name(n.fmap) + ")";
    case BlockNodeKind::kOutputSaver:
      return "output_saver(" + names(bg, n.inputs) + ", omap=" + n.omap.to_string() + ")";
    case BlockNodeKind::kThreadGraph:
      break;  // multi-line: print_thread
  }
  MG_CHECK(false, "thread graphs are printed by print_thread");
}

void print_block(std::ostream& os, const KernelGraph& kg, const KernelOp& op) {
  const BlockGraph& bg = *op.block;
  os << names(kg, op.outputs) << " = graph_defined(" << names(kg, op.inputs) << ", grid=["
     << bg.grid[0] << ", " << bg.grid[1] << ", " << bg.grid[2] << "], forloop=" << bg.forloop
     << ") {" << types(kg, op.outputs) << "\n";
  for (const BlockNode& n : bg.nodes) {
    if (n.kind == BlockNodeKind::kThreadGraph) {
      print_thread(os, bg, n, "  ");
      continue;
    }
    os << "  " << block_stmt(kg, op, n);
    if (!n.outputs.empty()) os << types(bg, n.outputs);
    os << "\n";
  }
  os << "}\n";
}

// The shortest decimal that reads back as exactly `x` (0.02, not 0.0200000000000000004).
std::string shortest(double x) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, x);
  std::string s(buf, r.ptr);
  // A large whole number comes out as digits only ("9223372036854775808"), which the lexer
  // reads as an integer (out of range beyond int64): print it in scientific form instead.
  if (s.find_first_of(".eEn") == std::string::npos && s.size() > 15) {
    r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
    s.assign(buf, r.ptr);
  }
  return s;
}

}  // namespace

std::string print_graph(const KernelGraph& g) {
  std::ostringstream os;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const Tensor& t = g.tensor(g.inputs[i]);
    os << "input " << t.name << " : " << t.type.to_string();
    if (g.input_scale(i) != 0) os << " scale=" << shortest(g.input_scale(i));
    os << "\n";
  }
  for (const KernelOp& op : g.ops) {
    if (op.graph_defined) {
      print_block(os, g, op);
      continue;
    }
    os << names(g, op.outputs) << " = " << op_call(g, op.op, op.attrs, op.inputs)
       << types(g, op.outputs) << "\n";
  }
  os << "output " << names(g, g.outputs) << "\n";
  return os.str();
}

}  // namespace mugraph::ir
