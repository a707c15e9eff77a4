#include "opt/retile.h"

#include <sstream>

#include "ir/builder.h"

namespace mugraph::opt {

using ir::BlockBuilder;
using ir::BlockGraph;
using ir::BlockNode;
using ir::BlockNodeKind;
using ir::TensorId;

namespace {

std::string grid_text(const ir::Dim3& d) {
  std::ostringstream s;
  s << "[" << d[0] << ", " << d[1] << ", " << d[2] << "]";
  return s.str();
}

Result<std::shared_ptr<const ir::ThreadGraph>> rebuild_thread(const ir::ThreadGraph& tg,
                                                              const std::vector<ir::Tensor>& inputs) {
  ir::ThreadBuilder b(inputs);
  std::vector<TensorId> to(tg.tensors.size(), -1);
  for (size_t i = 0; i < tg.inputs.size(); ++i) {
    auto id = b.find(inputs[i].name);
    if (!id) return error("retile: thread input '", inputs[i].name, "' not found");
    to[static_cast<size_t>(tg.inputs[i])] = *id;
  }
  for (const ir::ThreadGraph::Node& n : tg.nodes) {
    std::vector<TensorId> in;
    for (TensorId t : n.inputs) in.push_back(to[static_cast<size_t>(t)]);
    MG_ASSIGN_OR_RETURN(to[static_cast<size_t>(n.output)],
                        b.op(n.op, in, n.attrs, tg.tensors[static_cast<size_t>(n.output)].name));
  }
  for (TensorId t : tg.outputs) MG_RETURN_IF_ERROR(b.output(to[static_cast<size_t>(t)]));
  return std::move(b).finish();
}

}  // namespace

Result<ir::KernelGraph> retile(const ir::KernelGraph& g, size_t op, const ir::Dim3& grid,
                               int64_t forloop) {
  if (op >= g.ops.size() || !g.ops[op].graph_defined)
    return error("retile: op ", op, " is not a graph-defined kernel");
  const BlockGraph& bg = *g.ops[op].block;
  MG_ASSIGN_OR_RETURN(BlockBuilder b, BlockBuilder::make(bg.input_types, grid, forloop));
  std::vector<TensorId> to(bg.tensors.size(), -1);
  auto name = [&](TensorId t) { return bg.tensors[static_cast<size_t>(t)].name; };
  for (const BlockNode& n : bg.nodes) {
    std::vector<TensorId> in;
    for (TensorId t : n.inputs) in.push_back(to[static_cast<size_t>(t)]);
    switch (n.kind) {
      case BlockNodeKind::kInputIterator: {
        MG_ASSIGN_OR_RETURN(to[static_cast<size_t>(n.outputs[0])],
                            b.input_iterator(n.input_index, n.imap, n.fmap, name(n.outputs[0])));
        break;
      }
      case BlockNodeKind::kCompute: {
        ir::OpAttrs attrs = n.attrs;
        if (n.op == ir::OpKind::kReshape)
          return error("retile: '", name(n.outputs[0]), "' is a reshape to a tile shape");
        if (n.op == ir::OpKind::kSum) {
          const ir::Shape& old_in = bg.tensors[static_cast<size_t>(n.inputs[0])].type.shape;
          if (attrs.group == old_in[attrs.dim])
            attrs.group = b.graph().tensors[static_cast<size_t>(in[0])].type.shape[attrs.dim];
        }
        MG_ASSIGN_OR_RETURN(to[static_cast<size_t>(n.outputs[0])], b.op(n.op, in, attrs, name(n.outputs[0])));
        break;
      }
      case BlockNodeKind::kThreadGraph: {
        MG_ASSIGN_OR_RETURN(auto tg, rebuild_thread(*n.thread, b.tensors_of(in)));
        std::vector<std::string> names;
        for (TensorId t : n.outputs) names.push_back(name(t));
        MG_ASSIGN_OR_RETURN(std::vector<TensorId> outs, b.thread_graph(in, tg, names));
        for (size_t i = 0; i < outs.size(); ++i) to[static_cast<size_t>(n.outputs[i])] = outs[i];
        break;
      }
      case BlockNodeKind::kAccumulator: {
        MG_ASSIGN_OR_RETURN(to[static_cast<size_t>(n.outputs[0])],
                            b.accumulator(in[0], n.fmap, name(n.outputs[0])));
        break;
      }
      case BlockNodeKind::kOutputSaver: {
        MG_RETURN_IF_ERROR(b.output_saver(in[0], n.omap));
        break;
      }
    }
  }
  MG_ASSIGN_OR_RETURN(std::shared_ptr<const BlockGraph> nb, std::move(b).finish());
  if (nb->output_types != bg.output_types)
    return error("retile: the kernel's outputs would change type");
  ir::KernelGraph out = g;
  out.ops[op].block = nb;
  return out;
}

std::vector<Retiled> retile_neighbours(const ir::KernelGraph& g) {
  std::vector<Retiled> out;
  for (size_t k = 0; k < g.ops.size(); ++k) {
    if (!g.ops[k].graph_defined) continue;
    const BlockGraph& bg = *g.ops[k].block;
    auto add = [&](const ir::Dim3& grid, int64_t forloop) {
      if (grid[0] < 1 || grid[1] < 1 || grid[2] < 1 || forloop < 1) return;
      auto r = retile(g, k, grid, forloop);
      if (!r.ok()) return;
      std::ostringstream s;
      s << "kernel " << k << ": ";
      if (forloop != bg.forloop) s << "forloop " << bg.forloop << " -> " << forloop;
      else s << "grid " << grid_text(bg.grid) << " -> " << grid_text(grid);
      out.push_back({std::move(r).value(), s.str()});
    };
    for (int d = 0; d < 3; ++d)
      for (bool up : {false, true}) {
        ir::Dim3 grid = bg.grid;
        if (!up && grid[d] % 2 != 0) continue;
        grid.d[static_cast<size_t>(d)] = up ? grid[d] * 2 : grid[d] / 2;
        add(grid, bg.forloop);
      }
    if (bg.forloop % 2 == 0) add(bg.grid, bg.forloop / 2);
    add(bg.grid, bg.forloop * 2);
  }
  return out;
}

}  // namespace mugraph::opt
