#include "ir/lexer.h"

#include <cctype>
#include <charconv>
#include <cstring>

namespace mugraph::ir {

std::string Token::describe() const {
  return kind == kEnd ? std::string("end of input") : "'" + text + "'";
}

namespace {

// An unexpected character at src[i], for an error message: a whole UTF-8 sequence with its code
// point (never a lone byte of one: that would make the message itself invalid UTF-8), a control
// or invalid byte as \xNN.
std::string describe_char(const std::string& src, size_t i) {
  const auto b = static_cast<unsigned char>(src[i]);
  auto hex = [](unsigned v, int digits) {
    static const char* kHex = "0123456789ABCDEF";
    std::string h;
    for (int d = digits - 1; d >= 0; --d) h += kHex[(v >> (4 * d)) & 15];
    return h;
  };
  if (b >= 0x20 && b < 0x7f) return "'" + std::string(1, src[i]) + "'";
  const int len = b >= 0xf0 && b < 0xf8 ? 4 : b >= 0xe0 ? 3 : b >= 0xc2 && b < 0xe0 ? 2 : 0;
  if (len > 0 && i + static_cast<size_t>(len) <= src.size()) {
    unsigned cp = b & (0x7f >> len);
    bool ok = true;
    for (int k = 1; k < len; ++k) {
      const auto c = static_cast<unsigned char>(src[i + static_cast<size_t>(k)]);
      ok = ok && (c & 0xc0) == 0x80;
      cp = (cp << 6) | (c & 0x3f);
    }
    if (ok)
      return "'" + src.substr(i, static_cast<size_t>(len)) + "' (U+" + hex(cp, cp > 0xffff ? 6 : 4) +
             "; names are ASCII letters, digits, '_' and '.')";
  }
  return "byte \\x" + hex(b, 2) + (b >= 0x80 ? " (not valid UTF-8)" : "");
}

// Where a decimal's fraction and exponent end, given that its integer digits end at j: j itself
// when none follows ('.' and 'e' count only when digits follow them, so `1e` stays 1 and e).
size_t decimal_end(const std::string& src, size_t j) {
  auto digit = [&](size_t k) {
    return k < src.size() && std::isdigit(static_cast<unsigned char>(src[k]));
  };
  size_t k = j;
  if (k < src.size() && src[k] == '.' && digit(k + 1)) {
    k += 1;
    while (digit(k)) ++k;
  }
  if (k < src.size() && (src[k] == 'e' || src[k] == 'E')) {
    size_t e = k + 1;
    if (e < src.size() && (src[e] == '+' || src[e] == '-')) ++e;
    if (digit(e)) {
      while (digit(e)) ++e;
      k = e;
    }
  }
  return k;
}

}  // namespace

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
      const size_t real_end = decimal_end(src, j);
      // A number running on into another point or digits after its end ("1.2.3", "1.e5",
      // "2.5.") is one malformed number, said whole rather than as a stray '.'.
      if (real_end < src.size() && src[real_end] == '.') {
        size_t e = real_end;
        while (e < src.size() && (std::isalnum(static_cast<unsigned char>(src[e])) || src[e] == '.' ||
                                  ((src[e] == '+' || src[e] == '-') && (src[e - 1] == 'e' || src[e - 1] == 'E'))))
          ++e;
        return error(line, ":", col, ": malformed number '", src.substr(i, e - i),
                     "' (a decimal is digits, one '.' and digits, then an optional exponent: 0.5, 1e-3, 2.5E+4)");
      }
      if (real_end > j) {  // a decimal: 0.02, 1e-3, 2.5E+4
        j = real_end;
        t.kind = Token::kReal;
        const auto res = std::from_chars(src.data() + i, src.data() + j, t.real);
        if (res.ec != std::errc() || res.ptr != src.data() + j)
          return error(line, ":", col, ": number '", src.substr(i, j - i), "' is out of range");
      } else {
        t.kind = Token::kInt;
        const auto res = std::from_chars(src.data() + i, src.data() + j, t.value);
        if (res.ec != std::errc())
          return error(line, ":", col, ": integer '", src.substr(i, j - i), "' is out of range");
      }
    } else if (c != '\0' && std::strchr("()[]{},=:/", c) != nullptr) {
      j = i + 1;
      t.kind = Token::kPunct;
    } else if (c == '.' && i + 1 < src.size() && std::isdigit(static_cast<unsigned char>(src[i + 1]))) {
      size_t e = i + 1;
      while (e < src.size() && std::isdigit(static_cast<unsigned char>(src[e]))) ++e;
      return error(line, ":", col, ": number '", src.substr(i, e - i), "' needs a digit before the point: write 0",
                   src.substr(i, e - i));
    } else {
      return error(line, ":", col, ": unexpected character ", describe_char(src, i));
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
