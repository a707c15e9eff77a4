#include "search/candidate.h"

#include <tuple>

#include "opt/cost_model.h"

namespace mugraph::search {

int block_op_count(const ir::KernelGraph& g) {
  int n = 0;
  for (const ir::KernelOp& op : g.ops)
    if (op.graph_defined)
      for (const ir::BlockNode& node : op.block->nodes)
        n += node.kind == ir::BlockNodeKind::kCompute ||
             node.kind == ir::BlockNodeKind::kAccumulator ||
             node.kind == ir::BlockNodeKind::kThreadGraph;
  return n;
}

bool better(const Candidate& a, const Candidate& b) {
  return std::tie(a.model_seconds, a.kernel_ops, a.block_ops, a.hash) <
         std::tie(b.model_seconds, b.kernel_ops, b.block_ops, b.hash);
}

void describe(Candidate& c, const target::Target& target) {
  c.kernel_ops = static_cast<int>(c.graph.ops.size());
  c.graph_defined_ops = 0;
  for (const ir::KernelOp& op : c.graph.ops) c.graph_defined_ops += op.graph_defined;
  c.block_ops = block_op_count(c.graph);
  const opt::Cost cost = opt::estimate(c.graph, target);
  c.device_bytes = cost.bytes;
  c.model_seconds = cost.total_s;
}

}  // namespace mugraph::search
