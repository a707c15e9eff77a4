// opt::tile_chain: a matmul chain (GEMM chain, attention) lowered to one graph-defined kernel at
// given tiles. Each kernel is checked against the program by the verifier (random tests over
// finite fields, every output entry) and its structure read back; programs that are not such a
// chain get an error naming the op.
#include <gtest/gtest.h>

#include "ir/text.h"
#include "opt/tile_chain.h"
#include "test_util.h"
#include "verify/verifier.h"

namespace mugraph {
namespace {

using testing::parse_ok;

verify::VerdictKind check(const ir::KernelGraph& program, const ir::KernelGraph& g) {
  return testing::certify_kind(program, g);
}

constexpr const char* kGemmChain = R"(
input A : f16[2, 32, 16]
input B : f16[2, 16, 64]
input D : f16[2, 64, 32]
C = matmul(A, B)
E = matmul(C, D)
output E
)";

constexpr const char* kAttention = testing::kSmallAttention;

TEST(TileChain, GemmChainDimsAndTiles) {
  const ir::KernelGraph program = parse_ok(kGemmChain);
  auto info = opt::find_chain(program);
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->dims.to_string(), "batch 2, M 32, N 64, K 16, H 32");
  EXPECT_FALSE(info->softmax_like);
  EXPECT_EQ(info->elem_bytes, 2);
  for (opt::ChainTiles t : {opt::ChainTiles{32, 32, 64}, opt::ChainTiles{16, 32, 16},
                            opt::ChainTiles{8, 16, 32}, opt::ChainTiles{32, 8, 8}}) {
    auto g = opt::tile_chain(program, t);
    ASSERT_TRUE(g.ok()) << t.to_string() << ": " << g.status().message();
    ASSERT_EQ(g->ops.size(), 1u);
    const ir::BlockGraph& bg = *g->ops[0].block;
    EXPECT_EQ(bg.grid[0], 2);
    EXPECT_EQ(bg.grid[1], 32 / t.m);
    EXPECT_EQ(bg.grid[2], 32 / t.h);
    EXPECT_EQ(bg.forloop, 64 / t.n);
    EXPECT_EQ(check(program, *g), verify::VerdictKind::kVerified) << ir::print_graph(*g);
  }
}

TEST(TileChain, AttentionNormalizesAfterTheLoop) {
  const ir::KernelGraph program = parse_ok(kAttention);
  auto info = opt::find_chain(program);
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_TRUE(info->softmax_like);
  for (opt::ChainTiles t : {opt::ChainTiles{8, 16, 64}, opt::ChainTiles{4, 16, 16},
                            opt::ChainTiles{8, 8, 8}}) {
    auto g = opt::tile_chain(program, t);
    ASSERT_TRUE(g.ok()) << t.to_string() << ": " << g.status().message();
    const std::string text = ir::print_graph(*g);
    // The division by the row sum happens once, after the loop, on the accumulated numerator.
    EXPECT_NE(text.find("O = div("), std::string::npos) << text;
    EXPECT_NE(text.find("group=" + std::to_string(t.n)), std::string::npos) << text;
    EXPECT_EQ(check(program, *g), verify::VerdictKind::kVerified) << text;
  }
}

TEST(TileChain, SharedWeightsAndOpsAfterTheSecondMatmul) {
  // Rank-2 weights shared by the batch, a ReLU between the matmuls, a row factor applied after
  // the second matmul (normalize after, as some attention code does).
  const ir::KernelGraph program = parse_ok(R"(
input X : f32[3, 16, 8]
input W1 : f32[8, 32]
input W2 : f32[32, 16]
H = matmul(X, W1)
R = relu(H)
Q = square(H)
S = sum(Q, dim=2, group=32)
T = sqrt(S)
Y = matmul(R, W2)
Z = div(Y, T)
O = neg(Z)
output O
)");
  auto g = opt::tile_chain(program, {8, 8, 16});
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->ops[0].block->grid[0], 3);
  // ReLU is not Lax: the verifier's float check decides, and it may only accept.
  const verify::VerdictKind v = check(program, *g);
  EXPECT_TRUE(v == verify::VerdictKind::kVerified || v == verify::VerdictKind::kUnproved)
      << ir::print_graph(*g);
}

TEST(TileChain, OneInputInTwoRoles) {
  // E = (A B) A: A is both the first matmul's left operand (rows tiled by tm) and the second's
  // right operand (rows streamed by tn): two iterators, two tilings of one tensor.
  const ir::KernelGraph program = parse_ok(R"(
input A : f16[32, 16]
input B : f16[16, 32]
C = matmul(A, B)
E = matmul(C, A)
output E
)");
  for (opt::ChainTiles t : {opt::ChainTiles{8, 16, 8}, opt::ChainTiles{16, 8, 32}, opt::ChainTiles{32, 16, 16}}) {
    auto g = opt::tile_chain(program, t);
    ASSERT_TRUE(g.ok()) << t.to_string() << ": " << g.status().message();
    EXPECT_EQ(check(program, *g), verify::VerdictKind::kVerified) << ir::print_graph(*g);
  }
}

TEST(TileChain, BatchFromTheSecondMatmul) {
  // C is rank 2 (shared A and B), D and E carry the batch of 3.
  const ir::KernelGraph program = parse_ok(R"(
input A : f16[16, 8]
input B : f16[8, 32]
input D : f16[3, 32, 8]
C = matmul(A, B)
E = matmul(C, D)
output E
)");
  auto info = opt::find_chain(program);
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->dims.to_string(), "batch 3, M 16, N 32, K 8, H 8");
  auto g = opt::tile_chain(program, {8, 8, 16});
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->ops[0].block->grid[0], 3);
  EXPECT_EQ(check(program, *g), verify::VerdictKind::kVerified) << ir::print_graph(*g);
}

TEST(TileChain, TilesMustDivide) {
  const ir::KernelGraph program = parse_ok(kGemmChain);
  auto g = opt::tile_chain(program, {32, 32, 48});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().message(), "tile_chain: N tile 48 does not divide 64");
}

TEST(TileChain, NotAChainMustFail) {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {R"(
input A : f16[16, 16]
input B : f16[16, 16]
C = matmul(A, B)
output C
)", "chain: the program needs two matmuls, the second reading the first's result"},
      {R"(
input A : f16[16, 16]
input B : f16[16, 16]
input D : f16[16, 16]
C = matmul(A, B)
F = add(C, D)
E = matmul(F, D)
output E
)", "chain: op 'F' (add): reads program input 'D' other than as a matmul operand"},
      {R"(
input A : f16[16, 16]
input B : f16[16, 16]
input D : f16[16, 16]
C = matmul(A, B)
T = transpose(C, perm=[1, 0])
E = matmul(T, D)
output E
)", "chain: op 'T' (transpose): not an op of a matmul chain (matmul, element-wise, whole-row sum)"},
      {R"(
input A : f16[16, 16]
input B : f16[16, 16]
input D : f16[16, 16]
C = matmul(A, B)
S = sum(C, dim=0, group=16)
P = div(C, S)
E = matmul(P, D)
output E
)", "chain: op 'S' (sum): only a whole-row sum over the last dim (dim=1, group=16) is a row factor"},
  };
  for (const Case& c : cases) {
    auto r = opt::find_chain(parse_ok(c.text));
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().message(), c.error);
  }
}

}  // namespace
}  // namespace mugraph
