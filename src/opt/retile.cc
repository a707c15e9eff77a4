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

// Which dims of each block tensor the grid cuts into chunks: a dim that comes from an input's
// data dim some grid dim of size > 1 maps. Followed through the ops (broadcasting element-wise
// ops and thread graphs, matmul's rows and columns, sums, repeats and concats dim for dim,
// transposes by their permutation); anything else counts as cut in every dim (the safe side:
// a cut dim keeps its sum's group).
std::vector<std::vector<bool>> grid_cut_dims(const BlockGraph& bg, const ir::Dim3& grid) {
  std::vector<std::vector<bool>> cut(bg.tensors.size());
  auto rank = [&](TensorId t) { return bg.tensors[static_cast<size_t>(t)].type.shape.rank; };
  auto at = [&](TensorId t) -> std::vector<bool>& { return cut[static_cast<size_t>(t)]; };
  // Right-aligned: output dim j of rank r reads dim j - (r - ri) of an input of rank ri.
  auto broadcast = [&](const std::vector<TensorId>& in, int r) {
    std::vector<bool> c(static_cast<size_t>(r), false);
    for (TensorId t : in)
      for (int j = 0; j < r; ++j) {
        const int i = j - (r - rank(t));
        if (i >= 0 && at(t)[static_cast<size_t>(i)]) c[static_cast<size_t>(j)] = true;
      }
    return c;
  };
  for (const BlockNode& n : bg.nodes) {
    if (n.outputs.empty()) continue;
    const int r = rank(n.outputs[0]);
    std::vector<bool> c(static_cast<size_t>(r), true);
    if (n.kind == BlockNodeKind::kInputIterator) {
      c.assign(static_cast<size_t>(r), false);
      for (int g = 0; g < 3; ++g)
        if (grid[g] > 1 && n.imap[g] != ir::kReplica) c[static_cast<size_t>(n.imap[g])] = true;
    } else if (n.kind == BlockNodeKind::kAccumulator) {
      c = at(n.inputs[0]);
    } else if (n.kind == BlockNodeKind::kThreadGraph) {
      c = broadcast(n.inputs, r);
    } else if (n.kind == BlockNodeKind::kCompute) {
      switch (ir::op_info(n.op).cls) {
        case ir::OpClass::kUnary:
        case ir::OpClass::kBinary: c = broadcast(n.inputs, r); break;
        case ir::OpClass::kMatmul: {
          c = broadcast(n.inputs, r);  // the batch dims
          const int ra = rank(n.inputs[0]), rb = rank(n.inputs[1]);
          c[static_cast<size_t>(r - 2)] = at(n.inputs[0])[static_cast<size_t>(ra - 2)];
          c[static_cast<size_t>(r - 1)] = at(n.inputs[1])[static_cast<size_t>(rb - 1)];
          break;
        }
        case ir::OpClass::kSum:
        case ir::OpClass::kRepeat: c = at(n.inputs[0]); break;
        case ir::OpClass::kConcat: c = broadcast(n.inputs, r); break;
        case ir::OpClass::kTranspose:
          for (int j = 0; j < r; ++j) c[static_cast<size_t>(j)] = at(n.inputs[0])[static_cast<size_t>(n.attrs.perm[j])];
          break;
        case ir::OpClass::kConcatMatmul:
        case ir::OpClass::kReshape: break;  // all cut
      }
    }
    for (TensorId t : n.outputs) at(t) = c;
  }
  return cut;
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
  const auto cut_old = grid_cut_dims(bg, bg.grid), cut_new = grid_cut_dims(bg, grid);
  auto grid_cut = [&](TensorId t, int dim) {
    return cut_old[static_cast<size_t>(t)][static_cast<size_t>(dim)] ||
           cut_new[static_cast<size_t>(t)][static_cast<size_t>(dim)];
  };
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
        // A whole-tile sum over a dim the grid does not cut sums the whole (loop-streamed) dim
        // in both forms: its group follows the tile. Over a dim the grid cuts, it is a sum per
        // chunk of the data: the group stays (and must still divide the new tile).
        if (n.op == ir::OpKind::kSum) {
          const ir::Shape& old_in = bg.tensors[static_cast<size_t>(n.inputs[0])].type.shape;
          if (attrs.group == old_in[attrs.dim] && !grid_cut(n.inputs[0], attrs.dim))
            attrs.group = b.graph().tensors[static_cast<size_t>(in[0])].type.shape[attrs.dim];
        }
        if ((n.op == ir::OpKind::kRepeat || n.op == ir::OpKind::kConcat) && !(grid == bg.grid) &&
            grid_cut(n.outputs[0], attrs.dim))
          return error("retile: '", name(n.outputs[0]), "' is a ", ir::op_name(n.op),
                       " along a dim the grid cuts");
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
