// INDEX LABELS. Every dim of every tensor carries the class of the program index it ranges
// over (X[m, k], G[k], W[k, n]: matmul and broadcasting unify the classes of the dims they
// pair). The abstract expressions forget which dim an op works along; labels remember it, so
// an op that pairs two different indices (multiplies X's rows with G's columns) or sums over
// an index the program never sums over is discarded, and a block graph's grid dims, loop and
// output maps must each follow one index. -1: a dim of size 1; kAnyLabel: unknown (after
// reshape, repeat, concat), matches anything.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace mugraph::search {

constexpr int kAnyLabel = -2;
using Labels = std::array<int, ir::kMaxRank>;

struct IndexClasses {  // union-find over index labels (building the program's classes)
  std::vector<int> parent;
  int make();
  int find(int x);
};

struct LabelResult {
  Labels out;
  int reduced[2] = {-1, -1};  // index classes summed over by the op
  // Per reduction: the indices its summand ranges over (labels >= 0 of the operands), bit c
  // for class c; `summand_any` when an operand has an unknown (kAnyLabel) dim or a class
  // beyond kMaxSummandClass (the set is then not checked).
  uint64_t summand[2] = {0, 0};
  bool summand_any[2] = {false, false};
};
constexpr int kMaxSummandClass = 63;

// A sum of the program: the index class summed over and the classes its summand ranges over.
struct SumShape {
  int index = -1;
  uint64_t summand = 0;
  auto operator<=>(const SumShape&) const = default;
};

// Labels of the output of `op` applied to inputs of types `t` with labels `l`. With `uf`, pairs
// of labels are unified (building the program's classes); without, they must be equal, and
// nullopt says they are not.
std::optional<LabelResult> propagate_labels(ir::OpKind op, const ir::OpAttrs& attrs,
                                            const std::vector<ir::TensorType>& t,
                                            const std::vector<Labels>& l,
                                            const ir::TensorType& out, IndexClasses* uf);

struct ProgramLabels {
  std::vector<Labels> inputs;  // per program input, canonical classes
  std::vector<bool> reduced;   // per class: does the program sum over it?
  std::vector<int> reductions; // per class: how many of the program's reductions sum over it
  // Per class: does every program output depend on a sum over it? A last block graph whose
  // grid splits such an index can never produce the outputs (each block sees part of the sum).
  std::vector<bool> reduced_by_every_output;
  // The program's sums with a non-multilinear operand (exp, div, square...: P[m, t] in
  // sum_t P[m, t] V[t, d]), canonical classes, sorted and distinct; and per class, whether
  // some sum over it has multilinear operands only (a matmul of inputs, of products...). A sum
  // over an index of the first kind only cannot be regrouped: a candidate's sum over it must
  // range over the same indices as one of them (sum_t V[t, d] cannot be part of the program's
  // computation). Sums of multilinear operands may be regrouped (X (A B) for (X A) B).
  std::vector<SumShape> rigid_sums;
  std::vector<bool> freely_summed;
};
// A fresh label per input dim of size > 1, unified by the program's ops.
// Precondition: `program` is valid.
ProgramLabels program_labels(const ir::KernelGraph& program);

}  // namespace mugraph::search
