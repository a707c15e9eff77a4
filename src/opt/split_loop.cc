#include "opt/split_loop.h"

#include <algorithm>
#include <set>

#include "ir/builder.h"

namespace mugraph::opt {

using ir::BlockBuilder;
using ir::BlockGraph;
using ir::BlockNode;
using ir::BlockNodeKind;
using ir::DimMap;
using ir::kReplica;
using ir::Phase;
using ir::TensorId;

namespace {

// A copy of compute or thread-graph node `n` into `b`, its tensors mapped by `to`.
Status copy_node(const BlockGraph& bg, const BlockNode& n, BlockBuilder& b,
                 std::vector<TensorId>& to) {
  std::vector<TensorId> in;
  for (TensorId t : n.inputs) {
    if (to[static_cast<size_t>(t)] < 0)
      return error("split_loop: '", bg.tensors[static_cast<size_t>(t)].name, "' is not available");
    in.push_back(to[static_cast<size_t>(t)]);
  }
  if (n.kind == BlockNodeKind::kCompute) {
    MG_ASSIGN_OR_RETURN(TensorId id, b.op(n.op, in, n.attrs,
                                          bg.tensors[static_cast<size_t>(n.outputs[0])].name));
    to[static_cast<size_t>(n.outputs[0])] = id;
    return ok_status();
  }
  std::vector<std::string> names;
  for (TensorId t : n.outputs) names.push_back(bg.tensors[static_cast<size_t>(t)].name);
  MG_ASSIGN_OR_RETURN(std::vector<TensorId> out, b.thread_graph(in, n.thread, names));
  for (size_t i = 0; i < out.size(); ++i) to[static_cast<size_t>(n.outputs[i])] = out[i];
  return ok_status();
}

bool post_loop(const BlockGraph& bg, const BlockNode& n) {
  return (n.kind == BlockNodeKind::kCompute || n.kind == BlockNodeKind::kThreadGraph) &&
         bg.phases[static_cast<size_t>(n.outputs[0])] == Phase::kPostLoop;
}

}  // namespace

Result<ir::KernelGraph> split_loop(const ir::KernelGraph& g, int64_t splits) {
  if (splits < 2) return error("split_loop: ", splits, " splits (needs >= 2)");
  if (g.ops.size() != 1 || !g.ops[0].graph_defined)
    return error("split_loop: needs a uGraph of one graph-defined kernel op");
  const ir::KernelOp& kop = g.ops[0];
  const BlockGraph& bg = *kop.block;
  if (bg.forloop % splits != 0)
    return error("split_loop: ", splits, " splits do not divide the loop's ", bg.forloop,
                 " iterations");
  int j = -1;  // the new grid dim
  for (int d = 0; d < 3 && j < 0; ++d)
    if (bg.grid[d] == 1) j = d;
  if (j < 0) return error("split_loop: no grid dim of size 1 left");

  // What the post-loop part reads from the loop: accumulators (ops never mix phases, so
  // nothing else crosses it).
  std::vector<int> acc_read;  // node index of each accumulator read after the loop, in order
  std::vector<int> node_of(bg.tensors.size(), -1);
  for (size_t i = 0; i < bg.nodes.size(); ++i)
    for (TensorId t : bg.nodes[i].outputs) node_of[static_cast<size_t>(t)] = static_cast<int>(i);
  for (const BlockNode& n : bg.nodes) {
    if (!post_loop(bg, n) && n.kind != BlockNodeKind::kOutputSaver) continue;
    for (TensorId t : n.inputs) {
      const int p = node_of[static_cast<size_t>(t)];
      const BlockNode& src = bg.nodes[static_cast<size_t>(p)];
      if (src.kind == BlockNodeKind::kAccumulator) {
        if (std::find(acc_read.begin(), acc_read.end(), p) == acc_read.end()) acc_read.push_back(p);
      } else if (bg.phases[static_cast<size_t>(t)] == Phase::kInLoop) {
        return error("split_loop: '", bg.tensors[static_cast<size_t>(t)].name,
                     "' is computed in the loop and read after it without an accumulator");
      }
    }
  }
  if (acc_read.empty()) return error("split_loop: nothing accumulated over the loop");
  const DimMap& ref = bg.nodes[static_cast<size_t>(bg.savers.front())].omap;

  // Kernel 1: the loop, on a grid split `splits` ways along each streamed dim.
  ir::Dim3 grid1 = bg.grid;
  grid1.d[static_cast<size_t>(j)] = splits;
  MG_ASSIGN_OR_RETURN(BlockBuilder b1, BlockBuilder::make(bg.input_types, grid1, bg.forloop / splits));
  std::vector<TensorId> to1(bg.tensors.size(), -1);
  for (const BlockNode& n : bg.nodes) {
    switch (n.kind) {
      case BlockNodeKind::kInputIterator: {
        // The new grid dim splits the streamed dim; every split reads loop-invariant inputs
        // whole (a size-1 grid dim may have been mapped anywhere: it split nothing).
        DimMap im = n.imap;
        if (n.fmap != kReplica)
          for (int d = 0; d < 3; ++d)
            if (d != j && bg.grid[d] > 1 && im[d] == n.fmap)
              return error("split_loop: the grid already splits input #", n.input_index,
                           "'s streamed dim ", n.fmap);
        im.to[static_cast<size_t>(j)] = n.fmap;
        MG_ASSIGN_OR_RETURN(TensorId id, b1.input_iterator(n.input_index, im, n.fmap,
                                                           bg.tensors[static_cast<size_t>(n.outputs[0])].name));
        to1[static_cast<size_t>(n.outputs[0])] = id;
        break;
      }
      case BlockNodeKind::kAccumulator: {
        if (n.fmap != kReplica)
          return error("split_loop: accumulator '", bg.tensors[static_cast<size_t>(n.outputs[0])].name,
                       "' concatenates over the loop (fmap ", n.fmap, ")");
        MG_ASSIGN_OR_RETURN(TensorId id, b1.accumulator(to1[static_cast<size_t>(n.inputs[0])], kReplica,
                                                        bg.tensors[static_cast<size_t>(n.outputs[0])].name));
        to1[static_cast<size_t>(n.outputs[0])] = id;
        break;
      }
      case BlockNodeKind::kOutputSaver:
        break;
      default:
        if (!post_loop(bg, n)) MG_RETURN_IF_ERROR(copy_node(bg, n, b1, to1));
    }
  }
  // Each partial: the original grid dims write where the first saver's do; the new one
  // concatenates along the last dim they leave free.
  std::vector<DimMap> part_maps;
  std::vector<int> part_dim;
  for (int p : acc_read) {
    const TensorId a = bg.nodes[static_cast<size_t>(p)].outputs[0];
    const int rank = bg.tensors[static_cast<size_t>(a)].type.shape.rank;
    DimMap om;
    std::set<int> used;
    for (int d = 0; d < 3; ++d) {
      if (bg.grid[d] == 1) continue;
      if (ref[d] == kReplica || ref[d] >= rank)
        return error("split_loop: grid dim ", ir::kGridDimNames[d], " has no dim of partial '",
                     bg.tensors[static_cast<size_t>(a)].name, "' to write along");
      om.to[static_cast<size_t>(d)] = ref[d];
      used.insert(ref[d]);
    }
    int c = -1;
    for (int d = rank - 1; d >= 0 && c < 0; --d)
      if (!used.count(d)) c = d;
    if (c < 0)
      return error("split_loop: partial '", bg.tensors[static_cast<size_t>(a)].name,
                   "' has no dim left for the split");
    part_maps.push_back(om);
    part_dim.push_back(c);
    om.to[static_cast<size_t>(j)] = c;
    MG_RETURN_IF_ERROR(b1.output_saver(to1[static_cast<size_t>(a)], om));
  }
  MG_ASSIGN_OR_RETURN(std::shared_ptr<const BlockGraph> k1, std::move(b1).finish());

  // Kernel 2: sum the parts in a loop, then what followed the loop.
  MG_ASSIGN_OR_RETURN(BlockBuilder b2, BlockBuilder::make(k1->output_types, bg.grid, splits));
  std::vector<TensorId> to2(bg.tensors.size(), -1);
  for (size_t i = 0; i < acc_read.size(); ++i) {
    const TensorId a = bg.nodes[static_cast<size_t>(acc_read[i])].outputs[0];
    const std::string& name = bg.tensors[static_cast<size_t>(a)].name;
    MG_ASSIGN_OR_RETURN(TensorId it, b2.input_iterator(static_cast<int>(i), part_maps[i], part_dim[i]));
    MG_ASSIGN_OR_RETURN(to2[static_cast<size_t>(a)], b2.accumulator(it, kReplica, name));
  }
  for (const BlockNode& n : bg.nodes) {
    if (post_loop(bg, n)) MG_RETURN_IF_ERROR(copy_node(bg, n, b2, to2));
    if (n.kind == BlockNodeKind::kOutputSaver)
      MG_RETURN_IF_ERROR(b2.output_saver(to2[static_cast<size_t>(n.inputs[0])], n.omap));
  }
  MG_ASSIGN_OR_RETURN(std::shared_ptr<const BlockGraph> k2, std::move(b2).finish());

  // The kernel graph: same inputs and outputs (names, order, scales).
  ir::KernelBuilder kb;
  std::vector<TensorId> kt(g.tensors.size(), -1);
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const ir::Tensor& t = g.tensor(g.inputs[i]);
    MG_ASSIGN_OR_RETURN(kt[static_cast<size_t>(g.inputs[i])], kb.input(t.name, t.type, g.input_scale(i)));
  }
  std::vector<TensorId> in1;
  for (TensorId t : kop.inputs) in1.push_back(kt[static_cast<size_t>(t)]);
  MG_ASSIGN_OR_RETURN(std::vector<TensorId> parts, kb.graph_defined(in1, k1));
  std::vector<std::string> names;
  for (TensorId t : kop.outputs) names.push_back(g.tensor(t).name);
  MG_ASSIGN_OR_RETURN(std::vector<TensorId> outs, kb.graph_defined(parts, k2, names));
  for (size_t i = 0; i < outs.size(); ++i) kt[static_cast<size_t>(kop.outputs[i])] = outs[i];
  for (TensorId t : g.outputs) MG_RETURN_IF_ERROR(kb.output(kt[static_cast<size_t>(t)]));
  return std::move(kb).finish();
}

}  // namespace mugraph::opt
