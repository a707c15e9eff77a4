// Retiling a graph-defined kernel: the same block graph on another grid and for-loop range
// (MCFuser's tile tuning applied to a structure the Mirage search found, issue 23).
//
// Every node is replayed with its maps; the tile shapes follow from the new grid and range.
// A sum that reduced its input's whole tile along a dim the grid does not cut (a dim streamed
// by the loop, or whole in every block) still does (group = the new extent); a sum along a dim
// the grid cuts (a sum per chunk of the data) or over part of its tile keeps its group. Thread
// graphs are rebuilt on the new tiles. The result is a candidate, not a proof: where a whole-
// tile sum feeds a concatenating accumulator, following the tile changes what it computes.
// Optimize checks every variant's run against the program's and certifies before handing one
// out.
//
// Fails (with the reason) where the new sizes do not cut the data evenly (the builder's
// message), where an op carries tile shapes (reshape), where a repeat or concat runs along a
// dim the grid cuts and the grid changes, where a kept group no longer divides its tile, or
// where the kernel's outputs would change type.
//
// retile_neighbours: for each graph-defined kernel, the retilings that halve or double one
// grid dim or the for-loop range (those that succeed), each with the kernel index.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "support/status.h"

namespace mugraph::opt {

Result<ir::KernelGraph> retile(const ir::KernelGraph& g, size_t op, const ir::Dim3& grid,
                               int64_t forloop);

struct Retiled {
  ir::KernelGraph graph;
  std::string change;  // "kernel 0: grid [4, 2, 1] -> [8, 2, 1]"
};
std::vector<Retiled> retile_neighbours(const ir::KernelGraph& g);

}  // namespace mugraph::opt
