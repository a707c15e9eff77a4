// uGraphs: one tensor program described at the kernel, block and thread levels (Mirage §2).
//
// SEMANTICS (the reference interpreter in src/verify follows this text literally)
//
// Kernel graph. Tensors live in device memory. Ops run in the stored (topological) order. A
// predefined op applies an operator from the op table (ir/ops.h) to whole tensors. A
// graph-defined op owns a block graph that defines its outputs.
//
// Block graph of a graph-defined op with inputs I_0..I_{n-1}, grid (gx, gy, gz), for-loop range R:
//   for every block index (bx, by, bz):
//     1. Block input: input j's imap maps each grid dim g to a data dim d or to phi. Data dim d is
//        cut into grid[g] equal chunks and the block takes chunk b_g; phi means every block sees
//        the whole extent (replication). Distinct grid dims map to distinct data dims.
//     2. For-loop: for i in 0..R-1, input j's iterator takes, from the block input, chunk i of R
//        along its fmap dim (or the whole block input if fmap = phi).
//        In-loop ops (those whose inputs derive from iterators) run on these tiles.
//        Each accumulator combines its in-loop input over the iterations: fmap = phi sums the
//        R values; fmap = data dim d concatenates them along d in iteration order.
//     3. Post-loop ops (those whose inputs derive from accumulators) run once on the results.
//     4. Each output saver writes its tensor to the op's output, at chunk b_g along omap(g) for
//        every grid dim g with grid[g] > 1 (such g must be mapped, to distinct data dims, since
//        blocks must write disjoint parts; size-1 grid dims may be unmapped).
//   Validity (Def. 2.1 (3)): every input-to-output path passes exactly one iterator, one
//   accumulator and one saver. We enforce it by phases: iterators produce in-loop tensors, ops
//   never mix phases, accumulators turn in-loop into post-loop tensors, and savers take post-loop
//   tensors. With R = 1 accumulators may be omitted (a saver may take an in-loop tensor).
//   Every input has exactly one iterator. Block tensors live in shared memory.
//
// Thread graph: a node of a block graph that fuses element-wise ops (those with level T in the
// op table) into one pass over registers. Its inputs are block tensors of one phase; its value
// is exactly the composition of its ops, applied element-wise with broadcasting. Each thread
// holds one element of each thread tensor at a time and loops over the block's elements.
//
// Numerics: ops are defined over the reals; the dtype (f16/bf16/f32) says how a tensor is stored.
// Layouts (ir/types.h) are storage only and never change values.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/ops.h"
#include "ir/types.h"

namespace mugraph::ir {

using TensorId = int32_t;  // index into the enclosing graph's `tensors`

struct Tensor {
  std::string name;  // unique within its graph
  TensorType type;
  bool operator==(const Tensor&) const = default;
};

// A thread graph: element-wise ops over registers.
struct ThreadGraph {
  struct Node {
    OpKind op;
    OpAttrs attrs;
    std::vector<TensorId> inputs;
    TensorId output;
    bool operator==(const Node&) const = default;
  };
  std::vector<Tensor> tensors;
  std::vector<TensorId> inputs;  // thread inputs, one per input of the enclosing block node
  std::vector<Node> nodes;       // topological order
  std::vector<TensorId> outputs;
  bool operator==(const ThreadGraph&) const = default;
};

enum class BlockNodeKind { kInputIterator, kCompute, kThreadGraph, kAccumulator, kOutputSaver };
enum class Phase { kInLoop, kPostLoop };

struct BlockNode {
  BlockNodeKind kind = BlockNodeKind::kCompute;
  OpKind op = OpKind::kAdd;  // kCompute only
  OpAttrs attrs;             // kCompute only
  std::vector<TensorId> inputs;   // empty for iterators
  std::vector<TensorId> outputs;  // empty for savers
  int input_index = -1;  // kInputIterator: which input of the graph-defined op
  DimMap imap;           // kInputIterator
  int fmap = kReplica;   // kInputIterator, kAccumulator
  DimMap omap;           // kOutputSaver
  std::shared_ptr<const ThreadGraph> thread;  // kThreadGraph
  bool operator==(const BlockNode& o) const;  // deep: compares thread graphs by value
};

struct BlockGraph {
  Dim3 grid;
  int64_t forloop = 1;
  std::vector<TensorType> input_types;   // device tensors read by the op (kernel level)
  std::vector<Tensor> tensors;           // shared-memory tensors
  std::vector<Phase> phases;             // per tensor
  std::vector<BlockNode> nodes;          // topological order
  std::vector<TensorType> output_types;  // device tensors written, in saver order
  std::vector<int> savers;               // node index of each output's saver
  bool operator==(const BlockGraph&) const = default;
};

struct KernelOp {
  bool graph_defined = false;
  OpKind op = OpKind::kAdd;  // predefined only
  OpAttrs attrs;             // predefined only
  std::vector<TensorId> inputs;
  std::vector<TensorId> outputs;
  std::shared_ptr<const BlockGraph> block;  // graph-defined only
  bool operator==(const KernelOp& o) const;  // deep: compares block graphs by value
};

struct KernelGraph {
  std::vector<Tensor> tensors;  // device tensors
  std::vector<TensorId> inputs;
  std::vector<KernelOp> ops;  // topological order
  std::vector<TensorId> outputs;
  // The scale of each input's random values where the program sets it (text `scale=`, JSON
  // "scale"; > 0), in `inputs` order, 0 where unset (then the input's role decides:
  // verify/random_inputs.h); empty when no input sets one. Not part of what the graph
  // computes: a check draws both graphs' inputs as the reference program says.
  std::vector<double> input_scales;

  const Tensor& tensor(TensorId id) const { return tensors[static_cast<size_t>(id)]; }
  double input_scale(size_t i) const { return i < input_scales.size() ? input_scales[i] : 0; }
  // Structural equality: same tensors (names, types), ops, attributes and maps, in order.
  bool operator==(const KernelGraph&) const = default;
};

std::string_view block_node_name(BlockNodeKind k);

}  // namespace mugraph::ir
