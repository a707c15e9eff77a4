// The shared reader of the term text form, used by parse_expr (ground terms) and by the axiom
// table (patterns with ?variables). It only checks the shape `word` or `word(arg, ...)`;
// the callers give words their meaning.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "support/status.h"

namespace mugraph::expr {

struct TermSyntax {
  std::string word;  // identifier, integer, ?variable or ?i*?j product
  int column = 0;    // 1-based column of the word in the text
  std::vector<TermSyntax> args;
  bool call = false;  // written with parentheses
};

// Reads one term covering the whole of `text`.
Result<TermSyntax> read_term(std::string_view text);

}  // namespace mugraph::expr
