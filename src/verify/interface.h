// Whether two uGraphs can be compared at all: same inputs, same number of outputs of equal shapes.
#pragma once

#include "ir/graph.h"

namespace mugraph::verify {

// Ok iff `a` and `b` take the same inputs (names, dtypes, shapes, in order) and produce the same
// number of outputs with equal shapes; else names the first mismatch.
Status check_same_interface(const ir::KernelGraph& a, const ir::KernelGraph& b);

// Ok iff `a` and `b` take the same inputs (names, dtypes, shapes, in order).
Status check_same_inputs(const ir::KernelGraph& a, const ir::KernelGraph& b);

// Ok iff both have the same number of outputs and the same multiset of output shapes (the
// verifier matches outputs up to a permutation).
Status check_output_shapes(const ir::KernelGraph& a, const ir::KernelGraph& b);

}  // namespace mugraph::verify
