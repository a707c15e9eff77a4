// JSON save/load: round trips over every example and must-fail cases.
#include "ir/json.h"
#include "ir/canonical.h"
#include "ir/text.h"
#include "test_util.h"

namespace mugraph::ir {
namespace {

using mugraph::testing::example_names;
using mugraph::testing::example_path;
using mugraph::testing::parse_ok;
using mugraph::testing::read_file;

TEST(Json, EveryExampleRoundTrips) {
  for (const std::string& name : example_names()) {
    SCOPED_TRACE(name);
    KernelGraph g = parse_ok(read_file(example_path(name)));
    auto back = from_json(to_json(g));
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(*back, g);
  }
}

TEST(Json, TransposeRoundTripsInJsonAndText) {
  KernelGraph g =
      parse_ok("input X : f32[2, 3, 4]\nT = transpose(X, perm=[2, 0, 1])\noutput T\n");
  auto back = from_json(to_json(g));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, g);
  EXPECT_NE(to_json(g).find("\"perm\""), std::string::npos) << to_json(g);
  EXPECT_EQ(parse_ok(print_graph(g)), g);
  // perm is part of the op's identity: two transposes of a cube differ only in it.
  KernelGraph a = parse_ok("input X : f32[3, 3, 3]\nT = transpose(X, perm=[2, 0, 1])\noutput T\n");
  KernelGraph b = parse_ok("input X : f32[3, 3, 3]\nT = transpose(X, perm=[1, 2, 0])\noutput T\n");
  EXPECT_FALSE(a == b);
  EXPECT_NE(canonical_hash(a), canonical_hash(b));  // the result cache's key
}

TEST(Json, LayoutSurvives) {
  KernelGraph g = parse_ok("input X : f16[2, 3] strides=[1, 2]\nY = exp(X)\noutput Y\n");
  auto back = from_json(to_json(g));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->tensor(back->inputs[0]).type.to_string(), "f16[2, 3] strides=[1, 2]");
}

std::string error_of(const std::string& text) {
  auto g = from_json(text);
  EXPECT_FALSE(g.ok()) << text;
  return g.ok() ? "" : g.status().message();
}

TEST(Json, MustFail) {
  const std::string good = to_json(parse_ok(read_file(example_path("gqa.flash_decoding"))), -1);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  const std::pair<std::string, std::string> cases[] = {
      {"{\"inputs\": []}", "not a uGraph file"},
      {with("\"version\":1", "\"version\":2"), "unsupported format version 2 (this mugraph reads version 1)"},
      {with("\"version\":1", "\"version\":\"one\""),
       "JSON: version: must be an integer, got a string"},
      {with("\"op\":\"matmul\"", "\"op\":\"matmull\""), "ops[0].nodes[3]: unknown operator 'matmull'"},
      {with("\"fmap\":2", "\"fmap\":7"), "ops[0].nodes[1]: input_iterator of input #1: fmap dim 7 does not exist"},
      {with("\"dtype\":\"f16\"", "\"dtype\":\"f8\""), "unknown dtype in input 'Q'"},
      {with("\"kind\":\"accumulator\"", "\"kind\":\"accumulatr\""), "unknown block node kind 'accumulatr'"},
      {with("\"outputs\":[\"O\"],\"version\"", "\"outputs\":[\"P\"],\"version\""), "unknown tensor 'P'"},
      {good.substr(0, good.size() / 2), "parse error"},
      {with("\"grid\":[2,8,2]", "\"grid\":[2,8]"), "grid must have 3 entries"},
  };
  for (const auto& [text, want] : cases) {
    const std::string msg = error_of(text);
    EXPECT_NE(msg.find(want), std::string::npos) << "want: " << want << "\ngot:  " << msg;
  }
}

// Missing and mistyped fields anywhere name the field's JSON path, never the JSON library's
// exception text (issue 19: a file without "version" printed nlohmann's out_of_range error).
TEST(Json, MissingOrMistypedFieldsNameTheirPath) {
  const std::string good = to_json(parse_ok(read_file(example_path("gqa.flash_decoding"))), -1);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  const std::pair<std::string, std::string> cases[] = {
      {with("\"version\":1", "\"versio\":1"), "JSON: version: required field is missing"},
      {with("\"format\":\"mugraph.ugraph\"", "\"format\":3"), "not a uGraph file"},
      {with("{\"dtype\":\"f16\",", "{"), "JSON: inputs[0].dtype: required field is missing"},
      {with("\"name\":\"Q\"", "\"name\":7"),
       "JSON: inputs[0].name: must be a string, got an integer"},
      {with("\"shape\":[2,256,64]", "\"shape\":[2,\"256\",64]"),
       "JSON: inputs[0].shape[1]: must be an integer, got a string"},
      {with("\"fmap\":2", "\"fmap\":2.5"),
       "JSON: ops[0].nodes[1].fmap: must be an integer, got a number with a fraction"},
      {with("\"imap\":[", "\"imap\":{\"x\":1},\"unused\":["),
       "JSON: ops[0].nodes[0].imap: a map is a list of 3 ints (-1 = phi), got an object"},
      {with("\"forloop\":", "\"forlop\":"), "JSON: ops[0].forloop: required field is missing"},
      {with("\"nodes\":[", "\"nodes\":{},\"unused\":["),
       "JSON: ops[0].nodes: must be a list, got an object"},
      {with("\"outputs\":[\"O\"],\"version\"", "\"outputs\":\"O\",\"version\""),
       "JSON: outputs: must be a list, got a string"},
      {with("\"outputs\":[\"O\"],\"version\"", "\"outputs\":[\"P\"],\"version\""),
       "JSON: outputs[0]: unknown tensor 'P'"},
      {"[1, 2]", "not a uGraph file"},
      {"{\"format\": \"mugraph.ugraph\", \"version\": 1, \"inputs\": [], \"ops\": [3]}",
       "JSON: ops[0]: must be an object, got an integer"},
  };
  for (const auto& [text, want] : cases) {
    const std::string msg = error_of(text);
    EXPECT_NE(msg.find(want), std::string::npos) << "want: " << want << "\ngot:  " << msg;
    EXPECT_EQ(msg.find("json.exception"), std::string::npos) << msg;
  }
  // Syntax errors keep the position, without the library's tag.
  const std::string msg = error_of(good.substr(0, good.size() / 2));
  EXPECT_NE(msg.find("JSON: parse error at line 1, column "), std::string::npos) << msg;
  EXPECT_EQ(msg.find("json.exception"), std::string::npos) << msg;
}

}  // namespace
}  // namespace mugraph::ir

namespace mugraph::ir {
namespace {

// `good` with its first `from` replaced by `to` (the test fails if `from` is absent).
std::string edit(std::string good, const std::string& from, const std::string& to) {
  const size_t at = good.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? good : good.replace(at, from.size(), to);
}

// Found by bench/parse_fuzz: the loader kept attributes the op does not take (the printer drops
// them, so the graph did not round-trip) and accepted a graph missing one that the op needs.
TEST(Json, AttributesAreThoseOfTheOp) {
  const std::string sqrt = to_json(parse_ok("input X : f32[4]\nY = sqrt(X)\noutput Y\n"), -1);
  const std::string sum =
      to_json(parse_ok("input X : f32[4, 8]\nY = sum(X, dim=1, group=8)\noutput Y\n"), -1);
  const std::pair<std::string, std::string> cases[] = {
      {edit(sqrt, "\"attrs\":{}", "\"attrs\":{\"factor\":[1,2]}"),
       "JSON: ops[0].attrs: sqrt has no attribute 'factor'"},
      {edit(sqrt, "\"attrs\":{}", "\"attrs\":{\"dim\":0}"),
       "JSON: ops[0].attrs: sqrt has no attribute 'dim'"},
      {edit(sum, "\"dim\":1,", "\"dim\":1,\"times\":2,"),
       "JSON: ops[0].attrs: sum has no attribute 'times'"},
      {edit(sum, "\"dim\":1,", ""), "JSON: ops[0].attrs: sum: missing attribute 'dim'"},
  };
  for (const auto& [text, want] : cases) {
    const std::string msg = error_of(text);
    EXPECT_NE(msg.find(want), std::string::npos) << "want: " << want << "\ngot:  " << msg;
  }
}

// Found by bench/parse_fuzz: names that are not identifiers of the text format were accepted,
// and the printed text did not parse. A name is a letter or '_', then letters, digits, '_', '.'.
TEST(Json, TensorNamesAreTextIdentifiers) {
  const std::string good = to_json(parse_ok("input X : f32[4]\nY = sqrt(X)\noutput Y\n"), -1);
  for (const char* bad : {"Y#", "*Y", "0Z", "Y[", "Z ", "", "Y\\u0000", "\\u00e9"}) {
    SCOPED_TRACE(bad);
    const std::string text = edit(edit(good, "\"output\":\"Y\"", std::string("\"output\":\"") +
                                                                   bad + "\""),
                                  "\"outputs\":[\"Y\"]", std::string("\"outputs\":[\"") + bad +
                                                             "\"]");
    const std::string msg = error_of(text);
    EXPECT_EQ(msg.rfind("JSON: ops[0].output: not a tensor name of the text format: ", 0), 0)
        << msg;
    EXPECT_EQ(msg.find('\0'), std::string::npos);
  }
  const std::string msg = error_of(edit(good, "\"name\":\"X\"", "\"name\":\"X-1\""));
  EXPECT_NE(msg.find("JSON: inputs[0].name: not a tensor name of the text format: 'X-1'"),
            std::string::npos)
      << msg;
  // Names the text format gives meaning to elsewhere are still names.
  for (const char* word : {"input", "output", "strides", "phi", "x", "_a.1"}) {
    SCOPED_TRACE(word);
    auto g = from_json(edit(edit(good, "\"output\":\"Y\"", std::string("\"output\":\"") + word +
                                                               "\""),
                            "\"outputs\":[\"Y\"]", std::string("\"outputs\":[\"") + word + "\"]"));
    ASSERT_TRUE(g.ok()) << g.status().message();
    EXPECT_EQ(parse_ok(print_graph(*g)), *g);
  }
}

// Found by bench/parse_fuzz: two errors without a place. nlohmann reports a number too large
// for a double without a position; a graph without outputs had no path.
TEST(Json, EveryErrorNamesAPlace) {
  const std::string good = to_json(parse_ok("input X : f32[4]\nY = sqrt(X)\noutput Y\n"), 1);
  std::string msg = error_of(edit(good, "\"version\": 1", "\"version\": 1e999"));
  EXPECT_NE(msg.find("JSON: parse error at line 25, column 13: number '1e999' is out of range"),
            std::string::npos)
      << msg << "\n" << good;
  msg = error_of(edit(good, "\"outputs\": [\n  \"Y\"\n ]", "\"outputs\": []"));
  EXPECT_NE(msg.find("JSON: outputs: kernel graph has no outputs"), std::string::npos) << msg;
}

// The text form names an iterated input by its tensor, and the k-th iterator of a tensor passed
// more than once takes its k-th occurrence: the loader refuses iterators out of that order,
// which no text could express.
TEST(Json, IteratorsOfARepeatedInputComeInOrder) {
  const std::string good = to_json(parse_ok(
      "input X : f32[4, 4]\n"
      "Y = graph_defined(X, X, grid=[1, 1, 1], forloop=1) {\n"
      "  a = input_iterator(X, imap={}, fmap=phi)\n  b = input_iterator(X, imap={}, fmap=0)\n"
      "  m = matmul(a, b)\n  c = accumulator(m, fmap=phi)\n  output_saver(c, omap={})\n"
      "}\noutput Y\n"), -1);
  const std::string swapped = edit(edit(good, "\"input\":0", "\"input\":2"), "\"input\":1",
                                   "\"input\":0");
  const std::string msg = error_of(edit(swapped, "\"input\":2", "\"input\":1"));
  EXPECT_NE(msg.find("JSON: ops[0].nodes[0].input: "), std::string::npos) << msg;
}

}  // namespace
}  // namespace mugraph::ir
