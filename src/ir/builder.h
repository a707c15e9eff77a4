// Builders: the only way to make a uGraph. Each call checks the operator's specification
// (shapes, dtypes, maps, phases) and returns a clear error instead of adding an invalid node, so
// a finished graph satisfies Mirage Def. 2.1 (1) and (3). Memory limits (Def. 2.1 (2)) depend on
// the target and are checked by check_memory (ir/memory.h).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace mugraph::ir {

// Scope of unique tensor names shared by the three builders.
class NameScope {
 public:
  // Returns `name` (or "t<next>" when empty) after checking it is new. An explicit name that
  // an earlier automatic name took (a composite's temporaries are "t1", "t2", ... and a program
  // may name a tensor "t1" after them) is freed: the earlier tensor of `tensors` is renamed.
  Result<std::string> claim(const std::string& name, size_t next_index, std::vector<Tensor>& tensors);
  std::optional<TensorId> find(const std::string& name) const;
  void bind(const std::string& name, TensorId id) { ids_[name] = id; }

 private:
  std::map<std::string, TensorId> ids_;
  std::set<std::string> automatic_;  // names claimed empty
};

class ThreadBuilder {
 public:
  // `inputs` are the enclosing node's input tensors; they become the thread inputs by name.
  explicit ThreadBuilder(const std::vector<Tensor>& inputs);
  Result<TensorId> op(OpKind op, const std::vector<TensorId>& inputs, const OpAttrs& attrs = {},
                      const std::string& name = "");
  Status output(TensorId id);
  Result<std::shared_ptr<const ThreadGraph>> finish() &&;
  const ThreadGraph& graph() const { return g_; }
  std::optional<TensorId> find(const std::string& name) const { return names_.find(name); }

 private:
  ThreadGraph g_;
  NameScope names_;
};

class BlockBuilder {
 public:
  // Fails if a grid dim or the for-loop range is < 1.
  static Result<BlockBuilder> make(std::vector<TensorType> input_types, Dim3 grid,
                                   int64_t forloop);
  Result<TensorId> input_iterator(int input_index, const DimMap& imap, int fmap,
                                  const std::string& name = "");
  Result<TensorId> op(OpKind op, const std::vector<TensorId>& inputs, const OpAttrs& attrs = {},
                      const std::string& name = "");
  Result<std::vector<TensorId>> thread_graph(const std::vector<TensorId>& inputs,
                                             std::shared_ptr<const ThreadGraph> tg,
                                             const std::vector<std::string>& names = {});
  Result<TensorId> accumulator(TensorId input, int fmap, const std::string& name = "");
  Status output_saver(TensorId input, const DimMap& omap);
  Result<std::shared_ptr<const BlockGraph>> finish() &&;

  const BlockGraph& graph() const { return g_; }
  std::optional<TensorId> find(const std::string& name) const { return names_.find(name); }
  // The tensors named by `ids`, for handing to a ThreadBuilder.
  std::vector<Tensor> tensors_of(const std::vector<TensorId>& ids) const;

 private:
  BlockBuilder() = default;
  Status check_ids(const std::vector<TensorId>& ids, const char* what) const;
  Result<Phase> common_phase(const std::vector<TensorId>& ids, const std::string& what) const;
  Result<TensorId> add_tensor(const std::string& name, TensorType type, Phase phase);

  BlockGraph g_;
  NameScope names_;
};

class KernelBuilder {
 public:
  // `scale`: the scale of the input's random values (KernelGraph::input_scales), 0 = unset;
  // otherwise it must be finite and > 0.
  Result<TensorId> input(const std::string& name, const TensorType& type, double scale = 0);
  Result<TensorId> op(OpKind op, const std::vector<TensorId>& inputs, const OpAttrs& attrs = {},
                      const std::string& name = "");
  // Adds a graph-defined op; `names` names its outputs (empty: generated).
  Result<std::vector<TensorId>> graph_defined(const std::vector<TensorId>& inputs,
                                              std::shared_ptr<const BlockGraph> block,
                                              const std::vector<std::string>& names = {});
  // Adds a copy of `op` (predefined or graph-defined, from another graph) reading `inputs` (ids
  // in this builder, one per op input) and naming its outputs `names`; returns their ids.
  Result<std::vector<TensorId>> copy(const KernelOp& op, const std::vector<TensorId>& inputs,
                                     const std::vector<std::string>& names);
  Status output(TensorId id);
  Result<KernelGraph> finish() &&;

  const KernelGraph& graph() const { return g_; }
  std::optional<TensorId> find(const std::string& name) const { return names_.find(name); }

 private:
  Status check_ids(const std::vector<TensorId>& ids) const;
  Result<TensorId> add_tensor(const std::string& name, TensorType type);

  KernelGraph g_;
  NameScope names_;
};

// Sets the scale of the random values of g's input `name` (what `--input-scale NAME=S` does to
// a loaded program). Errors: no input of that name (the message lists the inputs), or a scale
// that is not finite and > 0.
Status set_input_scale(KernelGraph& g, const std::string& name, double scale);

}  // namespace mugraph::ir
