#include "opt/schedule.h"

#include <algorithm>

namespace mugraph::opt {

using ir::BlockNodeKind;

BlockSchedule schedule_block(const ir::BlockGraph& g) {
  const size_t n = g.nodes.size();
  // Per tensor: (region, depth within the region) of its producer.
  struct Slot {
    Region region = Region::kPrologue;
    int depth = -1;
  };
  std::vector<Slot> produced(g.tensors.size());
  std::vector<Slot> slot(n);
  // Depth of a node in `region`: one after the latest input produced in that same region;
  // inputs from an earlier region are ready when the region starts, except that prologue tiles
  // land with the loop's own loads (the cp.async wait of loop stage 0) and so are ready only at
  // loop depth 1, after the barrier that ends stage 0.
  auto depth_in = [&](const ir::BlockNode& node, Region region) {
    int d = 0;
    for (ir::TensorId t : node.inputs) {
      const Slot& p = produced[static_cast<size_t>(t)];
      if (p.region == region) d = std::max(d, p.depth + 1);
      if (p.region == Region::kPrologue && region == Region::kLoop) d = std::max(d, 1);
    }
    return d;
  };
  for (size_t i = 0; i < n; ++i) {
    const ir::BlockNode& node = g.nodes[i];
    Slot s;
    switch (node.kind) {
      case BlockNodeKind::kInputIterator:
        s = node.fmap == ir::kReplica ? Slot{Region::kPrologue, 0} : Slot{Region::kLoop, 0};
        break;
      case BlockNodeKind::kAccumulator:
        s = {Region::kLoop, depth_in(node, Region::kLoop)};
        break;
      case BlockNodeKind::kOutputSaver:
        s = {Region::kEpilogue, depth_in(node, Region::kEpilogue)};
        break;
      case BlockNodeKind::kCompute:
      case BlockNodeKind::kThreadGraph: {
        const bool post = g.phases[static_cast<size_t>(node.outputs[0])] == ir::Phase::kPostLoop;
        const Region r = post ? Region::kEpilogue : Region::kLoop;
        s = {r, depth_in(node, r)};
        break;
      }
    }
    slot[i] = s;
    for (ir::TensorId t : node.outputs) {
      // An accumulator's output is complete only after the loop: epilogue consumers treat it
      // as ready (an earlier region).
      produced[static_cast<size_t>(t)] =
          node.kind == BlockNodeKind::kAccumulator ? Slot{Region::kLoop, 1 << 20} : s;
    }
  }
  // Savers run after every post-loop op they could depend on; keep them in their own stage
  // after the last epilogue compute stage so that the writes to device memory are one pass.
  int last_epilogue_op = -1;
  for (size_t i = 0; i < n; ++i)
    if (slot[i].region == Region::kEpilogue && g.nodes[i].kind != BlockNodeKind::kOutputSaver)
      last_epilogue_op = std::max(last_epilogue_op, slot[i].depth);
  for (size_t i = 0; i < n; ++i)
    if (g.nodes[i].kind == BlockNodeKind::kOutputSaver) slot[i].depth = last_epilogue_op + 1;

  BlockSchedule s;
  s.stage_of.assign(n, -1);
  for (Region r : {Region::kPrologue, Region::kLoop, Region::kEpilogue}) {
    int max_depth = -1;
    for (size_t i = 0; i < n; ++i)
      if (slot[i].region == r) max_depth = std::max(max_depth, slot[i].depth);
    for (int d = 0; d <= max_depth; ++d) {
      Stage st{r, {}};
      for (size_t i = 0; i < n; ++i)
        if (slot[i].region == r && slot[i].depth == d) st.nodes.push_back(static_cast<int>(i));
      if (st.nodes.empty()) continue;
      for (int i : st.nodes) s.stage_of[static_cast<size_t>(i)] = static_cast<int>(s.stages.size());
      s.stages.push_back(std::move(st));
    }
  }
  return s;
}

}  // namespace mugraph::opt
