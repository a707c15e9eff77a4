// opt::retile: a graph-defined kernel on another grid and for-loop range. Each retiled graph is
// checked against the original by the verifier; sizes that do not cut the data evenly are
// refused.
#include <gtest/gtest.h>

#include "driver/driver.h"
#include "ir/text.h"
#include "opt/retile.h"
#include "test_util.h"
#include "verify/verifier.h"

namespace mugraph {
namespace {

using testing::parse_ok;

verify::VerdictKind check(const ir::KernelGraph& program, const ir::KernelGraph& g) {
  verify::VerifyOptions vo;
  vo.mode = verify::Mode::kCertify;
  return verify::check(program, g, vo).kind;
}

constexpr const char* kFlash = R"(
input Q : f16[2, 8, 16]
input K : f16[2, 16, 64]
input V : f16[2, 64, 16]
O = graph_defined(Q, K, V, grid=[2, 2, 1], forloop=8) {
  q = input_iterator(Q, imap={x:0, y:1}, fmap=phi)
  k = input_iterator(K, imap={x:0}, fmap=2)
  v = input_iterator(V, imap={x:0}, fmap=1)
  qk = matmul(q, k)
  s = scale(qk, factor=1/4)
  e = exp(s)
  d = sum(e, dim=2, group=8)
  n = matmul(e, v)
  nacc = accumulator(n, fmap=phi)
  dacc = accumulator(d, fmap=phi)
  o = div(nacc, dacc)
  output_saver(o, omap={x:0, y:1})
}
output O
)";

TEST(Retile, FlashAttentionOnOtherTiles) {
  const ir::KernelGraph g = parse_ok(kFlash);
  struct Case {
    ir::Dim3 grid;
    int64_t forloop;
  };
  for (const Case& c : {Case{{{2, 4, 1}}, 8}, Case{{{2, 1, 1}}, 4}, Case{{{1, 2, 1}}, 16}, Case{{{2, 8, 1}}, 64}}) {
    auto r = opt::retile(g, 0, c.grid, c.forloop);
    ASSERT_TRUE(r.ok()) << r.status().message();
    const ir::BlockGraph& bg = *r->ops[0].block;
    EXPECT_EQ(bg.grid, c.grid);
    EXPECT_EQ(bg.forloop, c.forloop);
    // The row sum still sums the whole key tile: 64 / forloop keys.
    const std::string text = ir::print_graph(*r);
    EXPECT_NE(text.find("d = sum(e, dim=2, group=" + std::to_string(64 / c.forloop) + ")"),
              std::string::npos) << text;
    EXPECT_EQ(check(g, *r), verify::VerdictKind::kVerified) << text;
  }
}

TEST(Retile, ThreadGraphsAreRebuiltOnTheNewTiles) {
  // Mirage Fig. 3b (a thread-graph epilogue with sqrt: the field test cannot decide it, the
  // float check passes: UNPROVED; a wrong retiling would be NOT EQUIVALENT or UNSTABLE).
  const ir::KernelGraph g = driver::load_graph_file(std::string(MUGRAPH_EXAMPLES_DIR) + "/rms_norm_matmul.fused.mu").value();
  auto r = opt::retile(g, 0, {{64, 1, 1}}, 32);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const verify::VerdictKind v = check(g, *r);
  EXPECT_TRUE(v == verify::VerdictKind::kVerified || v == verify::VerdictKind::kUnproved)
      << verify::verdict_name(v);
  EXPECT_EQ(ir::print_graph(*r).find("group=64"), std::string::npos);  // now 4096 / 32 = 128
}

TEST(Retile, NeighboursHalveOrDoubleOneSize) {
  const ir::KernelGraph g = parse_ok(kFlash);
  const std::vector<opt::Retiled> n = opt::retile_neighbours(g);
  // x: 2 -> 1 (4 would not divide the 2 heads); y: 2 -> 1, 4; z: 1 -> 2 fails (no map);
  // forloop: 8 -> 4, 16.
  ASSERT_EQ(n.size(), 5u);
  EXPECT_EQ(n[0].change, "kernel 0: grid [2, 2, 1] -> [1, 2, 1]");
  EXPECT_EQ(n[4].change, "kernel 0: forloop 8 -> 16");
  for (const opt::Retiled& x : n) EXPECT_EQ(check(g, x.graph), verify::VerdictKind::kVerified) << x.change;
}

TEST(Retile, SizesThatDoNotCutEvenlyMustFail) {
  const ir::KernelGraph g = parse_ok(kFlash);
  EXPECT_FALSE(opt::retile(g, 0, {{2, 2, 1}}, 3).ok());   // 64 keys in 3 tiles
  EXPECT_FALSE(opt::retile(g, 0, {{4, 2, 1}}, 8).ok());   // 2 heads on 4 blocks
  auto notgd = opt::retile(parse_ok("input A : f16[4]\nB = exp(A)\noutput B\n"), 0, {{1, 1, 1}}, 1);
  ASSERT_FALSE(notgd.ok());
  EXPECT_EQ(notgd.status().message(), "retile: op 0 is not a graph-defined kernel");
}

}  // namespace
}  // namespace mugraph
