// Random inputs scaled by role (issue 27, item 4): which inputs are weights, their fan-in, the
// program's own scales, and where a program that overflows in its own precision first does.
#include <cmath>

#include "ir/builder.h"
#include "test_util.h"
#include "verify/float_check.h"
#include "verify/overflow.h"
#include "verify/random_inputs.h"

namespace mugraph::verify {
namespace {

using mugraph::testing::example_path;
using mugraph::testing::parse_ok;

std::vector<int64_t> fan_in_of(const std::string& example) {
  return weight_fan_in(driver::load_graph_file(example_path(example)).value());
}

TEST(InputRoles, KernelMatmulsRightOperandOrLeftAgainstAnActivation) {
  // y = x W: W is the weight; X an activation.
  EXPECT_EQ(weight_fan_in(parse_ok("input X : f32[4, 8]\ninput W : f32[8, 3]\n"
                                   "Y = matmul(X, W)\noutput Y\n")),
            (std::vector<int64_t>{0, 8}));
  // W x with x computed: the left operand, contracted against an activation, is the weight.
  EXPECT_EQ(weight_fan_in(parse_ok("input W : f32[5, 8]\ninput X : f32[8, 3]\n"
                                   "E = exp(X)\nY = matmul(W, E)\noutput Y\n")),
            (std::vector<int64_t>{8, 0}));
  // Nothing contracted: all activations.
  EXPECT_EQ(weight_fan_in(parse_ok("input X : f32[4, 8]\ninput B : f32[4, 8]\n"
                                   "Y = add(X, B)\noutput Y\n")),
            (std::vector<int64_t>{0, 0}));
  // A repeat of a weight (batched heads) is still the weight; batched fan-in is dim -2.
  EXPECT_EQ(weight_fan_in(parse_ok("input X : f32[4, 2, 8]\ninput W : f32[1, 8, 3]\n"
                                   "R = repeat(W, dim=0, times=4)\nY = matmul(X, R)\noutput Y\n")),
            (std::vector<int64_t>{0, 8}));
}

TEST(InputRoles, ExamplesAgreeAcrossTheirRewrites) {
  // Inputs: X, W1, W2 (the same roles whether the matmuls are kernels or block matmuls read
  // through input iterators).
  EXPECT_EQ(fan_in_of("gated_mlp"), (std::vector<int64_t>{0, 4096, 4096}));
  EXPECT_EQ(fan_in_of("gated_mlp.fused"), fan_in_of("gated_mlp"));
  // X, G, W: the norm's gain G is an activation-sized vector, not contracted.
  EXPECT_EQ(fan_in_of("rms_norm_matmul"), (std::vector<int64_t>{0, 0, 4096}));
  EXPECT_EQ(fan_in_of("rms_norm_matmul.fused"), fan_in_of("rms_norm_matmul"));
  // X, W, A, B: concat_matmul (X || XA) x (W || B) is X W + (XA) B.
  EXPECT_EQ(fan_in_of("lora"), (std::vector<int64_t>{0, 256, 256, 16}));
  EXPECT_EQ(fan_in_of("lora.concat_matmul"), fan_in_of("lora"));
  // Q, K, V: one matrix per head (a batch dim of 2): activations, not weights.
  EXPECT_EQ(fan_in_of("gqa"), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(fan_in_of("gqa.flash_attention"), fan_in_of("gqa"));
}

TEST(InputRoles, ScalesAndDrawnValues) {
  ir::KernelGraph g = parse_ok("input X : f32[4, 64]\ninput W : f32[64, 3]\ninput B : f32[4, 3]\n"
                               "H = matmul(X, W)\nY = add(H, B)\noutput Y\n");
  EXPECT_EQ(input_scales(g), (std::vector<double>{1, 1.0 / 8, 1}));
  Rng rng(5);
  const auto in = random_inputs(g, rng);
  double wmax = 0, xmax = 0;
  for (double w : in[1].data) wmax = std::max(wmax, std::fabs(w));
  for (double x : in[0].data) xmax = std::max(xmax, std::fabs(x));
  EXPECT_LT(wmax, 1.0 / 8);
  EXPECT_GT(wmax, 0.5 / 8);
  EXPECT_GT(xmax, 0.5);
  // The program's own scale (text `scale=`, --input-scale) wins over the role.
  ASSERT_TRUE(ir::set_input_scale(g, "W", 3).ok());
  ASSERT_TRUE(ir::set_input_scale(g, "B", 0.5).ok());
  EXPECT_EQ(input_scales(g), (std::vector<double>{1, 3, 0.5}));
  // The same seed draws the same values whatever the scales: only their size changes.
  Rng a(9), b(9);
  const auto s1 = random_inputs(g, a, {1, 1, 1});
  const auto s2 = random_inputs(g, b, {2, 1, 1});
  EXPECT_EQ(2 * s1[0].data[3], s2[0].data[3]);
  EXPECT_EQ(s1[1].data, s2[1].data);
}

// An f16 matmul over 4096: with the weight scaled by role (1/64) it stays far inside f16's
// range; forced to scale=1000 (entries of about 1000 x 64 / 3 = 2e4, the largest beyond
// 65504) it overflows, and the tensor named is the matmul's, not the output after it.
const char* kOverflowing =
    "input X : f16[8, 4096]\n"
    "input W : f16[4096, 1024] scale=1000\n"
    "H = matmul(X, W)\n"
    "S = silu(H)\n"
    "O = scale(S, factor=1/2)\n"
    "output O\n";

TEST(ProgramOverflow, NamesTheFirstTensorThatIsNotFinite) {
  const ir::KernelGraph g = parse_ok(kOverflowing);
  Rng rng(1);
  const auto in = random_inputs(g, rng);
  const std::optional<Overflow> o = find_overflow(g, in);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->tensor, "H");
  EXPECT_EQ(o->message(),
            "the program itself overflows in f16: 'H' is the first tensor (in program order) "
            "that is not finite");
  EXPECT_FALSE(find_overflow(g, in, /*float64=*/true).has_value());  // a float64 run is fine
  // Scaled by role instead (the program without scale=): nothing overflows.
  ir::KernelGraph by_role = g;
  by_role.input_scales.clear();
  Rng rng2(1);
  EXPECT_FALSE(find_overflow(by_role, random_inputs(by_role, rng2)).has_value());
}

// The float check never blames the candidate for the program's own overflow: it says so, names
// the tensor, and compares the candidate in float64 (accepted when equal).
TEST(ProgramOverflow, FloatCheckNamesTheProgramNotTheCandidate) {
  const ir::KernelGraph g = parse_ok(kOverflowing);
  std::vector<int> perm;
  const FloatReport r = float_check(g, g, perm, 3);
  EXPECT_TRUE(r.ok) << r.note;
  EXPECT_NE(r.note.find("the program itself overflows in f16: 'H' is the first tensor"),
            std::string::npos)
      << r.note;
  EXPECT_NE(r.note.find("candidate compared in float64"), std::string::npos) << r.note;
}

}  // namespace
}  // namespace mugraph::verify
