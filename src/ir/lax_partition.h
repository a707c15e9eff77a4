// Lax partitioning (Mirage §4, §5.1): the search and the finite-field verifier work on Lax
// programs (multilinear ops, division, at most one exp on a path). A program is cut into
// maximal Lax subprograms; non-Lax ops (relu, gelu, and ops of graph-defined kernels already
// in the program) stay as they are between them.
//
// Levels: a tensor's level is the number of cuts on its path from the inputs. A non-Lax op
// outputs level + 1; an exp-like op (exp, silu) whose input path already holds one in the same
// level starts level + 1. A subprogram is a connected set of Lax ops of one level (connected
// through the tensors they share); two subprograms of one level never depend on each other,
// so emitting level by level (subprograms first, then the level's non-Lax ops) keeps the
// graph topologically ordered.
#pragma once

#include <vector>

#include "ir/graph.h"

namespace mugraph::ir {

struct LaxPart {
  KernelGraph program;             // inputs/outputs named as in the whole program
  std::vector<TensorId> inputs;    // whole-program tensors, in `program`'s input order
  std::vector<TensorId> outputs;   // whole-program tensors, in `program`'s output order
  std::vector<int> ops;                // whole-program op indices
  int level = 0;
};

struct Partition {
  std::vector<LaxPart> parts;
  std::vector<int> kept_ops;           // non-Lax ops, whole-program indices
  std::vector<int> kept_level;         // per kept op
};

Partition partition_lax(const KernelGraph& program);

// The ops `ops` (whole-program indices, ascending) of `program` as a program of their own: its
// inputs are the tensors they read and do not produce (in first-read order), its outputs the
// tensors they produce that a program output or another op reads (in op order). Names and
// input scales as in `program`. (A Lax part is the extraction of its ops.)
struct Extracted {
  KernelGraph program;
  std::vector<TensorId> inputs, outputs;  // whole-program tensors, in `program`'s order
};
Extracted extract_ops(const KernelGraph& program, const std::vector<int>& ops);

// The whole program with part i replaced by chosen[i] (a uGraph with part i's inputs and
// outputs, in order). Names: whole-program tensors keep theirs; a part's internal tensors are
// prefixed "p<i>_".
KernelGraph stitch(const KernelGraph& program, const Partition& p,
                       const std::vector<KernelGraph>& chosen);

}  // namespace mugraph::ir
