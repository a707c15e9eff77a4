// The text format: parse errors with line:column, and print/parse round trips.
#include "ir/builder.h"
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

// A decimal factor is the exact rational it writes (reduced); one that needs more than 64 bits
// is an error that says to write a fraction.
TEST(Text, DecimalFactorsAreExact) {
  const std::pair<const char*, Rational> cases[] = {
      {"0.125", {1, 8}},       {"0.0883883", {883883, 10000000}}, {"1e-3", {1, 1000}},
      {"2.5E+3", {2500, 1}},   {"-0.5", {-1, 2}},                 {"3.0", {3, 1}},
      {"0e9", {0, 1}},         {"100.000e-2", {1, 1}},
  };
  for (const auto& [lit, want] : cases) {
    SCOPED_TRACE(lit);
    const KernelGraph g =
        parse_ok(std::string("input X : f32[2]\nY = scale(X, factor=") + lit + ")\noutput Y\n");
    EXPECT_EQ(g.ops[0].attrs.factor, want) << g.ops[0].attrs.factor.to_string();
    EXPECT_EQ(parse_ok(print_graph(g)), g);  // printed as a fraction, read back the same
  }
  for (const char* lit : {"0.1234567890123456789", "1e-19", "1e400", "12345678901e10", "0e99"}) {
    SCOPED_TRACE(lit);
    const std::string msg =
        parse_error(std::string("input X : f32[2]\nY = scale(X, factor=") + lit + ")\noutput Y\n");
    EXPECT_TRUE(msg.find("is not exact in 64-bit integers") != std::string::npos ||
                msg.find("out of range") != std::string::npos)
        << msg;
  }
}

TEST(Text, MalformedDecimalsSayWhatIsWrong) {
  const std::pair<const char*, const char*> cases[] = {
      {"1.2.3", "2:21: malformed number '1.2.3' (a decimal is digits, one '.' and digits"},
      {"2.5.", "2:21: malformed number '2.5.'"},
      {"1.e5", "2:21: malformed number '1.e5'"},
      {".5", "2:21: number '.5' needs a digit before the point: write 0.5"},
  };
  for (const auto& [lit, want] : cases) {
    SCOPED_TRACE(lit);
    const std::string msg =
        parse_error(std::string("input X : f32[2]\nY = scale(X, factor=") + lit + ")\noutput Y\n");
    EXPECT_NE(msg.find(want), std::string::npos) << msg;
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

namespace mugraph::ir {
namespace {

using mugraph::testing::parse_error;
using mugraph::testing::parse_ok;

// Issue 27, item 4: an input's `scale=` (its random values' scale) prints and parses back, in
// text and JSON, in every number form; an unset scale prints nothing.
TEST(InputScale, RoundTripsInTextAndJson) {
  const KernelGraph g = parse_ok(
      "input X : f16[16, 64] strides=[1, 16] scale=0.5\n"
      "input W : f16[64, 32] scale=0.02\n"
      "input B : f16[16, 32]\n"
      "input C : f16[16, 32] scale=1/3\n"
      "input D : f16[16, 32] scale=1e-3\n"
      "input E : f16[16, 32] scale=1000\n"
      "H = matmul(X, W)\nS = add(H, B)\nT = add(S, C)\nU = add(T, D)\nV = add(U, E)\noutput V\n");
  EXPECT_EQ(g.input_scales, (std::vector<double>{0.5, 0.02, 0, 1.0 / 3, 1e-3, 1000}));
  const std::string text = print_graph(g);
  EXPECT_NE(text.find("input W : f16[64, 32] scale=0.02\n"), std::string::npos) << text;
  EXPECT_NE(text.find("input B : f16[16, 32]\n"), std::string::npos) << text;
  EXPECT_NE(text.find("strides=[1, 16] scale=0.5\n"), std::string::npos) << text;
  EXPECT_EQ(parse_ok(text), g);
  auto j = from_json(to_json(g));
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_EQ(*j, g);
  EXPECT_NE(to_json(g).find("\"scale\": 0.02"), std::string::npos);
  // No scale set: no field, no text, and the graph equals one built without any.
  const KernelGraph plain = parse_ok("input X : f32[4]\nY = exp(X)\noutput Y\n");
  EXPECT_TRUE(plain.input_scales.empty());
  EXPECT_EQ(to_json(plain).find("scale"), std::string::npos);
  EXPECT_NE(g, parse_ok(text.substr(0, text.find(" scale=0.02")) +
                        text.substr(text.find(" scale=0.02") + 11)));
}

// A huge whole-number scale (from JSON: 9223372036854775807.0) is printed so that the text
// parser reads it back (digits alone would be an out-of-range integer; parse_fuzz found it).
TEST(InputScale, HugeWholeNumbersRoundTrip) {
  auto j = from_json(R"({"format":"mugraph.ugraph","version":1,"inputs":[{"dtype":"f16","name":"W",)"
                     R"("scale":9223372036854775807.0,"shape":[4,4]}],"ops":[{"attrs":{},"inputs":["W"],)"
                     R"("op":"exp","output":"O"}],"outputs":["O"]})");
  ASSERT_TRUE(j.ok()) << j.status().message();
  const std::string text = print_graph(*j);
  EXPECT_NE(text.find("scale=9.223372036854776e+18"), std::string::npos) << text;
  EXPECT_EQ(parse_ok(text), *j);
  for (double scale : {1e15, 1e16, 123456789012345678.0, 1e300, 4096.0, 0.5}) {
    KernelGraph g = parse_ok("input W : f32[2]\nO = exp(W)\noutput O\n");
    ASSERT_TRUE(set_input_scale(g, "W", scale).ok());
    EXPECT_EQ(parse_ok(print_graph(g)), g) << print_graph(g);
  }
}

TEST(InputScale, MustFail) {
  const std::pair<const char*, const char*> cases[] = {
      {"input X : f32[2] scale=0\n", "1:24: scale must be a finite number > 0"},
      {"input X : f32[2] scale=-2\n", "1:24: scale must be a finite number > 0"},
      {"input X : f32[2] scale=1/0\n", "1:24: scale must be a finite number > 0"},
      {"input X : f32[2] scale=1e999\n", "1:24: number '1e999' is out of range"},
      {"input X : f32[2] scale=[1]\n",
       "1:24: expected a number after 'scale=' (0.02, 1/64, 1e-3), found '['"},
      {"input X : f32[2]\nY = scale(X, factor=0.1234567890123456789)\n",
       "2:21: '0.1234567890123456789' is not exact in 64-bit integers"},
      {"input X : f32[2]\nY = scale(X, factor=$)\n", "2:21: unexpected character '$'"},
  };
  for (const auto& [text, want] : cases)
    EXPECT_NE(parse_error(text).find(want), std::string::npos)
        << text << " -> " << parse_error(text);
  // JSON: a scale that is not a positive number names its path.
  const std::string json = to_json(parse_ok("input X : f32[2] scale=2\nY = exp(X)\noutput Y\n"));
  std::string bad = json;
  bad.replace(bad.find("\"scale\": 2.0"), 12, "\"scale\": -1");
  auto r = from_json(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(
                "inputs[0].scale: scale of input 'X' must be a finite number > 0"),
            std::string::npos)
      << r.status().message();
}

// `scale` stays usable as a tensor name and as the op: `scale = scale(X, ...)` after an input
// is the next statement, not the input's scale.
TEST(InputScale, ScaleAsANameStillParses) {
  const KernelGraph g = parse_ok("input X : f32[2]\nscale = scale(X, factor=2)\noutput scale\n");
  EXPECT_TRUE(g.input_scales.empty());
  EXPECT_EQ(g.ops.size(), 1u);
  EXPECT_EQ(parse_ok(print_graph(g)), g);
}

TEST(InputScale, SetByNameWithClearErrors) {
  KernelGraph g = parse_ok("input X : f32[2]\ninput W : f32[2]\nY = add(X, W)\noutput Y\n");
  ASSERT_TRUE(set_input_scale(g, "W", 0.25).ok());
  EXPECT_EQ(g.input_scales, (std::vector<double>{0, 0.25}));
  EXPECT_EQ(set_input_scale(g, "Q", 1).message(), "no input named 'Q' (the inputs are X, W)");
  EXPECT_NE(set_input_scale(g, "X", 0).message().find("scale must be a finite number > 0"),
            std::string::npos);
  EXPECT_NE(set_input_scale(g, "Y", 1).message().find("no input named 'Y'"), std::string::npos);
}

}  // namespace
}  // namespace mugraph::ir
