// JSON save/load: round trips over every example and must-fail cases.
#include "ir/json.h"
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
      {with("\"version\":1", "\"version\":\"one\""), "type must be number"},
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

}  // namespace
}  // namespace mugraph::ir
