// Every hand-optimized example computes the same function as its plain program (relative error
// < 1e-9 in double, at the paper's shapes), and the comparison is sharp enough to catch small
// mutations of the optimized graphs.
#include <cmath>

#include "driver/driver.h"
#include "ir/text.h"
#include "test_util.h"

namespace mugraph::driver {
namespace {

using mugraph::testing::example_names;
using mugraph::testing::example_path;
using mugraph::testing::parse_ok;
using mugraph::testing::read_file;

double max_rel(const ir::KernelGraph& a, const ir::KernelGraph& b, uint64_t seed,
               Precision p = Precision::kDouble) {
  auto d = compare_graphs(a, b, seed, p);
  EXPECT_TRUE(d.ok()) << d.status().message();
  double worst = 0;
  for (const OutputDiff& o : *d) worst = std::isnan(o.max_rel) ? o.max_rel : std::max(worst, o.max_rel);
  return worst;
}

ir::KernelGraph load(const std::string& name) {
  auto g = load_graph_file(example_path(name));
  EXPECT_TRUE(g.ok()) << g.status().message();
  return std::move(g).value();
}

struct Pair {
  const char* plain;
  const char* optimized;
};
const Pair kPairs[] = {{"rms_norm_matmul", "rms_norm_matmul.fused"},
                       {"gated_mlp", "gated_mlp.fused"},
                       {"gqa", "gqa.flash_attention"},
                       {"gqa", "gqa.flash_decoding"},
                       {"lora", "lora.concat_matmul"}};

TEST(Examples, EveryExampleIsValidOnEveryGpuTarget) {
  for (const std::string& name : example_names())
    for (const char* t : {"a100", "h100", "h200"}) {
      auto target = target::find_target(t);
      ASSERT_TRUE(target.ok());
      Status s = validate(load(name), *target);
      EXPECT_TRUE(s.ok()) << name << " on " << t << ": " << s.message();
    }
}

TEST(Examples, OptimizedGraphsEqualTheirPrograms) {
  for (const Pair& p : kPairs) {
    SCOPED_TRACE(p.optimized);
    const double rel = max_rel(load(p.plain), load(p.optimized), /*seed=*/11);
    EXPECT_LT(rel, 1e-9);
  }
}

TEST(Examples, FloatRunsAgreeToFloatPrecision) {
  // f16 tensors are rounded when stored (unit roundoff 2^-11) in both runs.
  EXPECT_LT(max_rel(load("gqa"), load("gqa.flash_attention"), 2, Precision::kFloat), 1e-2);
}

// Replaces `from` by `to` in an example's text; the mutant must still be a valid graph.
ir::KernelGraph mutant(const std::string& name, const std::string& from, const std::string& to) {
  std::string text = read_file(example_path(name));
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return parse_ok(text.replace(at, from.size(), to));
}

TEST(Examples, MutantsAreCaught) {
  // Wrong mean (1/4095 instead of 1/4096): a 1.2e-4 relative change.
  EXPECT_GT(max_rel(load("rms_norm_matmul"),
                    mutant("rms_norm_matmul.fused", "factor=1/4096", "factor=1/4095"), 1), 1e-5);
  // G applied to the wrong operand: x*g folded into the sum of squares.
  EXPECT_GT(max_rel(load("rms_norm_matmul"),
                    mutant("rms_norm_matmul.fused", "sq = square(x)", "sq = square(xg)"), 1), 1e-3);
  // The SiLU moved to the other branch.
  EXPECT_GT(max_rel(load("gated_mlp"), mutant("gated_mlp.fused", "s = silu(aacc)\n    o = mul(s, bacc)",
                                              "s = silu(bacc)\n    o = mul(s, aacc)"), 1), 1e-3);
  // FlashAttention: the numerator built from raw scores instead of exp(scores).
  EXPECT_GT(max_rel(load("gqa"), mutant("gqa.flash_attention", "n = matmul(e, v)", "n = matmul(s, v)"), 1),
            1e-3);
  // FlashDecoding: the denominator partials summed from raw scores.
  EXPECT_GT(max_rel(load("gqa"), mutant("gqa.flash_decoding", "d = sum(e, dim=2, group=64)",
                                        "d = sum(s, dim=2, group=64)"), 1), 1e-3);
  // FlashDecoding: the second kernel divides by the mean of the 8 partial denominators instead
  // of their sum, so the output is 8x too large (relative error 7).
  EXPECT_GT(max_rel(load("gqa"), mutant("gqa.flash_decoding", "o4 = div(n, d)",
                                        "dm = scale(d, factor=1/8)\n  o4 = div(n, dm)"), 1), 1);
}

TEST(Examples, PlainProgramsRunToFiniteOutputs) {
  for (const std::string& name : example_names()) {
    if (name.find('.') != std::string::npos) continue;
    auto r = run_graph(load(name), 5, Precision::kDouble);
    ASSERT_TRUE(r.ok()) << name;
    for (const OutputSummary& s : *r) {
      EXPECT_EQ(s.non_finite, 0) << name;
      EXPECT_GT(s.rms, 0) << name;
    }
  }
}

}  // namespace
}  // namespace mugraph::driver
