#include "expr/term_syntax.h"

#include <cctype>

namespace mugraph::expr {
namespace {

class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}

  Result<TermSyntax> term() {
    skip();
    TermSyntax t;
    t.column = static_cast<int>(pos_) + 1;
    while (pos_ < s_.size() && word_char(s_[pos_])) t.word += s_[pos_++];
    if (t.word.empty()) return fail("expected a term");
    skip();
    if (pos_ < s_.size() && s_[pos_] == '(') {
      t.call = true;
      ++pos_;
      while (true) {
        MG_ASSIGN_OR_RETURN(TermSyntax arg, term());
        t.args.push_back(std::move(arg));
        skip();
        if (pos_ < s_.size() && s_[pos_] == ',') {
          ++pos_;
          continue;
        }
        if (pos_ < s_.size() && s_[pos_] == ')') {
          ++pos_;
          break;
        }
        return fail("expected ',' or ')'");
      }
    }
    return t;
  }

  Status finish() {
    skip();
    if (pos_ != s_.size()) return fail("unexpected text after the term");
    return ok_status();
  }

 private:
  static bool word_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '?' || c == '*' ||
           c == '.';
  }
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  Status fail(std::string_view what) const {
    return error("column ", pos_ + 1, ": ", what, " in '", s_, "'");
  }

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

Result<TermSyntax> read_term(std::string_view text) {
  Reader r(text);
  MG_ASSIGN_OR_RETURN(TermSyntax t, r.term());
  MG_RETURN_IF_ERROR(r.finish());
  return t;
}

}  // namespace mugraph::expr
