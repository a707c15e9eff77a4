// Tokens of the uGraph text format (see ir/text.h for the grammar).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/status.h"

namespace mugraph::ir {

struct Token {
  enum Kind { kIdent, kInt, kReal, kPunct, kEnd } kind = kEnd;
  std::string text;  // identifier / punctuation character / digits
  int64_t value = 0;  // kInt
  double real = 0;    // kReal: a decimal with '.' or an exponent (0.02, 1e-3; input scales)
  int line = 1, col = 1;

  std::string describe() const;  // "'x'", "end of input"
  std::string where() const { return std::to_string(line) + ":" + std::to_string(col); }
};

// Splits `src` into tokens; `#` starts a comment to end of line. Errors give line:column.
Result<std::vector<Token>> lex(const std::string& src);

}  // namespace mugraph::ir
