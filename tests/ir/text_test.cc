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

namespace mugraph::ir {
namespace {

// Found by bench/parse_fuzz under UBSan: the row-major strides of a shape with a huge negative
// dim overflowed (signed) before the shape check rejected it. Now the check's error is all.
TEST(Text, HugeNegativeDimIsAnErrorNotOverflow) {
  const std::string msg = mugraph::testing::parse_error(
      "input X : f16[128, -9223372036854775808]\noutput X\n");
  EXPECT_NE(msg.find("has dim 1 < 1"), std::string::npos) << msg;
}

}  // namespace
}  // namespace mugraph::ir

namespace mugraph::ir {
namespace {

// Found by bench/parse_fuzz: an input declared after an op parsed, but the printer lists inputs
// first, so parse(print(g)) numbered the tensors differently and was a different graph. The
// canonical order is the only one accepted.
TEST(Text, InputAfterAnOpIsAnError) {
  const std::string msg = mugraph::testing::parse_error(
      "input X : f32[2]\nY = exp(X)\ninput W : f32[2]\nZ = add(Y, W)\noutput Z\n");
  EXPECT_NE(msg.find("3:1: input 'W' follows an op (at 2:1): inputs must come before ops"),
            std::string::npos)
      << msg;
}

// Tensor names that are also words of the grammar, where the printer puts them (found by
// bench/parse_fuzz through the JSON loader, which the text parser then refused): the first op's
// result right after the inputs named 'strides' (read as an input's strides=[...]), and a thread
// op's result named 'output' (read as the thread graph's output list).
TEST(Text, GrammarWordsAsNamesRoundTrip) {
  const char* const programs[] = {
      "input X : f32[2]\nstrides = exp(X)\noutput strides\n",
      "input X : f32[2] strides=[1]\nstrides = exp(X)\noutput strides\n",
      "input X : f32[4]\nY = graph_defined(X, grid=[1, 1, 1], forloop=1) {\n"
      "  x = input_iterator(X, imap={}, fmap=phi)\n  a = accumulator(x, fmap=phi)\n"
      "  output = thread_graph(a) {\n    output = exp(a)\n    output output\n  }\n"
      "  output_saver(output, omap={})\n}\noutput Y\n",
  };
  for (const char* text : programs) {
    SCOPED_TRACE(text);
    const KernelGraph g = parse_ok(text);
    EXPECT_EQ(parse_ok(print_graph(g)), g);
  }
  // A malformed strides list is still reported as one.
  EXPECT_NE(mugraph::testing::parse_error("input X : f32[2] strides=[1, 2]\n")
                .find("1:26: strides must be a list of 1 integers"),
            std::string::npos);
}

}  // namespace
}  // namespace mugraph::ir
