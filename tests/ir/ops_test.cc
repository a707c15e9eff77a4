// Table tests of the op table: shape inference for every operator, and its must-fail cases.
#include <set>

#include "test_util.h"

namespace mugraph::ir {
namespace {

struct Row {
  const char* decls;  // inputs
  const char* op;     // "r = ..." statement
  const char* want;   // output type, or "error: <substring>"
};

// clang-format off
const Row kRows[] = {
  {"a:f32[2,3] b:f32[3,4]",       "r = matmul(a, b)",             "f32[2, 4]"},
  {"a:f16[5,2,3] b:f16[5,3,4]",   "r = matmul(a, b)",             "f16[5, 2, 4]"},
  {"a:f16[5,2,3] b:f16[3,4]",     "r = matmul(a, b)",             "f16[5, 2, 4]"},
  {"a:f16[5,1,2,3] b:f16[6,3,4]", "r = matmul(a, b)",             "f16[5, 6, 2, 4]"},
  {"a:f32[2,3] b:f32[4,4]",       "r = matmul(a, b)",             "error: inner dimensions differ"},
  {"a:f32[3] b:f32[3,4]",         "r = matmul(a, b)",             "error: rank >= 2"},
  {"a:f32[2,2,3] b:f32[3,3,4]",   "r = matmul(a, b)",             "error: do not broadcast"},
  {"a:f32[2,3] b:bf16[3,4]",      "r = matmul(a, b)",             "error: input 1 has dtype bf16"},
  {"w:f32[2,3] x:f32[2,5] y:f32[3,4] z:f32[5,4]", "r = concat_matmul(w, x, y, z)", "f32[2, 4]"},
  {"w:f32[2,3] x:f32[2,5] y:f32[3,4] z:f32[6,4]", "r = concat_matmul(w, x, y, z)", "error: inner dimensions differ"},
  {"w:f32[2,3] x:f32[2,5] y:f32[3,4] z:f32[5,7]", "r = concat_matmul(w, x, y, z)", "error: W x Y is [2, 4] but X x Z is [2, 7]"},
  {"a:bf16[2,3]",                 "r = exp(a)",                   "bf16[2, 3]"},
  {"a:f32[2,3]",                  "r = square(a)",                "f32[2, 3]"},
  {"a:f32[2,3]",                  "r = sqrt(a)",                  "f32[2, 3]"},
  {"a:f32[2,3]",                  "r = silu(a)",                  "f32[2, 3]"},
  {"a:f32[2,3]",                  "r = relu(a)",                  "f32[2, 3]"},
  {"a:f32[2,3]",                  "r = gelu(a)",                  "f32[2, 3]"},
  {"a:f32[2,3]",                  "r = neg(a)",                   "f32[2, 3]"},
  {"a:f32[2,3]",                  "r = reciprocal(a)",            "f32[2, 3]"},
  {"a:f32[2,3]",                  "r = scale(a, factor=1/8)",     "f32[2, 3]"},
  {"a:f32[2,3]",                  "r = scale(a, factor=3)",       "f32[2, 3]"},
  {"a:f32[2,3]",                  "r = scale(a, factor=1/0)",     "error: positive denominator"},
  {"a:f32[2,3]",                  "r = scale(a)",                 "error: missing attribute 'factor'"},
  {"a:f32[2,3]",                  "r = exp(a, dim=1)",            "error: exp has no attribute 'dim'"},
  {"a:f32[2,3]",                  "r = exp(a, a)",                "error: expects 1 input(s), got 2"},
  {"a:f32[2,3] b:f32[2,3]",       "r = add(a, b)",                "f32[2, 3]"},
  {"a:f32[2,3] b:f32[2,1]",       "r = sub(a, b)",                "f32[2, 3]"},
  {"a:f32[2,3] b:f32[3]",         "r = mul(a, b)",                "f32[2, 3]"},
  {"a:f32[4,1,3] b:f32[5,1]",     "r = div(a, b)",                "f32[4, 5, 3]"},
  {"a:f32[2,3] b:f32[3,2]",       "r = add(a, b)",                "error: do not broadcast"},
  {"a:f32[2,8]",                  "r = sum(a, dim=1, group=8)",   "f32[2, 1]"},
  {"a:f32[2,8]",                  "r = sum(a, dim=1, group=2)",   "f32[2, 4]"},
  {"a:f32[6,8]",                  "r = sum(a, dim=0, group=3)",   "f32[2, 8]"},
  {"a:f32[2,8]",                  "r = sum(a, dim=1, group=3)",   "error: group=3 does not divide dim 1 of size 8"},
  {"a:f32[2,8]",                  "r = sum(a, dim=2, group=1)",   "error: dim=2 is out of range"},
  {"a:f32[2,8]",                  "r = sum(a, dim=1)",            "error: missing attribute 'group'"},
  {"a:f32[2,3]",                  "r = repeat(a, dim=0, times=4)", "f32[8, 3]"},
  {"a:f32[2,3]",                  "r = repeat(a, dim=1, times=0)", "error: times=0 must be >= 1"},
  {"a:f32[2,3]",                  "r = reshape(a, shape=[3, 2])", "f32[3, 2]"},
  {"a:f32[2,3]",                  "r = reshape(a, shape=[1, 6, 1])", "f32[1, 6, 1]"},
  {"a:f32[2,3]",                  "r = reshape(a, shape=[4, 2])", "error: cannot reshape [2, 3] (6 elements) to [4, 2] (8 elements)"},
  {"a:f32[2,3] b:f32[2,5]",       "r = concat(a, b, dim=1)",      "f32[2, 8]"},
  {"a:f32[2,3] b:f32[4,3]",       "r = concat(a, b, dim=0)",      "f32[6, 3]"},
  {"a:f32[2,3] b:f32[4,5]",       "r = concat(a, b, dim=1)",      "error: differ outside concat dim 1"},
  {"a:f32[2,3]",                  "r = transpose(a, perm=[1, 0])", "f32[3, 2]"},
  {"a:bf16[2,3,4,5]",             "r = transpose(a, perm=[2, 0, 3, 1])", "bf16[4, 2, 5, 3]"},
  {"a:f32[2,3,4]",                "r = transpose(a, perm=[0, 1])", "error: perm=[0, 1] has 2 entries; the input [2, 3, 4] has rank 3"},
  {"a:f32[2,3,4]",                "r = transpose(a, perm=[0, 2, 2])", "error: is not a permutation of the input's 3 dims"},
  {"a:f32[2,3,4]",                "r = transpose(a, perm=[0, 3, 1])", "error: is not a permutation"},
  {"a:f32[2,3]",                  "r = transpose(a)",             "error: missing attribute 'perm'"},
  {"a:f32[2,3]",                  "r = frobnicate(a)",            "error: unknown operator 'frobnicate'"},
  {"a:f32[2,3]",                  "r = exp(b)",                   "error: unknown tensor 'b'"},
};
// clang-format on

// "a:f32[2,3] b:f32[3]" -> "input a : f32[2,3]\ninput b : f32[3]\n"
std::string inputs(const std::string& decls) {
  std::string out;
  std::istringstream is(decls);
  std::string d;
  while (is >> d) {
    const size_t c = d.find(':');
    out += "input " + d.substr(0, c) + " : " + d.substr(c + 1) + "\n";
  }
  return out;
}

TEST(OpTable, ShapeInferenceTable) {
  for (const Row& row : kRows) {
    const std::string program = inputs(row.decls) + row.op + "\noutput r\n";
    const std::string want = row.want;
    auto g = parse_graph(program);
    if (want.rfind("error: ", 0) == 0) {
      ASSERT_FALSE(g.ok()) << row.op;
      EXPECT_NE(g.status().message().find(want.substr(7)), std::string::npos)
          << row.op << " gave: " << g.status().message();
    } else {
      ASSERT_TRUE(g.ok()) << row.op << ": " << g.status().message();
      EXPECT_EQ(g->tensor(g->outputs[0]).type.to_string(), want) << row.op;
    }
  }
}

TEST(OpTable, EveryOpHasARowAndUniqueName) {
  std::set<std::string_view> names;
  for (const OpInfo& info : all_ops()) {
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
    EXPECT_EQ(parse_op(info.name), info.kind);
    bool covered = false;
    for (const Row& row : kRows)
      covered |= std::string(row.op).find(" = " + std::string(info.name) + "(") != std::string::npos;
    EXPECT_TRUE(covered) << "no table row exercises " << info.name;
  }
}

TEST(OpTable, ThreadLevelTakesElementwiseOnly) {
  for (const OpInfo& info : all_ops())
    EXPECT_EQ((info.levels & kLevelT) != 0, is_elementwise(info.kind)) << info.name;
}

}  // namespace
}  // namespace mugraph::ir
