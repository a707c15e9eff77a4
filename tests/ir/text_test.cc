// The text format: parse errors with line:column, and print/parse round trips.
#include "ir/json.h"
#include "test_util.h"

namespace mugraph::ir {
namespace {

using mugraph::testing::example_names;
using mugraph::testing::example_path;
using mugraph::testing::parse_error;
using mugraph::testing::parse_ok;
using mugraph::testing::read_file;

TEST(Text, ParseErrorsNameLineAndColumn) {
  const std::pair<const char*, const char*> cases[] = {
      {"input X : f64[2]\n", "1:11: unknown dtype 'f64' (expected f16, bf16 or f32)"},
      {"input X : f32[2]\nY = exp(X\n", "3:1: expected ')' to close the argument list, found end of input"},
      {"input X : f32[2]\nY = exp(X)\noutput Y $\n", "3:10: unexpected character '$'"},
      {"input X : f32[2]\n  Y exp(X)\n", "2:5: expected '=' after the result names, found 'exp'"},
      {"input X : f32[2\n", "2:1: expected ']' to close the list"},
      {"input X : f32[2]\nY = scale(X, factor=1/)\n", "2:23: expected a denominator after '/', found ')'"},
      {"input X : f32[2]\nY = exp(dim=1, X)\n", "2:16: positional argument after attributes"},
      {"input X : f32[2]\nY = scale(X, factor=1, factor=2)\n", "2:24: attribute 'factor' given twice"},
      {"input X : f32[2]\nY = graph_defined(X, grid=[1], forloop=1) {\n  x = input_iterator(X, imap={}, fmap=phi)\n",
       "4:1: expected '}' to close the block graph"},
      {"input X : f32[2]\nY = exp(X)\noutput Z\n", "3:1: output 'Z' is not defined"},
      {"input X : f32[99999999999999999999]\n", "1:15: integer '99999999999999999999' is out of range"},
      {"input X : f32[2]\nY = reshape(X, shape=phi)\noutput Y\n", "2:16: attribute 'shape' has the wrong kind of value"},
  };
  for (const auto& [text, want] : cases) {
    const std::string msg = parse_error(text);
    EXPECT_NE(msg.find(want), std::string::npos) << "want: " << want << "\ngot:  " << msg;
  }
}

TEST(Text, CommentsAndWhitespaceAreIgnored) {
  KernelGraph a = parse_ok("input X : f32[2]   # the input\n\n  Y = exp(X) # op\noutput Y");
  KernelGraph b = parse_ok("input X:f32[2] Y=exp(X) output Y");
  EXPECT_EQ(a, b);
}

TEST(Text, EveryExampleRoundTrips) {
  for (const std::string& name : example_names()) {
    SCOPED_TRACE(name);
    KernelGraph g = parse_ok(read_file(example_path(name)));
    const std::string printed = print_graph(g);
    KernelGraph again = parse_ok(printed);
    EXPECT_EQ(again, g);                     // parse(print(g)) == g
    EXPECT_EQ(print_graph(again), printed);  // printing is canonical
  }
}

// Replaces the first `from` in `text` by `to` (the test fails if `from` is absent).
std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

TEST(Text, EqualityIsStructural) {
  const std::string fa = read_file(example_path("gqa.flash_attention"));
  EXPECT_NE(parse_ok(replace_once(fa, "grid=[2, 4, 1]", "grid=[2, 2, 1]")), parse_ok(fa));
  const std::string mlp = read_file(example_path("gated_mlp.fused"));
  // A change inside a thread graph is a different graph too (deep comparison).
  EXPECT_NE(parse_ok(replace_once(mlp, "s = silu", "s = gelu")), parse_ok(mlp));
}

}  // namespace
}  // namespace mugraph::ir
