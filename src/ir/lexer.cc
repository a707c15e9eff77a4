#include "ir/lexer.h"

#include <cctype>
#include <charconv>
#include <cstring>

namespace mugraph::ir {

std::string Token::describe() const {
  return kind == kEnd ? std::string("end of input") : "'" + text + "'";
}

Result<std::vector<Token>> lex(const std::string& src) {
  std::vector<Token> out;
  int line = 1, col = 1;
  size_t i = 0;
  auto advance = [&](size_t n) {
    for (size_t k = 0; k < n; ++k, ++i) {
      if (src[i] == '\n') ++line, col = 1;
      else ++col;
    }
  };
  while (i < src.size()) {
    const char c = src[i];
    if (c == '#') {
      while (i < src.size() && src[i] != '\n') advance(1);
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      advance(1);
      continue;
    }
    Token t;
    t.line = line;
    t.col = col;
    size_t j = i;
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      while (j < src.size() && (std::isalnum(static_cast<unsigned char>(src[j])) || src[j] == '_' ||
                                src[j] == '.'))
        ++j;
      t.kind = Token::kIdent;
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '-' && i + 1 < src.size() && std::isdigit(static_cast<unsigned char>(src[i + 1])))) {
      j = i + 1;
      while (j < src.size() && std::isdigit(static_cast<unsigned char>(src[j]))) ++j;
      t.kind = Token::kInt;
      const auto res = std::from_chars(src.data() + i, src.data() + j, t.value);
      if (res.ec != std::errc())
        return error(line, ":", col, ": integer '", src.substr(i, j - i), "' is out of range");
    } else if (std::strchr("()[]{},=:/", c) != nullptr) {
      j = i + 1;
      t.kind = Token::kPunct;
    } else {
      return error(line, ":", col, ": unexpected character '", std::string(1, c), "'");
    }
    t.text = src.substr(i, j - i);
    advance(j - i);
    out.push_back(std::move(t));
  }
  Token end;
  end.line = line;
  end.col = col;
  out.push_back(end);
  return out;
}

}  // namespace mugraph::ir
