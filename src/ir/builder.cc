// Kernel- and thread-level builders, and the shared name scope.
#include "ir/builder.h"

#include <algorithm>
#include <cmath>

namespace mugraph::ir {

Result<std::string> NameScope::claim(const std::string& name, size_t next_index,
                                     std::vector<Tensor>& tensors) {
  std::string n = name.empty() ? "t" + std::to_string(next_index) : name;
  while (name.empty() && ids_.count(n)) n += "_";
  if (auto it = ids_.find(n); it != ids_.end()) {
    if (!automatic_.count(n)) return error("tensor name '", n, "' is already defined");
    std::string moved = n + "_";
    while (ids_.count(moved)) moved += "_";
    const TensorId old = it->second;
    ids_.erase(it);
    automatic_.erase(n);
    ids_[moved] = old;
    automatic_.insert(moved);
    tensors[static_cast<size_t>(old)].name = moved;
  }
  if (name.empty()) automatic_.insert(n);
  return n;
}

std::optional<TensorId> NameScope::find(const std::string& name) const {
  auto it = ids_.find(name);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

std::string_view block_node_name(BlockNodeKind k) {
  switch (k) {
    case BlockNodeKind::kInputIterator: return "input_iterator";
    case BlockNodeKind::kCompute: return "compute";
    case BlockNodeKind::kThreadGraph: return "thread_graph";
    case BlockNodeKind::kAccumulator: return "accumulator";
    case BlockNodeKind::kOutputSaver: return "output_saver";
  }
  MG_CHECK(false, "bad block node kind");
}

namespace {
template <class T>
bool deep_equal(const std::shared_ptr<const T>& a, const std::shared_ptr<const T>& b) {
  return a == b || (a && b && *a == *b);
}
}  // namespace

bool BlockNode::operator==(const BlockNode& o) const {
  return kind == o.kind && op == o.op && attrs == o.attrs && inputs == o.inputs &&
         outputs == o.outputs && input_index == o.input_index && imap == o.imap &&
         fmap == o.fmap && omap == o.omap && deep_equal(thread, o.thread);
}

bool KernelOp::operator==(const KernelOp& o) const {
  return graph_defined == o.graph_defined && op == o.op && attrs == o.attrs &&
         inputs == o.inputs && outputs == o.outputs && deep_equal(block, o.block);
}

// ---------------------------------------------------------------- thread level

ThreadBuilder::ThreadBuilder(const std::vector<Tensor>& inputs) {
  for (const Tensor& t : inputs) {
    const auto id = static_cast<TensorId>(g_.tensors.size());
    // Thread inputs reuse the block tensors' names; duplicates (the same tensor passed twice)
    // keep the first binding.
    if (!names_.find(t.name)) names_.bind(t.name, id);
    g_.tensors.push_back(t);
    g_.inputs.push_back(id);
  }
}

Result<TensorId> ThreadBuilder::op(OpKind op, const std::vector<TensorId>& inputs,
                                   const OpAttrs& attrs, const std::string& name) {
  if (!(op_info(op).levels & kLevelT))
    return error(op_name(op), ": not allowed in a thread graph (element-wise ops only)");
  std::vector<TensorType> types;
  for (TensorId id : inputs) {
    if (id < 0 || static_cast<size_t>(id) >= g_.tensors.size())
      return error(op_name(op), ": unknown thread tensor #", id);
    types.push_back(g_.tensors[static_cast<size_t>(id)].type);
  }
  MG_ASSIGN_OR_RETURN(TensorType type, infer_type(op, attrs, types));
  MG_ASSIGN_OR_RETURN(std::string n, names_.claim(name, g_.tensors.size(), g_.tensors));
  const auto id = static_cast<TensorId>(g_.tensors.size());
  g_.tensors.push_back({n, type});
  names_.bind(n, id);
  g_.nodes.push_back({op, attrs, inputs, id});
  return id;
}

Status ThreadBuilder::output(TensorId id) {
  if (id < 0 || static_cast<size_t>(id) >= g_.tensors.size())
    return error("thread graph output: unknown tensor #", id);
  g_.outputs.push_back(id);
  return ok_status();
}

Result<std::shared_ptr<const ThreadGraph>> ThreadBuilder::finish() && {
  if (g_.outputs.empty()) return error("thread graph has no outputs");
  if (g_.nodes.empty()) return error("thread graph has no ops");
  return std::make_shared<const ThreadGraph>(std::move(g_));
}

// ---------------------------------------------------------------- kernel level

Result<TensorId> KernelBuilder::add_tensor(const std::string& name, TensorType type) {
  MG_ASSIGN_OR_RETURN(std::string n, names_.claim(name, g_.tensors.size(), g_.tensors));
  const auto id = static_cast<TensorId>(g_.tensors.size());
  g_.tensors.push_back({n, std::move(type)});
  names_.bind(n, id);
  return id;
}

Status KernelBuilder::check_ids(const std::vector<TensorId>& ids) const {
  for (TensorId id : ids)
    if (id < 0 || static_cast<size_t>(id) >= g_.tensors.size())
      return error("unknown tensor #", id);
  return ok_status();
}

namespace {

Status check_scale(const std::string& name, double scale) {
  if (!(std::isfinite(scale) && scale > 0))
    return error("input '", name, "': scale must be a finite number > 0, got ", scale);
  return ok_status();
}

// Keeps KernelGraph::input_scales empty while no input sets a scale, else one per input.
void put_scale(KernelGraph& g, size_t i, double scale) {
  if (scale == 0 && g.input_scales.empty()) return;
  g.input_scales.resize(g.inputs.size(), 0);
  g.input_scales[i] = scale;
}

}  // namespace

Result<TensorId> KernelBuilder::input(const std::string& name, const TensorType& type,
                                      double scale) {
  if (type.shape.rank < 1 || type.shape.rank > kMaxRank)
    return error("input '", name, "': rank must be 1..", kMaxRank);
  MG_RETURN_IF_ERROR(check_shape(type.shape).with_context("input '" + name + "': "));
  MG_RETURN_IF_ERROR(check_layout(type.shape, type.layout).with_context("input '" + name + "': "));
  if (scale != 0) MG_RETURN_IF_ERROR(check_scale(name, scale));
  MG_ASSIGN_OR_RETURN(TensorId id, add_tensor(name, type));
  g_.inputs.push_back(id);
  put_scale(g_, g_.inputs.size() - 1, scale);
  return id;
}

Status set_input_scale(KernelGraph& g, const std::string& name, double scale) {
  std::string known;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const std::string& n = g.tensor(g.inputs[i]).name;
    if (n == name) {
      MG_RETURN_IF_ERROR(check_scale(name, scale));
      put_scale(g, i, scale);
      return ok_status();
    }
    known += (i ? ", " : "") + n;
  }
  return error("no input named '", name, "' (the inputs are ", known, ")");
}

Result<TensorId> KernelBuilder::op(OpKind op, const std::vector<TensorId>& inputs,
                                   const OpAttrs& attrs, const std::string& name) {
  if (!(op_info(op).levels & kLevelK))
    return error(op_name(op), ": not available as a kernel operator");
  MG_RETURN_IF_ERROR(check_ids(inputs));
  std::vector<TensorType> types;
  for (TensorId id : inputs) types.push_back(g_.tensor(id).type);
  MG_ASSIGN_OR_RETURN(TensorType type, infer_type(op, attrs, types));
  MG_ASSIGN_OR_RETURN(TensorId out, add_tensor(name, type));
  g_.ops.push_back({false, op, attrs, inputs, {out}, nullptr});
  return out;
}

Result<std::vector<TensorId>> KernelBuilder::copy(const KernelOp& op,
                                                  const std::vector<TensorId>& inputs,
                                                  const std::vector<std::string>& names) {
  if (op.graph_defined) return graph_defined(inputs, op.block, names);
  MG_ASSIGN_OR_RETURN(TensorId t, this->op(op.op, inputs, op.attrs, names.empty() ? "" : names[0]));
  return std::vector<TensorId>{t};
}

Result<std::vector<TensorId>> KernelBuilder::graph_defined(
    const std::vector<TensorId>& inputs, std::shared_ptr<const BlockGraph> block,
    const std::vector<std::string>& names) {
  MG_CHECK(block != nullptr);
  MG_RETURN_IF_ERROR(check_ids(inputs));
  if (inputs.size() != block->input_types.size())
    return error("graph_defined: block graph has ", block->input_types.size(), " inputs, op has ",
                 inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorType& t = g_.tensor(inputs[i]).type;
    const TensorType& b = block->input_types[i];
    if (t.dtype != b.dtype || !(t.shape == b.shape))
      return error("graph_defined: input ", i, " '", g_.tensor(inputs[i]).name, "' is ",
                   t.to_string(), " but the block graph expects ", b.to_string());
  }
  if (!names.empty() && names.size() != block->output_types.size())
    return error("graph_defined: ", names.size(), " output names for ",
                 block->output_types.size(), " output savers");
  KernelOp op{true, OpKind::kAdd, {}, inputs, {}, block};
  for (size_t i = 0; i < block->output_types.size(); ++i) {
    MG_ASSIGN_OR_RETURN(TensorId id,
                        add_tensor(names.empty() ? "" : names[i], block->output_types[i]));
    op.outputs.push_back(id);
  }
  std::vector<TensorId> outs = op.outputs;
  g_.ops.push_back(std::move(op));
  return outs;
}

Status KernelBuilder::output(TensorId id) {
  MG_RETURN_IF_ERROR(check_ids({id}));
  if (std::count(g_.outputs.begin(), g_.outputs.end(), id))
    return error("tensor '", g_.tensor(id).name, "' is already an output");
  if (std::count(g_.inputs.begin(), g_.inputs.end(), id))
    return error("input '", g_.tensor(id).name, "' cannot also be an output");
  g_.outputs.push_back(id);
  return ok_status();
}

Result<KernelGraph> KernelBuilder::finish() && {
  if (g_.inputs.empty()) return error("kernel graph has no inputs");
  if (g_.outputs.empty()) return error("kernel graph has no outputs");
  return std::move(g_);
}

}  // namespace mugraph::ir
