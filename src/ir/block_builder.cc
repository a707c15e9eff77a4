// The block-level builder: imap/fmap/omap rules, loop phases, accumulators and savers.
#include <algorithm>

#include "ir/builder.h"

namespace mugraph::ir {
namespace {


// Checks that a map's data dims exist in `s` and are distinct; `what` names the map in errors.
Status check_dim_map(const DimMap& m, const Shape& s, const std::string& what) {
  for (int g = 0; g < 3; ++g) {
    const int d = m[g];
    if (d == kReplica) continue;
    if (d < 0 || d >= s.rank)
      return error(what, " maps grid dim ", kGridDimNames[g], " to data dim ", d,
                   ", which does not exist in ", s.to_string());
    for (int h = 0; h < g; ++h)
      if (m[h] == d)
        return error(what, " maps grid dims ", kGridDimNames[h], " and ", kGridDimNames[g],
                     " to the same data dim ", d);
  }
  return ok_status();
}

}  // namespace

Result<BlockBuilder> BlockBuilder::make(std::vector<TensorType> input_types, Dim3 grid,
                                        int64_t forloop) {
  // CUDA's launch limits: grid x < 2^31, y and z <= 65535. The for-loop range is bounded the
  // same way as grid x (it counts tiles of one data dim, so any real range is far below).
  const int64_t max_grid[3] = {(int64_t{1} << 31) - 1, 65535, 65535};
  for (int g = 0; g < 3; ++g)
    if (grid[g] < 1 || grid[g] > max_grid[g])
      return error("grid dim ", kGridDimNames[g], "=", grid[g], " must be in 1..", max_grid[g]);
  if (forloop < 1 || forloop > max_grid[0])
    return error("forloop range ", forloop, " must be in 1..", max_grid[0]);
  if (input_types.empty()) return error("a block graph needs at least one input");
  BlockBuilder b;
  b.g_.grid = grid;
  b.g_.forloop = forloop;
  b.g_.input_types = std::move(input_types);
  return b;
}

Result<TensorId> BlockBuilder::add_tensor(const std::string& name, TensorType type, Phase phase) {
  MG_ASSIGN_OR_RETURN(std::string n, names_.claim(name, g_.tensors.size(), g_.tensors));
  const auto id = static_cast<TensorId>(g_.tensors.size());
  g_.tensors.push_back({n, std::move(type)});
  g_.phases.push_back(phase);
  names_.bind(n, id);
  return id;
}

Status BlockBuilder::check_ids(const std::vector<TensorId>& ids, const char* what) const {
  for (TensorId id : ids)
    if (id < 0 || static_cast<size_t>(id) >= g_.tensors.size())
      return error(what, ": unknown block tensor #", id);
  return ok_status();
}

Result<Phase> BlockBuilder::common_phase(const std::vector<TensorId>& ids,
                                         const std::string& what) const {
  const Phase p = g_.phases[static_cast<size_t>(ids[0])];
  for (TensorId id : ids)
    if (g_.phases[static_cast<size_t>(id)] != p)
      return error(what, ": mixes in-loop tensor and post-loop (accumulated) tensor '",
                   g_.tensors[static_cast<size_t>(p == Phase::kInLoop ? id : ids[0])].name,
                   "'; every path must pass exactly one accumulator");
  return p;
}

std::vector<Tensor> BlockBuilder::tensors_of(const std::vector<TensorId>& ids) const {
  std::vector<Tensor> out;
  for (TensorId id : ids) out.push_back(g_.tensors.at(static_cast<size_t>(id)));
  return out;
}

Result<TensorId> BlockBuilder::input_iterator(int j, const DimMap& imap, int fmap,
                                              const std::string& name) {
  if (j < 0 || static_cast<size_t>(j) >= g_.input_types.size())
    return error("input_iterator: input #", j, " does not exist (", g_.input_types.size(),
                 " inputs)");
  for (const BlockNode& n : g_.nodes)
    if (n.kind == BlockNodeKind::kInputIterator && n.input_index == j)
      return error("input_iterator: input #", j, " already has an iterator");
  const TensorType& in = g_.input_types[static_cast<size_t>(j)];
  const std::string what = "input_iterator of input #" + std::to_string(j);
  MG_RETURN_IF_ERROR(check_dim_map(imap, in.shape, what + ": imap"));
  Shape s = in.shape;
  for (int g = 0; g < 3; ++g) {
    if (imap[g] == kReplica) continue;
    if (s[imap[g]] % g_.grid[g] != 0)
      return error(what, ": imap splits data dim ", imap[g], " of size ", s[imap[g]], " into ",
                   g_.grid[g], " blocks (grid dim ", kGridDimNames[g], "), which does not divide");
    s[imap[g]] /= g_.grid[g];
  }
  if (fmap != kReplica) {
    if (fmap < 0 || fmap >= s.rank)
      return error(what, ": fmap dim ", fmap, " does not exist in ", s.to_string());
    if (s[fmap] % g_.forloop != 0)
      return error(what, ": fmap splits data dim ", fmap, " of block size ", s[fmap], " into ",
                   g_.forloop, " iterations, which does not divide");
    s[fmap] /= g_.forloop;
  }
  MG_ASSIGN_OR_RETURN(TensorId id, add_tensor(name, TensorType::make(in.dtype, s), Phase::kInLoop));
  BlockNode n;
  n.kind = BlockNodeKind::kInputIterator;
  n.outputs = {id};
  n.input_index = j;
  n.imap = imap;
  n.fmap = fmap;
  g_.nodes.push_back(std::move(n));
  return id;
}

Result<TensorId> BlockBuilder::op(OpKind op, const std::vector<TensorId>& inputs,
                                  const OpAttrs& attrs, const std::string& name) {
  const std::string what(op_name(op));
  if (!(op_info(op).levels & kLevelB)) return error(what, ": not available as a block operator");
  MG_RETURN_IF_ERROR(check_ids(inputs, what.c_str()));
  std::vector<TensorType> types;
  for (TensorId id : inputs) types.push_back(g_.tensors[static_cast<size_t>(id)].type);
  MG_ASSIGN_OR_RETURN(TensorType type, infer_type(op, attrs, types));
  MG_ASSIGN_OR_RETURN(Phase phase, common_phase(inputs, what));
  MG_ASSIGN_OR_RETURN(TensorId id, add_tensor(name, type, phase));
  BlockNode n;
  n.kind = BlockNodeKind::kCompute;
  n.op = op;
  n.attrs = attrs;
  n.inputs = inputs;
  n.outputs = {id};
  g_.nodes.push_back(std::move(n));
  return id;
}

Result<std::vector<TensorId>> BlockBuilder::thread_graph(const std::vector<TensorId>& inputs,
                                                         std::shared_ptr<const ThreadGraph> tg,
                                                         const std::vector<std::string>& names) {
  MG_CHECK(tg != nullptr);
  MG_RETURN_IF_ERROR(check_ids(inputs, "thread_graph"));
  if (inputs.size() != tg->inputs.size())
    return error("thread_graph: has ", tg->inputs.size(), " inputs, given ", inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorType& have = g_.tensors[static_cast<size_t>(inputs[i])].type;
    const TensorType& want = tg->tensors[static_cast<size_t>(tg->inputs[i])].type;
    if (have.dtype != want.dtype || !(have.shape == want.shape))
      return error("thread_graph: input ", i, " is ", have.to_string(), ", expected ",
                   want.to_string());
  }
  if (!names.empty() && names.size() != tg->outputs.size())
    return error("thread_graph: ", names.size(), " names for ", tg->outputs.size(), " outputs");
  if (inputs.empty()) return error("thread_graph: needs at least one input");
  MG_ASSIGN_OR_RETURN(Phase phase, common_phase(inputs, "thread_graph"));
  BlockNode n;
  n.kind = BlockNodeKind::kThreadGraph;
  n.inputs = inputs;
  for (size_t i = 0; i < tg->outputs.size(); ++i) {
    const TensorType& t = tg->tensors[static_cast<size_t>(tg->outputs[i])].type;
    MG_ASSIGN_OR_RETURN(TensorId id, add_tensor(names.empty() ? "" : names[i], t, phase));
    n.outputs.push_back(id);
  }
  n.thread = std::move(tg);
  std::vector<TensorId> outs = n.outputs;
  g_.nodes.push_back(std::move(n));
  return outs;
}

Result<TensorId> BlockBuilder::accumulator(TensorId input, int fmap, const std::string& name) {
  MG_RETURN_IF_ERROR(check_ids({input}, "accumulator"));
  const Tensor& t = g_.tensors[static_cast<size_t>(input)];
  if (g_.phases[static_cast<size_t>(input)] != Phase::kInLoop)
    return error("accumulator: input '", t.name,
                 "' is already accumulated; a path may pass only one accumulator");
  Shape s = t.type.shape;
  if (fmap != kReplica) {
    if (fmap < 0 || fmap >= s.rank)
      return error("accumulator of '", t.name, "': fmap dim ", fmap, " does not exist in ",
                   s.to_string());
    MG_ASSIGN_OR_RETURN(s[fmap], checked_mul(s[fmap], g_.forloop));
  }
  MG_RETURN_IF_ERROR(check_shape(s).with_context("accumulator of '" + t.name + "': "));
  MG_ASSIGN_OR_RETURN(TensorId id,
                      add_tensor(name, TensorType::make(t.type.dtype, s), Phase::kPostLoop));
  BlockNode n;
  n.kind = BlockNodeKind::kAccumulator;
  n.inputs = {input};
  n.outputs = {id};
  n.fmap = fmap;
  g_.nodes.push_back(std::move(n));
  return id;
}

Status BlockBuilder::output_saver(TensorId input, const DimMap& omap) {
  MG_RETURN_IF_ERROR(check_ids({input}, "output_saver"));
  const Tensor& t = g_.tensors[static_cast<size_t>(input)];
  const std::string what = "output_saver of '" + t.name + "'";
  if (g_.phases[static_cast<size_t>(input)] == Phase::kInLoop && g_.forloop > 1)
    return error(what, ": tensor is inside the for-loop (range ", g_.forloop,
                 "); it must pass through an accumulator first");
  MG_RETURN_IF_ERROR(check_dim_map(omap, t.type.shape, what + ": omap"));
  Shape s = t.type.shape;
  for (int g = 0; g < 3; ++g) {
    if (omap[g] == kReplica) {
      if (g_.grid[g] > 1)
        return error(what, ": omap leaves grid dim ", kGridDimNames[g], " (", g_.grid[g],
                     " blocks) unmapped; blocks would overwrite each other's output");
      continue;
    }
    MG_ASSIGN_OR_RETURN(s[omap[g]], checked_mul(s[omap[g]], g_.grid[g]));
  }
  MG_RETURN_IF_ERROR(check_shape(s).with_context(what + ": "));
  BlockNode n;
  n.kind = BlockNodeKind::kOutputSaver;
  n.inputs = {input};
  n.omap = omap;
  g_.savers.push_back(static_cast<int>(g_.nodes.size()));
  g_.nodes.push_back(std::move(n));
  g_.output_types.push_back(TensorType::make(t.type.dtype, s));
  return ok_status();
}

Result<std::shared_ptr<const BlockGraph>> BlockBuilder::finish() && {
  for (size_t j = 0; j < g_.input_types.size(); ++j) {
    const bool has = std::any_of(g_.nodes.begin(), g_.nodes.end(), [&](const BlockNode& n) {
      return n.kind == BlockNodeKind::kInputIterator && n.input_index == static_cast<int>(j);
    });
    if (!has) return error("block graph: input #", j, " has no input_iterator");
  }
  if (g_.savers.empty()) return error("block graph has no output_saver");
  return std::make_shared<const BlockGraph>(std::move(g_));
}

}  // namespace mugraph::ir
