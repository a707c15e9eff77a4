#include "ir/dot.h"

#include <sstream>

namespace mugraph::ir {
namespace {

// Node label for a block node (escaped for DOT's quoted strings: no quotes are produced).
std::string block_label(const BlockGraph& bg, const BlockNode& n) {
  auto out_type = [&]() {
    return n.outputs.empty() ? std::string()
                             : "\\n" + bg.tensors[static_cast<size_t>(n.outputs[0])].type.to_string();
  };
  switch (n.kind) {
    case BlockNodeKind::kInputIterator:
      return "iter #" + std::to_string(n.input_index) + "\\nimap=" + n.imap.to_string() +
             " fmap=" + map_target_name(n.fmap) + out_type();
    case BlockNodeKind::kCompute:
      return std::string(op_name(n.op)) + out_type();
    case BlockNodeKind::kThreadGraph: {
      std::string s = "thread graph:";
      for (const ThreadGraph::Node& t : n.thread->nodes) s += "\\n" + std::string(op_name(t.op));
      return s + out_type();
    }
    case BlockNodeKind::kAccumulator:
      return "accum fmap=" + map_target_name(n.fmap) + out_type();
    case BlockNodeKind::kOutputSaver:
      return "save omap=" + n.omap.to_string();
  }
  MG_CHECK(false, "bad block node kind");
}

// Iterators and ops on in-loop tensors are drawn inside the for-loop cluster.
bool in_loop_node(const BlockGraph& bg, const BlockNode& n) {
  return n.kind == BlockNodeKind::kInputIterator ||
         (!n.outputs.empty() && n.kind != BlockNodeKind::kAccumulator &&
          bg.phases[static_cast<size_t>(n.outputs[0])] == Phase::kInLoop);
}

void block_cluster(std::ostream& os, const KernelOp& op, size_t k) {
  const BlockGraph& bg = *op.block;
  const std::string p = "k" + std::to_string(k) + "_";
  os << "  subgraph cluster_" << k << " {\n    label=\"graph_defined grid=[" << bg.grid[0] << ","
     << bg.grid[1] << "," << bg.grid[2] << "] forloop=" << bg.forloop << "\";\n";
  os << "    subgraph cluster_" << k << "_loop {\n      label=\"for-loop body\"; style=dashed;\n";
  std::vector<int> producer(bg.tensors.size(), -1);
  for (size_t i = 0; i < bg.nodes.size(); ++i) {
    const BlockNode& n = bg.nodes[i];
    for (TensorId t : n.outputs) producer[static_cast<size_t>(t)] = static_cast<int>(i);
    const bool in_loop = in_loop_node(bg, n);
    if (in_loop) os << "      " << p << i << " [label=\"" << block_label(bg, n) << "\"];\n";
  }
  os << "    }\n";
  for (size_t i = 0; i < bg.nodes.size(); ++i) {
    const BlockNode& n = bg.nodes[i];
    const bool in_loop = in_loop_node(bg, n);
    if (!in_loop) os << "    " << p << i << " [label=\"" << block_label(bg, n) << "\"];\n";
    for (TensorId t : n.inputs)
      os << "    " << p << producer[static_cast<size_t>(t)] << " -> " << p << i << ";\n";
  }
  os << "  }\n";
  for (const BlockNode& n : bg.nodes)
    if (n.kind == BlockNodeKind::kInputIterator)
      os << "  t" << op.inputs[static_cast<size_t>(n.input_index)] << " -> " << p
         << (&n - bg.nodes.data()) << ";\n";
  for (size_t o = 0; o < bg.savers.size(); ++o)
    os << "  " << p << bg.savers[o] << " -> t" << op.outputs[o] << ";\n";
}

}  // namespace

std::string to_dot(const KernelGraph& g) {
  std::ostringstream os;
  os << "digraph ugraph {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n";
  for (size_t t = 0; t < g.tensors.size(); ++t)
    os << "  t" << t << " [shape=ellipse, label=\"" << g.tensors[t].name << "\\n"
       << g.tensors[t].type.to_string() << "\"];\n";
  for (size_t k = 0; k < g.ops.size(); ++k) {
    const KernelOp& op = g.ops[k];
    if (op.graph_defined) {
      block_cluster(os, op, k);
      continue;
    }
    os << "  op" << k << " [label=\"" << op_name(op.op) << "\"];\n";
    for (TensorId t : op.inputs) os << "  t" << t << " -> op" << k << ";\n";
    os << "  op" << k << " -> t" << op.outputs[0] << ";\n";
  }
  os << "}\n";
  return os.str();
}

}  // namespace mugraph::ir
