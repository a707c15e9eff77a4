// Composite helpers expand to exactly the ops a user would write by hand.
#include "driver/driver.h"
#include "ir/composite.h"
#include "test_util.h"

namespace mugraph::ir {
namespace {

using mugraph::testing::example_path;
using mugraph::testing::parse_error;
using mugraph::testing::parse_ok;
using mugraph::testing::read_file;

// Max abs difference of the two graphs' outputs on the same random inputs.
double max_abs(const KernelGraph& a, const KernelGraph& b) {
  auto d = driver::compare_graphs(a, b, 3, driver::Precision::kDouble);
  EXPECT_TRUE(d.ok()) << d.status().message();
  return d.ok() ? (*d)[0].max_abs : 1.0;
}

TEST(Composite, RmsNormEqualsTheExplicitOps) {
  KernelGraph explicit_ops = parse_ok(read_file(example_path("rms_norm_matmul")));
  KernelGraph composite = parse_ok(
      "input X : f16[16, 4096]\ninput G : f16[4096]\ninput W : f16[4096, 4096]\n"
      "xn = rms_norm(X, dim=1)\nxg = mul(xn, G)\nY = matmul(xg, W)\noutput Y\n");
  EXPECT_EQ(composite.ops.size(), explicit_ops.ops.size());
  EXPECT_EQ(max_abs(explicit_ops, composite), 0.0);  // same ops in the same order: bit-equal
}

TEST(Composite, AttentionEqualsTheExplicitOps) {
  const std::string inputs =
      "input Q : f16[2, 256, 64]\ninput K : f16[2, 64, 4096]\ninput V : f16[2, 4096, 64]\n";
  KernelGraph explicit_ops = parse_ok(inputs +
      "S = matmul(Q, K)\nE = exp(S)\nD = sum(E, dim=2, group=4096)\nP = div(E, D)\n"
      "O = matmul(P, V)\noutput O\n");
  KernelGraph composite = parse_ok(inputs + "O = attention(Q, K, V)\noutput O\n");
  EXPECT_EQ(max_abs(explicit_ops, composite), 0.0);
}

TEST(Composite, BuilderApi) {
  KernelBuilder kb;
  auto x = kb.input("X", TensorType::make(DType::kF32, {4, 8}));
  ASSERT_TRUE(x.ok());
  auto s = softmax(kb, *x, 1, "P");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(kb.graph().tensor(*s).name, "P");
  EXPECT_EQ(kb.graph().ops.size(), 3u);  // exp, sum, div
  auto bad = rms_norm(kb, *x, 2, "R");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "rms_norm: dim=2 is out of range for [4, 8]");
}

TEST(Composite, MustFail) {
  EXPECT_NE(parse_error("input X : f32[4]\nY = softmax(X)\noutput Y\n").find("2:5: softmax: missing attribute 'dim'"),
            std::string::npos);
  EXPECT_NE(parse_error("input X : f32[4]\nY = attention(X, X)\noutput Y\n").find("attention: expects 3 input(s), got 2"),
            std::string::npos);
  EXPECT_NE(parse_error("input X : f32[4]\nY = attention(X, X, X, dim=1)\noutput Y\n")
                .find("attention has no attribute 'dim'"),
            std::string::npos);
  EXPECT_NE(parse_error("input X : f32[4, 4]\nY = softmax(X, dim=1)\nY.exp = exp(X)\noutput Y\n")
                .find("tensor name 'Y.exp' is already defined"),
            std::string::npos);
}

}  // namespace
}  // namespace mugraph::ir
