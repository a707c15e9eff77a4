// Issue 27, item 4 through the driver: --input-scale, comparisons that draw one set of inputs
// (the reference's), and optimize's reference when the program itself overflows.
#include <cmath>
#include <cstring>

#include "driver/cpu_backend.h"
#include "test_util.h"

namespace mugraph::driver {
namespace {

using mugraph::testing::parse_ok;

const char* kMlp =
    "input X : f16[8, 4096]\n"
    "input W : f16[4096, 1024]\n"
    "H = matmul(X, W)\n"
    "S = silu(H)\n"
    "O = scale(S, factor=1/2)\n"
    "output O\n";

TEST(InputScaleFlag, AppliesAndRejectsClearly) {
  ir::KernelGraph g = parse_ok(kMlp);
  ASSERT_TRUE(apply_input_scales(g, {"W=0.02", "X=1e-1"}).ok());
  EXPECT_EQ(g.input_scales, (std::vector<double>{0.1, 0.02}));
  const std::pair<const char*, const char*> bad[] = {
      {"Q=0.02", "--input-scale 'Q=0.02': no input named 'Q' (the inputs are X, W)"},
      {"W", "--input-scale 'W': expected NAME=SCALE (e.g. W=0.02)"},
      {"=2", "--input-scale '=2': expected NAME=SCALE"},
      {"W=", "--input-scale 'W=': the scale must be a finite number > 0, got ''"},
      {"W=abc", "the scale must be a finite number > 0, got 'abc'"},
      {"W=0.02x", "got '0.02x'"},
      {"W=0", "got '0'"},
      {"W=-1", "got '-1'"},
      {"W=inf", "got 'inf'"},
      {"W=nan", "got 'nan'"},
  };
  for (const auto& [spec, want] : bad) {
    const Status s = apply_input_scales(g, {spec});
    ASSERT_FALSE(s.ok()) << spec;
    EXPECT_NE(s.message().find(want), std::string::npos) << spec << ": " << s.message();
  }
}

// compare draws the inputs once, with the reference's scales: a candidate that does not set
// the program's scale (a search result) still runs on exactly the program's inputs.
TEST(InputScaleFlag, CompareDrawsTheReferencesInputs) {
  ir::KernelGraph a = parse_ok(kMlp);
  const ir::KernelGraph b = parse_ok(kMlp);
  ASSERT_TRUE(apply_input_scales(a, {"W=0.5", "X=0.25"}).ok());
  auto d = compare_graphs(a, b, 1, Precision::kDouble);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ((*d)[0].max_rel, 0);
}

// The f16 program with its weight forced to scale=1000 overflows at H; optimize's reference
// for the variants is then the float64 interpretation, and the note names H.
TEST(ProgramOverflow, OptimizeReferenceNamesTheProgram) {
  ir::KernelGraph g = parse_ok(kMlp);
  ASSERT_TRUE(apply_input_scales(g, {"W=1000"}).ok());
  std::vector<std::vector<float>> run(1, std::vector<float>(8 * 1024, 1.0f));
  // A finite program run is the reference itself.
  auto same = run_reference(g, 4, run);
  ASSERT_TRUE(same.ok()) << same.status().message();
  EXPECT_TRUE(same->note.empty());
  EXPECT_EQ(same->outputs[0][0], 1.0);
  EXPECT_EQ(same->differs("cand2", 0.5, 0.01),
            "cand2: generated code differs from the program's run (rel 0.500000 > 0.010000)");
  // A non-finite one: the program itself overflows, named; variants go against float64.
  run[0][5] = INFINITY;
  auto ref = run_reference(g, 4, run);
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  EXPECT_NE(ref->note.find("the program itself overflows in f16: 'H' is the first tensor"),
            std::string::npos)
      << ref->note;
  EXPECT_TRUE(ref->checkable);
  for (double x : ref->outputs[0]) ASSERT_TRUE(std::isfinite(x));
  EXPECT_EQ(ref->differs("cand1", NAN, 0.01).find("cand1: its run is not finite either"), 0u);
  EXPECT_EQ(ref->differs("cand1", NAN, 0.01).find("differs"), std::string::npos);
  EXPECT_EQ(ref->differs("cand1", INFINITY, 0.01).find("cand1: its run is not finite either"), 0u);
  EXPECT_EQ(ref->differs("cand1", 0.5, 0.01),
            "cand1: generated code differs from the float64 interpretation of the program (rel "
            "0.500000 > 0.010000)");
  // run/compare name it the same way (in the program's own precision).
  auto o = find_run_overflow(g, 4, Precision::kFloat);
  ASSERT_TRUE(o.ok());
  ASSERT_TRUE(o->has_value());
  EXPECT_EQ((*o)->tensor, "H");
  EXPECT_FALSE(find_run_overflow(parse_ok(kMlp), 4, Precision::kFloat)->has_value());
}

// optimize and tune run every variant on the program's inputs: make_buffers_like hands a variant
// the program's input buffers themselves instead of drawing again (one copy of a weight, warm
// in the cache, in every entry's timing). Byte for byte what a fresh draw gives, and a fresh
// draw where a variant's input types differ (here a strided layout).
TEST(CpuBuffers, VariantsReadTheProgramsDrawnInputs) {
  const ir::KernelGraph program = testing::parse_ok(kMlp);
  const ir::KernelGraph same = testing::parse_ok(
      "input X : f16[8, 4096]\ninput W : f16[4096, 1024]\nH = matmul(X, W)\noutput H\n");
  const ir::KernelGraph strided = testing::parse_ok(
      "input X : f16[8, 4096] strides=[1, 8]\ninput W : f16[4096, 1024]\nH = matmul(X, W)\n"
      "output H\n");
  const CpuBuffers drawn = make_buffers(program, 7, &program);
  for (const ir::KernelGraph* g : {&same, &strided}) {
    const CpuBuffers want = make_buffers(*g, 7, &program);
    const CpuBuffers got = make_buffers_like(*g, drawn, 7, &program);
    const std::vector<const void*> in = got.in();
    ASSERT_EQ(in.size(), want.inputs.size());
    for (size_t i = 0; i < want.inputs.size(); ++i)
      EXPECT_EQ(std::memcmp(in[i], want.inputs[i].data(), want.inputs[i].bytes()), 0) << "input " << i;
    ASSERT_EQ(got.outputs.size(), 1u);
    for (float v : got.outputs[0].values()) ASSERT_TRUE(std::isnan(v)) << "outputs are poisoned";
  }
  // Same input types: the very buffers the program's entry reads, also through a variant that
  // reads them itself; a strided input holds the same logical values in its own storage.
  const CpuBuffers shared = make_buffers_like(same, drawn, 7, &program);
  EXPECT_EQ(shared.in(), drawn.in());
  EXPECT_TRUE(shared.inputs.empty());
  EXPECT_EQ(make_buffers_like(same, shared, 7, &program).in(), drawn.in());
  const CpuBuffers s = make_buffers_like(strided, drawn, 7, &program);
  EXPECT_EQ(s.shared_inputs, nullptr);
  EXPECT_EQ(s.inputs[0].values(), drawn.inputs[0].values());
  EXPECT_NE(std::memcmp(s.inputs[0].data(), drawn.inputs[0].data(), drawn.inputs[0].bytes()), 0);
}

}  // namespace
}  // namespace mugraph::driver
