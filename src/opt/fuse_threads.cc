#include "opt/fuse_threads.h"

#include <algorithm>
#include <map>

#include "ir/builder.h"

namespace mugraph::opt {
namespace {

bool fusible(const ir::BlockNode& n) {
  return n.kind == ir::BlockNodeKind::kCompute && (ir::op_info(n.op).levels & ir::kLevelT);
}

}  // namespace

std::shared_ptr<const ir::BlockGraph> fuse_block(const ir::BlockGraph& bg, int max_registers) {
  const size_t n = bg.nodes.size();
  std::vector<int> producer(bg.tensors.size(), -1);
  for (size_t i = 0; i < n; ++i)
    for (ir::TensorId t : bg.nodes[i].outputs) producer[t] = static_cast<int>(i);
  // consumers[t]: node indices reading tensor t.
  std::vector<std::vector<int>> consumers(bg.tensors.size());
  for (size_t i = 0; i < n; ++i)
    for (ir::TensorId t : bg.nodes[i].inputs) consumers[t].push_back(static_cast<int>(i));

  // R1-R4: form groups.
  std::vector<int> group(n, -1);
  std::vector<std::vector<int>> groups;
  for (size_t i = 0; i < n; ++i) {
    const ir::BlockNode& node = bg.nodes[i];
    if (!fusible(node)) continue;
    int join = -1;
    for (ir::TensorId t : node.inputs) {
      const int p = producer[t];
      if (p >= 0 && group[p] >= 0) join = std::max(join, group[p]);
    }
    if (join >= 0) {
      // R3: every reader of a member's output placed before node i must be a member.
      bool safe = true;
      for (int m : groups[join])
        for (ir::TensorId t : bg.nodes[m].outputs)
          for (int r : consumers[t]) safe &= r >= static_cast<int>(i) || group[r] == join;
      // R4: one register per thread tensor; each op adds at most its output and its inputs.
      int regs = static_cast<int>(1 + node.inputs.size());
      for (int m : groups[join]) regs += static_cast<int>(1 + bg.nodes[m].inputs.size());
      safe &= regs <= max_registers;
      if (safe) {
        group[i] = join;
        groups[join].push_back(static_cast<int>(i));
        continue;
      }
    }
    group[i] = static_cast<int>(groups.size());
    groups.push_back({static_cast<int>(i)});
  }

  // Rebuild: non-members as they are, each group (R5: size >= 2) at its last member.
  auto bb = ir::BlockBuilder::make(bg.input_types, bg.grid, bg.forloop).value();
  std::vector<ir::TensorId> id(bg.tensors.size(), -1);
  auto ids = [&](const std::vector<ir::TensorId>& ts) {
    std::vector<ir::TensorId> out;
    for (ir::TensorId t : ts) out.push_back(id[t]);
    return out;
  };
  auto name = [&](ir::TensorId t) { return bg.tensors[t].name; };
  for (size_t i = 0; i < n; ++i) {
    const ir::BlockNode& node = bg.nodes[i];
    const int g = group[i];
    if (g >= 0 && groups[g].size() >= 2) {
      if (groups[g].back() != static_cast<int>(i)) continue;  // emitted at the last member
      const std::vector<int>& members = groups[g];
      std::vector<ir::TensorId> ext_in, outs;
      auto member = [&](int node_index) { return node_index >= 0 && group[node_index] == g; };
      for (int m : members)
        for (ir::TensorId t : bg.nodes[m].inputs)
          if (!member(producer[t]) && std::find(ext_in.begin(), ext_in.end(), t) == ext_in.end())
            ext_in.push_back(t);
      for (int m : members)
        for (ir::TensorId t : bg.nodes[m].outputs) {
          bool outside = false;
          for (int r : consumers[t]) outside |= !member(r);
          if (outside) outs.push_back(t);
        }
      std::vector<ir::Tensor> in_tensors;
      for (ir::TensorId t : ext_in) in_tensors.push_back(bg.tensors[t]);
      ir::ThreadBuilder tb(in_tensors);
      std::map<ir::TensorId, ir::TensorId> tid;  // block tensor -> thread tensor
      for (size_t k = 0; k < ext_in.size(); ++k) tid[ext_in[k]] = static_cast<ir::TensorId>(k);
      for (int m : members) {
        const ir::BlockNode& mn = bg.nodes[m];
        std::vector<ir::TensorId> tin;
        for (ir::TensorId t : mn.inputs) tin.push_back(tid.at(t));
        tid[mn.outputs[0]] = tb.op(mn.op, tin, mn.attrs, name(mn.outputs[0])).value();
      }
      std::vector<std::string> out_names;
      for (ir::TensorId t : outs) {
        MG_CHECK(tb.output(tid.at(t)).ok(), "thread graph output");
        out_names.push_back(name(t));
      }
      auto tg = std::move(tb).finish().value();
      auto made = bb.thread_graph(ids(ext_in), tg, out_names).value();
      for (size_t k = 0; k < outs.size(); ++k) id[outs[k]] = made[k];
      continue;
    }
    switch (node.kind) {
      case ir::BlockNodeKind::kInputIterator:
        id[node.outputs[0]] =
            bb.input_iterator(node.input_index, node.imap, node.fmap, name(node.outputs[0])).value();
        break;
      case ir::BlockNodeKind::kCompute:
        id[node.outputs[0]] = bb.op(node.op, ids(node.inputs), node.attrs,
                                         name(node.outputs[0])).value();
        break;
      case ir::BlockNodeKind::kThreadGraph: {
        std::vector<std::string> names;
        for (ir::TensorId t : node.outputs) names.push_back(name(t));
        auto made = bb.thread_graph(ids(node.inputs), node.thread, names).value();
        for (size_t k = 0; k < made.size(); ++k) id[node.outputs[k]] = made[k];
        break;
      }
      case ir::BlockNodeKind::kAccumulator:
        id[node.outputs[0]] = bb.accumulator(id[node.inputs[0]], node.fmap,
                                                  name(node.outputs[0])).value();
        break;
      case ir::BlockNodeKind::kOutputSaver: {
        Status s = bb.output_saver(id[node.inputs[0]], node.omap);
        MG_CHECK(s.ok(), "thread-graph fusion: saver: " << s.message());
        break;
      }
    }
  }
  return std::move(bb).finish().value();
}

ir::KernelGraph fuse_thread_graphs(const ir::KernelGraph& g, int max_registers) {
  ir::KernelGraph out = g;
  for (ir::KernelOp& op : out.ops)
    if (op.graph_defined) op.block = fuse_block(*op.block, max_registers);
  return out;
}

}  // namespace mugraph::opt
