// opt::split_loop: a looped kernel split into partial sums and their combination (split-K,
// FlashDecoding's split-KV). Each split form is checked against the program by the verifier
// (random tests over finite fields, every output entry) and its structure read back.
#include <gtest/gtest.h>

#include "ir/text.h"
#include "opt/split_loop.h"
#include "test_util.h"
#include "verify/verifier.h"

namespace mugraph {
namespace {

using testing::parse_ok;

constexpr const char* kProgram = testing::kSmallAttention;
// FlashAttention: a block per head and half of the rows, 8 KV tiles of 8 in the loop.
constexpr const char* kFlash = testing::kSmallFlashAttention;

verify::VerdictKind check(const ir::KernelGraph& program, const ir::KernelGraph& g) {
  return testing::certify_kind(program, g);
}

TEST(SplitLoop, FlashAttentionBecomesSplitKv) {
  const ir::KernelGraph program = parse_ok(kProgram);
  const ir::KernelGraph flash = parse_ok(kFlash);
  ASSERT_EQ(check(program, flash), verify::VerdictKind::kVerified);
  for (int64_t s : {2, 4, 8}) {
    auto r = opt::split_loop(flash, s);
    ASSERT_TRUE(r.ok()) << s << ": " << r.status().message();
    const ir::KernelGraph& g = *r;
    ASSERT_EQ(g.ops.size(), 2u);
    const ir::BlockGraph& k1 = *g.ops[0].block;
    const ir::BlockGraph& k2 = *g.ops[1].block;
    // Kernel 1: grid z splits K's and V's tokens, the loop runs over the part.
    EXPECT_EQ(k1.grid, (ir::Dim3{{2, 2, s}})) << ir::print_graph(g);
    EXPECT_EQ(k1.forloop, 8 / s);
    EXPECT_EQ(k1.nodes[1].imap[2], 2);  // K along its tokens
    EXPECT_EQ(k1.nodes[2].imap[2], 1);  // V along its tokens
    EXPECT_EQ(k1.nodes[0].imap[2], ir::kReplica);  // Q read whole by every split
    EXPECT_EQ(k1.output_types.size(), 2u);
    // Partials: numerator [2, 8, s x 16], denominator [2, 8, s].
    EXPECT_EQ(k1.output_types[0].shape, (ir::Shape{2, 8, 16 * s}));
    EXPECT_EQ(k1.output_types[1].shape, (ir::Shape{2, 8, s}));
    // Kernel 2: the original grid, s iterations accumulating the parts, then the division.
    EXPECT_EQ(k2.grid, (ir::Dim3{{2, 2, 1}}));
    EXPECT_EQ(k2.forloop, s);
    EXPECT_EQ(g.tensor(g.outputs[0]).name, "O");
    EXPECT_EQ(check(program, g), verify::VerdictKind::kVerified) << ir::print_graph(g);
  }
}

// A size-1 grid dim may be mapped anywhere (it splits nothing); the new grid dim takes its
// place, and Q (loop-invariant) is still read whole by every split.
TEST(SplitLoop, AMappedSizeOneGridDimIsReplaced) {
  std::string text = kFlash;
  text.replace(text.find("imap={x:0, y:1}, fmap=phi"), 25, "imap={x:0, y:1, z:2}, fmap=phi");
  const ir::KernelGraph flash = parse_ok(text);
  auto r = opt::split_loop(flash, 4);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->ops[0].block->nodes[0].imap[2], ir::kReplica) << ir::print_graph(*r);
  EXPECT_EQ(check(parse_ok(kProgram), *r), verify::VerdictKind::kVerified) << ir::print_graph(*r);
}

// Split-K of a matmul with a second output saved straight from its accumulator (a row sum):
// the new grid dim is y (x splits the rows), the partials concatenate along the columns.
TEST(SplitLoop, MatmulSplitKWithTwoOutputs) {
  const ir::KernelGraph program = parse_ok(R"(
input X : f16[8, 64]
input W : f16[64, 16]
Y = matmul(X, W)
S = sum(X, dim=1, group=64)
output Y
output S
)");
  const ir::KernelGraph kernel = parse_ok(R"(
input X : f16[8, 64]
input W : f16[64, 16]
Y, S = graph_defined(X, W, grid=[2, 1, 1], forloop=8) {
  x = input_iterator(X, imap={x:0}, fmap=1)
  w = input_iterator(W, imap={}, fmap=0)
  m = matmul(x, w)
  s = sum(x, dim=1, group=8)
  macc = accumulator(m, fmap=phi)
  sacc = accumulator(s, fmap=phi)
  output_saver(macc, omap={x:0})
  output_saver(sacc, omap={x:0})
}
output Y
output S
)");
  ASSERT_EQ(check(program, kernel), verify::VerdictKind::kVerified);
  for (int64_t s : {2, 4, 8}) {
    auto r = opt::split_loop(kernel, s);
    ASSERT_TRUE(r.ok()) << s << ": " << r.status().message();
    ASSERT_EQ(r->ops.size(), 2u);
    EXPECT_EQ(r->ops[0].block->grid, (ir::Dim3{{2, s, 1}}));
    EXPECT_EQ(r->ops[0].block->forloop, 8 / s);
    EXPECT_EQ(r->ops[1].block->forloop, s);
    EXPECT_EQ(r->ops[0].block->output_types[0].shape, (ir::Shape{8, 16 * s}));
    EXPECT_EQ(r->ops[0].block->output_types[1].shape, (ir::Shape{8, s}));
    EXPECT_EQ(r->tensor(r->outputs[1]).name, "S");
    EXPECT_EQ(check(program, *r), verify::VerdictKind::kVerified) << ir::print_graph(*r);
  }
}

// The check above can fail: the same split with kernel 1's scale factor changed (each partial
// then sums the wrong exponentials) is rejected.
TEST(SplitLoop, AWrongSplitIsRejected) {
  const ir::KernelGraph program = parse_ok(kProgram);
  auto r = opt::split_loop(parse_ok(kFlash), 2);
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::string text = ir::print_graph(*r);
  const size_t at = text.find("factor=1/4");
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, 10, "factor=1/2");
  auto bad = ir::parse_graph(text);
  ASSERT_TRUE(bad.ok()) << bad.status().message();
  EXPECT_EQ(check(program, *bad), verify::VerdictKind::kNotEquivalent) << text;
}

TEST(SplitLoop, RefusesWhatItCannotSplit) {
  const ir::KernelGraph flash = parse_ok(kFlash);
  auto why = [](const Result<ir::KernelGraph>& r) { return r.ok() ? std::string("ok") : r.status().message(); };
  EXPECT_NE(why(opt::split_loop(flash, 3)).find("do not divide the loop's 8"), std::string::npos);
  EXPECT_NE(why(opt::split_loop(flash, 1)).find("needs >= 2"), std::string::npos);
  EXPECT_NE(why(opt::split_loop(parse_ok(kProgram), 2)).find("one graph-defined kernel op"),
            std::string::npos);
  // No grid dim left.
  std::string full = kFlash;
  full.replace(full.find("grid=[2, 2, 1]"), 14, "grid=[2, 2, 2]");
  full.replace(full.find("imap={x:0}, fmap=1"), 18, "imap={x:0, z:2}, fmap=1");  // V's columns
  full.replace(full.find("omap={x:0, y:1}"), 15, "omap={x:0, y:1, z:2}");
  EXPECT_NE(why(opt::split_loop(parse_ok(full), 2)).find("no grid dim of size 1"), std::string::npos);
  // An accumulator that concatenates the loop's tiles (here: exp(QK) saved whole).
  const ir::KernelGraph concat = parse_ok(R"(
input Q : f16[2, 8, 16]
input K : f16[2, 16, 64]
E = graph_defined(Q, K, grid=[2, 1, 1], forloop=4) {
  q = input_iterator(Q, imap={x:0}, fmap=phi)
  k = input_iterator(K, imap={x:0}, fmap=2)
  qk = matmul(q, k)
  e = exp(qk)
  a = accumulator(e, fmap=2)
  output_saver(a, omap={x:0})
}
output E
)");
  EXPECT_NE(why(opt::split_loop(concat, 2)).find("concatenates over the loop"), std::string::npos);
}

}  // namespace
}  // namespace mugraph
