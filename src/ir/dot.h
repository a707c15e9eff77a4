// Graphviz DOT export: kernel ops as nodes, each graph-defined op's block graph as a cluster
// (its for-loop body in a nested cluster), thread graphs as record nodes listing their ops.
#pragma once

#include <string>

#include "ir/graph.h"

namespace mugraph::ir {

std::string to_dot(const KernelGraph& g);

}  // namespace mugraph::ir
