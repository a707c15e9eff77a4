// Structural canonical hash of a uGraph, for deduplicating search results.
//
// Each tensor hashes its definition (operator, attributes, maps, grid, range and the hashes of
// its inputs; inputs of add and mul are sorted), so the hash is insensitive to the order of
// ops that does not matter (two topological orders of one DAG) and to tensor names, and
// sensitive to everything that changes what is computed or how (maps, grid, loop, fusion).
// Graph hash: its outputs' hashes in output order.
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace mugraph::ir {

uint64_t canonical_hash(const KernelGraph& g);


}  // namespace mugraph::ir
