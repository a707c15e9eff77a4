// Abstract expressions: hash-consing, the text form, and Table 1 on every operator and level.
#include <gtest/gtest.h>

#include "driver/driver.h"
#include "expr/abstract.h"
#include "expr/expr.h"
#include "test_util.h"

namespace mugraph::expr {
namespace {

TEST(Expr, HashConsingMakesEqualTermsOneNode) {
  ExprPool pool;
  Expr x = pool.input("X"), w = pool.input("W");
  Expr a = pool.sum(64, pool.mul(x, w));
  Expr b = pool.sum(64, pool.mul(pool.input("X"), pool.input("W")));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, pool.sum(64, pool.mul(w, x)));  // syntactic: commutativity is the oracle's job
  EXPECT_NE(a, pool.sum(32, pool.mul(x, w)));
  EXPECT_EQ(a->size, 4u);
  const size_t before = pool.size();
  pool.sum(64, pool.mul(x, w));
  EXPECT_EQ(pool.size(), before);
}

TEST(Expr, TextRoundTrips) {
  ExprPool pool;
  for (const char* text :
       {"X", "one", "sum(4096, mul(X, W))", "div(exp(sum(64, mul(Q, K))), sum(4096, exp(Q)))",
        "silu(add(X, Y))", "concat(X, relu(Y))", "sqrt(mul(X, X))", "div(one, gelu(X))"}) {
    auto e = parse_expr(pool, text);
    ASSERT_TRUE(e.ok()) << text << ": " << e.status().message();
    EXPECT_EQ(to_string(*e), text);
    EXPECT_EQ(*parse_expr(pool, to_string(*e)), *e);
  }
  EXPECT_EQ(to_string(*parse_expr(pool, "  sum( 8 ,X )")), "sum(8, X)");
}

TEST(Expr, ParseErrorsNameTheColumn) {
  ExprPool pool;
  const std::pair<const char*, const char*> rows[] = {
      {"", "column 1: expected a term"},
      {"add(X)", "add takes 2 argument(s), got 1"},
      {"sum(0, X)", "sum count must be a positive integer, got '0'"},
      {"sum(X, Y)", "sum count must be a positive integer, got 'X'"},
      {"sum(4, X, Y)", "sum takes (count, term)"},
      {"matmul(X, Y)", "unknown operator 'matmul'"},
      {"frob(X)", "unknown operator 'frob'"},
      {"mul(X, Y", "expected ',' or ')'"},
      {"mul(X, Y) Z", "unexpected text after the term"},
      {"exp", "'exp' needs arguments"},
      {"42", "'42' is not an input name"},
      {"silu(X, Y)", "silu takes 1 argument(s), got 2"},
  };
  for (const auto& [text, want] : rows) {
    auto e = parse_expr(pool, text);
    ASSERT_FALSE(e.ok()) << text;
    EXPECT_NE(e.status().message().find(want), std::string::npos)
        << text << " -> " << e.status().message();
  }
}

TEST(Expr, StructuralOrderIsTotalAndPoolIndependent) {
  ExprPool p1, p2;
  std::vector<std::string> texts = {"X", "Y", "mul(X, Y)", "sum(4, X)", "sum(8, X)", "one",
                                    "exp(X)", "add(X, Y)"};
  auto sorted = [&](ExprPool& pool, bool reverse) {
    std::vector<Expr> es;
    for (const auto& t : texts) es.push_back(*parse_expr(pool, t));
    if (reverse) std::reverse(es.begin(), es.end());
    std::sort(es.begin(), es.end(), structural_less);
    std::vector<std::string> out;
    for (Expr e : es) out.push_back(to_string(e));
    return out;
  };
  EXPECT_EQ(sorted(p1, false), sorted(p2, true));
}

// Table 1, one kernel-level operator at a time: the output's expression.
TEST(AbstractExpr, EveryKernelOperator) {
  const std::pair<const char*, const char*> rows[] = {
      {"O = matmul(A, B)", "sum(8, mul(A, B))"},
      {"O = add(A, C)", "add(A, C)"},
      {"O = sub(A, C)", "add(A, C)"},
      {"O = mul(A, C)", "mul(A, C)"},
      {"O = div(A, C)", "div(A, C)"},
      {"O = exp(A)", "exp(A)"},
      {"O = sqrt(A)", "sqrt(A)"},
      {"O = square(A)", "mul(A, A)"},
      {"O = silu(A)", "silu(A)"},
      {"O = relu(A)", "relu(A)"},
      {"O = gelu(A)", "gelu(A)"},
      {"O = neg(A)", "A"},
      {"O = scale(A, factor=3/4)", "A"},
      {"O = reciprocal(A)", "div(one, A)"},
      {"O = sum(A, dim=1, group=4)", "sum(4, A)"},
      {"O = repeat(A, dim=0, times=2)", "A"},
      {"O = reshape(A, shape=[8, 4])", "A"},
      {"O = concat(A, C, dim=0)", "concat(A, C)"},
      {"O = concat_matmul(A, C, B, D)", "add(sum(8, mul(A, B)), sum(8, mul(C, D)))"},
  };
  for (const auto& [line, want] : rows) {
    const std::string text = std::string("input A : f32[4, 8]\ninput B : f32[8, 2]\n") +
                             "input C : f32[4, 8]\ninput D : f32[8, 2]\n" + line + "\noutput O\n";
    ir::KernelGraph g = testing::parse_ok(text);
    ExprPool pool;
    GraphExprs ex = abstract_expressions(g, pool);
    ASSERT_EQ(ex.outputs.size(), 1u);
    EXPECT_EQ(to_string(ex.outputs[0]), want) << line;
  }
}

using testing::load_example;

// Graph-defined kernels are inlined: iterators and savers are identity, accumulators with a
// replica fmap are sum(R, .), thread graphs compose.
TEST(AbstractExpr, BlockGraphsAreInlined) {
  const std::pair<const char*, const char*> rows[] = {
      {"rms_norm_matmul.fused",
       "div(sum(64, sum(64, mul(mul(X, G), W))), sqrt(sum(64, sum(64, mul(X, X)))))"},
      {"rms_norm_matmul", "sum(4096, mul(mul(div(X, sqrt(sum(4096, mul(X, X)))), G), W))"},
      {"gated_mlp.fused", "mul(silu(sum(64, sum(64, mul(X, W1)))), sum(64, sum(64, mul(X, W2))))"},
      {"lora.concat_matmul", "add(sum(256, mul(X, W)), sum(16, mul(sum(256, mul(X, A)), B)))"},
      {"gqa.flash_attention",
       "div(sum(32, sum(128, mul(exp(sum(64, mul(Q, K))), V))), "
       "sum(32, sum(128, exp(sum(64, mul(Q, K))))))"},
  };
  for (const auto& [name, want] : rows) {
    ExprPool pool;
    GraphExprs ex = abstract_expressions(load_example(name), pool);
    EXPECT_EQ(to_string(ex.outputs[0]), want) << name;
  }
}

TEST(AbstractExpr, BlockTensorsHaveExpressions) {
  ir::KernelGraph g = load_example("rms_norm_matmul.fused");
  ExprPool pool;
  GraphExprs ex = abstract_expressions(g, pool);
  ASSERT_EQ(ex.blocks.size(), 1u);
  const ir::BlockGraph& bg = *g.ops[0].block;
  std::map<std::string, std::string> got;
  for (size_t t = 0; t < bg.tensors.size(); ++t) got[bg.tensors[t].name] = to_string(ex.blocks[0][t]);
  EXPECT_EQ(got["x"], "X");
  EXPECT_EQ(got["xg"], "mul(X, G)");
  EXPECT_EQ(got["m"], "sum(64, mul(mul(X, G), W))");  // k of the tile, not of the program
  EXPECT_EQ(got["ss"], "sum(64, mul(X, X))");
  EXPECT_EQ(got["macc"], "sum(64, sum(64, mul(mul(X, G), W)))");
}

TEST(AbstractExpr, ConcatenatingAccumulatorIsIdentity) {
  ir::KernelGraph g = testing::parse_ok(R"(input A : f32[4, 64]
O = graph_defined(A, grid=[1, 1, 1], forloop=4) {
  a = input_iterator(A, imap={}, fmap=1)
  e = exp(a)
  acc = accumulator(e, fmap=1)
  output_saver(acc, omap={})
}
output O
)");
  ExprPool pool;
  EXPECT_EQ(to_string(abstract_expressions(g, pool).outputs[0]), "exp(A)");
}

}  // namespace
}  // namespace mugraph::expr
