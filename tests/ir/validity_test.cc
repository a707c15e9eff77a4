// Must-fail tests: one invalid uGraph per validity rule (Mirage Def. 2.1), each with the message
// it must produce. Also the kernel-level rules (names, layouts, outputs).
#include "ir/builder.h"
#include "test_util.h"

namespace mugraph::ir {
namespace {

using mugraph::testing::parse_error;
using mugraph::testing::parse_ok;

// A graph-defined op over X : f32[8, 16] and W : f32[16, 32] with the given header and body.
std::string block(const std::string& header, const std::string& body) {
  return "input X : f32[8, 16]\ninput W : f32[16, 32]\nY = graph_defined(X, W, " + header +
         ") {\n" + body + "}\noutput Y\n";
}

// A valid baseline, so each must-fail case below differs from it in one place.
const char* kGoodBody =
    "  x = input_iterator(X, imap={}, fmap=1)\n"      // [8, 4]
    "  w = input_iterator(W, imap={x:1}, fmap=0)\n"   // [4, 16]
    "  m = matmul(x, w)\n"
    "  a = accumulator(m, fmap=phi)\n"
    "  output_saver(a, omap={x:1})\n";

TEST(Validity, BaselineIsValid) {
  KernelGraph g = parse_ok(block("grid=[2, 1, 1], forloop=4", kGoodBody));
  EXPECT_EQ(g.tensor(g.outputs[0]).type.to_string(), "f32[8, 32]");
}

struct Case {
  const char* header;
  const char* body;
  const char* message;
};

// clang-format off
const Case kCases[] = {
  // grid and for-loop
  {"grid=[0, 1, 1], forloop=4", kGoodBody, "grid dim x=0 must be in 1..2147483647"},
  {"grid=[2, 65536, 1], forloop=4", kGoodBody, "grid dim y=65536 must be in 1..65535"},
  {"grid=[2, 1, 1], forloop=0", kGoodBody, "forloop range 0 must be in 1..2147483647"},
  {"grid=[2, 1, 1], forloop=4, tile=3", kGoodBody, "graph_defined has no attribute 'tile'"},
  // imap
  {"grid=[2, 1, 1], forloop=4",
   "  x = input_iterator(X, imap={x:2}, fmap=1)\n", "imap maps grid dim x to data dim 2, which does not exist in [8, 16]"},
  {"grid=[3, 1, 1], forloop=4",
   "  x = input_iterator(X, imap={x:0}, fmap=1)\n", "imap splits data dim 0 of size 8 into 3 blocks (grid dim x), which does not divide"},
  {"grid=[2, 2, 1], forloop=4",
   "  x = input_iterator(X, imap={x:0, y:0}, fmap=1)\n", "maps grid dims x and y to the same data dim 0"},
  {"grid=[2, 1, 1], forloop=4",
   "  x = input_iterator(X, imap={x:0, x:1}, fmap=1)\n", "grid dim x appears twice"},
  {"grid=[2, 1, 1], forloop=4",
   "  x = input_iterator(X, imap={w:0}, fmap=1)\n", "expected a grid dim x, y or z, found 'w'"},
  // fmap
  {"grid=[2, 1, 1], forloop=4",
   "  x = input_iterator(X, imap={}, fmap=5)\n", "fmap dim 5 does not exist in [8, 16]"},
  {"grid=[2, 1, 1], forloop=3",
   "  x = input_iterator(X, imap={}, fmap=1)\n", "fmap splits data dim 1 of block size 16 into 3 iterations, which does not divide"},
  // iterators: exactly one per input
  {"grid=[2, 1, 1], forloop=4",
   "  x = input_iterator(X, imap={}, fmap=1)\n  x2 = input_iterator(X, imap={}, fmap=1)\n",
   "'X' is not an input of this graph_defined op (or has no occurrence left to iterate)"},
  {"grid=[2, 1, 1], forloop=4",
   "  x = input_iterator(X, imap={}, fmap=1)\n  a = accumulator(x, fmap=1)\n  output_saver(a, omap={x:0})\n",
   "input #1 has no input_iterator"},
  {"grid=[2, 1, 1], forloop=4",
   "  x = input_iterator(Z, imap={}, fmap=1)\n", "'Z' is not an input of this graph_defined op"},
  // phases: every path passes exactly one iterator, one accumulator, one saver
  {"grid=[2, 1, 1], forloop=4",
   "  x = input_iterator(X, imap={}, fmap=1)\n  w = input_iterator(W, imap={x:1}, fmap=0)\n"
   "  m = matmul(x, w)\n  output_saver(m, omap={x:1})\n",
   "output_saver of 'm': tensor is inside the for-loop (range 4); it must pass through an accumulator first"},
  {"grid=[2, 1, 1], forloop=4",
   "  x = input_iterator(X, imap={}, fmap=1)\n  w = input_iterator(W, imap={x:1}, fmap=0)\n"
   "  m = matmul(x, w)\n  a = accumulator(m, fmap=phi)\n  b = accumulator(a, fmap=phi)\n",
   "accumulator: input 'a' is already accumulated; a path may pass only one accumulator"},
  {"grid=[2, 1, 1], forloop=4",
   "  x = input_iterator(X, imap={}, fmap=1)\n  w = input_iterator(W, imap={x:1}, fmap=0)\n"
   "  s = sum(x, dim=1, group=4)\n  a = accumulator(s, fmap=phi)\n  b = add(a, s)\n",
   "add: mixes in-loop tensor and post-loop (accumulated) tensor"},
  {"grid=[2, 1, 1], forloop=4",
   "  x = input_iterator(X, imap={}, fmap=1)\n  w = input_iterator(W, imap={x:1}, fmap=0)\n",
   "block graph has no output_saver"},
  {"grid=[2, 1, 1], forloop=4",
   "  x = input_iterator(X, imap={}, fmap=1)\n  w = input_iterator(W, imap={x:1}, fmap=0)\n"
   "  m = matmul(x, w)\n  a = accumulator(m, fmap=3)\n", "fmap dim 3 does not exist in [8, 16]"},
  // omap
  {"grid=[2, 1, 1], forloop=4",
   "  x = input_iterator(X, imap={}, fmap=1)\n  w = input_iterator(W, imap={x:1}, fmap=0)\n"
   "  m = matmul(x, w)\n  a = accumulator(m, fmap=phi)\n  output_saver(a, omap={})\n",
   "omap leaves grid dim x (2 blocks) unmapped; blocks would overwrite each other's output"},
  {"grid=[2, 2, 1], forloop=4",
   "  x = input_iterator(X, imap={}, fmap=1)\n  w = input_iterator(W, imap={x:1}, fmap=0)\n"
   "  m = matmul(x, w)\n  a = accumulator(m, fmap=phi)\n  output_saver(a, omap={x:1, y:1})\n",
   "maps grid dims x and y to the same data dim 1"},
  {"grid=[2, 1, 1], forloop=4",
   "  x = input_iterator(X, imap={}, fmap=1)\n  w = input_iterator(W, imap={x:1}, fmap=0)\n"
   "  m = matmul(x, w)\n  a = accumulator(m, fmap=phi)\n  output_saver(a, omap={x:7})\n",
   "omap maps grid dim x to data dim 7, which does not exist in [8, 16]"},
  // block ops: shapes and levels
  {"grid=[2, 1, 1], forloop=4",
   "  x = input_iterator(X, imap={}, fmap=1)\n  w = input_iterator(W, imap={x:1}, fmap=1)\n"
   "  m = matmul(x, w)\n", "matmul: inner dimensions differ: input 0 [8, 4] has k=4, input 1 [16, 4] has k=16"},
  // thread graphs: element-wise only
  {"grid=[2, 1, 1], forloop=4",
   "  x = input_iterator(X, imap={}, fmap=1)\n  w = input_iterator(W, imap={x:1}, fmap=0)\n"
   "  t = thread_graph(x) {\n    s = sum(x, dim=1, group=4)\n    output s\n  }\n",
   "sum: not allowed in a thread graph (element-wise ops only)"},
  {"grid=[2, 1, 1], forloop=4",
   "  x = input_iterator(X, imap={}, fmap=1)\n  w = input_iterator(W, imap={x:1}, fmap=0)\n"
   "  t = thread_graph(x) {\n    output x\n  }\n", "thread graph has no ops"},
  {"grid=[2, 1, 1], forloop=4",
   "  x = input_iterator(X, imap={}, fmap=1)\n  w = input_iterator(W, imap={x:1}, fmap=0)\n"
   "  t, u = thread_graph(x) {\n    e = exp(x)\n    output e\n  }\n", "thread_graph: 2 names for 1 outputs"},
};
// clang-format on

TEST(Validity, EveryRuleHasItsMessage) {
  for (const Case& c : kCases) {
    const std::string msg = parse_error(block(c.header, c.body));
    EXPECT_NE(msg.find(c.message), std::string::npos)
        << "want: " << c.message << "\ngot:  " << msg << "\nfor body:\n" << c.body;
  }
}

TEST(Validity, ForloopOfOneAllowsSaverWithoutAccumulator) {
  KernelGraph g = parse_ok(block("grid=[2, 1, 1], forloop=1",
                                 "  x = input_iterator(X, imap={x:0}, fmap=phi)\n"
                                 "  w = input_iterator(W, imap={}, fmap=phi)\n"
                                 "  m = matmul(x, w)\n  output_saver(m, omap={x:0})\n"));
  EXPECT_EQ(g.tensor(g.outputs[0]).type.to_string(), "f32[8, 32]");
}

TEST(Validity, KernelLevelRules) {
  EXPECT_NE(parse_error("input X : f32[2]\ninput X : f32[3]\nY = exp(X)\noutput Y\n")
                .find("2:1: tensor name 'X' is already defined"),
            std::string::npos);
  EXPECT_NE(parse_error("input X : f32[2]\noutput X\n").find("cannot also be an output"),
            std::string::npos);
  EXPECT_NE(parse_error("input X : f32[2]\nY = exp(X)\n").find("kernel graph has no outputs"),
            std::string::npos);
  EXPECT_NE(parse_error("input X : f32[2, 3] strides=[1, 1]\nY = exp(X)\noutput Y\n")
                .find("strides [1, 1] are not a dense layout of shape [2, 3]"),
            std::string::npos);
  EXPECT_NE(parse_error("input X : f32[0, 3]\nY = exp(X)\noutput Y\n").find("input 'X': shape [0, 3] has dim 0 < 1"),
            std::string::npos);
  EXPECT_NE(parse_error("input X : f32[1, 2, 3, 4, 5]\n").find("1 to 4 dims, got 5"),
            std::string::npos);
}

TEST(Validity, ColumnMajorLayoutIsAccepted) {
  KernelGraph g = parse_ok("input X : f16[2, 3] strides=[1, 2]\nY = exp(X)\noutput Y\n");
  EXPECT_FALSE(g.tensor(g.inputs[0]).type.is_row_major());
  EXPECT_TRUE(g.tensor(g.outputs[0]).type.is_row_major());
}

TEST(Validity, BuilderRejectsMismatchedBlockInputs) {
  auto bb = BlockBuilder::make({TensorType::make(DType::kF32, {4, 4})}, Dim3{}, 1);
  ASSERT_TRUE(bb.ok());
  BlockBuilder b = std::move(bb).value();
  auto x = b.input_iterator(0, DimMap{}, kReplica, "x");
  ASSERT_TRUE(x.ok());
  ASSERT_TRUE(b.output_saver(*x, DimMap{}).ok());
  auto block = std::move(b).finish();
  ASSERT_TRUE(block.ok());
  KernelBuilder kb;
  auto in = kb.input("X", TensorType::make(DType::kF32, {4, 8}));
  ASSERT_TRUE(in.ok());
  auto r = kb.graph_defined({*in}, *block);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("input 0 'X' is f32[4, 8] but the block graph expects f32[4, 4]"),
            std::string::npos)
      << r.status().message();
}

// Found by a new user: an automatic name ("t1", a tensor built without one) and a later explicit
// "t1" (the builder's and from_torch's names) aborted the planned search. The explicit name wins;
// the automatic one moves aside. Two explicit ones still collide.
TEST(Names, AnExplicitNameTakesItsPlaceFromAnAutomaticOne) {
  KernelBuilder kb;
  auto x = kb.input("X", TensorType::make(DType::kF32, {4, 8}));
  ASSERT_TRUE(x.ok());
  auto a = kb.op(OpKind::kExp, {*x});  // automatic: t1
  ASSERT_TRUE(a.ok());
  auto b = kb.op(OpKind::kNeg, {*a}, {}, "t1");
  ASSERT_TRUE(b.ok()) << b.status().message();
  auto c = kb.op(OpKind::kNeg, {*b}, {}, "t1");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("tensor name 't1' is already defined"), std::string::npos);
  ASSERT_TRUE(kb.output(*b).ok());
  auto g = std::move(kb).finish();
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->tensor(*b).name, "t1");
  EXPECT_EQ(g->tensor(*a).name, "t1_");
  EXPECT_EQ(parse_graph(print_graph(*g)).value(), *g);
}

}  // namespace
}  // namespace mugraph::ir
