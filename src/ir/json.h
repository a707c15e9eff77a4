// Versioned JSON save/load of any uGraph. Loading goes through the builders, so a JSON file gets
// exactly the checks a text program gets; errors name the JSON path ("ops[2].nodes[0]: ...").
#pragma once

#include <string>

#include "ir/graph.h"

namespace mugraph::ir {

// Format identifier and version written into every file. Bump the version on any change that
// an older loader would misread; load_json refuses versions it does not know.
inline constexpr const char* kJsonFormat = "mugraph.ugraph";
inline constexpr int kJsonVersion = 1;

std::string to_json(const KernelGraph& g, int indent = 2);
Result<KernelGraph> from_json(const std::string& text);

}  // namespace mugraph::ir
