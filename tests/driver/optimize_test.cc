// `mugraph optimize` end to end on a small program: search, rank, JIT, check, time, certify.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "driver/cuda_backend.h"
#include "driver/optimize.h"
#include "driver/tune.h"
#include "ir/text.h"

namespace mugraph {
namespace {

namespace fs = std::filesystem;

driver::OptimizeOptions small_options(const target::Target& t) {
  driver::OptimizeOptions o;
  o.search.max_kernel_ops = 2;
  o.search.max_graph_defined_ops = 0;
  o.search.threads = 2;
  o.search.target = t;
  o.top_n = 4;
  o.runs = 3;
  o.jit.cache_dir = (fs::temp_directory_path() / "mugraph-test-cache").string();
  return o;
}

ir::KernelGraph lora() {
  return driver::load_graph_file(std::string(MUGRAPH_TEST_DATA_DIR) + "/search/lora.mu").value();
}

TEST(Optimize, CpuRunsThePipelineAndMeasuresEveryVariant) {
  const ir::KernelGraph g = lora();
  auto r = driver::optimize(g, small_options(target::local_cpu()));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->measured);
  ASSERT_FALSE(r->ranked.empty());
  EXPECT_LE(r->ranked.size(), 4u);
  EXPECT_LE(r->program_max_rel, driver::cpu_tolerance(g));
  for (size_t i = 0; i < r->ranked.size(); ++i) {
    const driver::Variant& v = r->ranked[i];
    EXPECT_TRUE(v.measured) << v.label;
    EXPECT_GT(v.seconds, 0);
    if (i > 0) {
      EXPECT_LE(r->ranked[i - 1].cost.total_s, v.cost.total_s);  // model order
    }
  }
  EXPECT_GE(r->spearman, -1.0);
  EXPECT_LE(r->spearman, 1.0);
  // Issue 27, item 5: the program and every variant were timed in the same interleaved rounds;
  // the chosen graph beats the program beyond the noise, or none does and the program is kept.
  EXPECT_GE(r->rounds.rounds, 3);
  EXPECT_EQ(r->program.timing.samples.size(), static_cast<size_t>(r->rounds.rounds));
  for (const driver::Variant& v : r->ranked) {
    EXPECT_EQ(v.timing.samples.size(), static_cast<size_t>(r->rounds.rounds)) << v.label;
    EXPECT_GT(v.speedup, 0) << v.label;
  }
  if (r->best >= 0) {
    EXPECT_TRUE(driver::beats(r->chosen().timing, r->program.timing, 0.02));
  } else {
    for (const driver::Variant& v : r->ranked)
      EXPECT_FALSE(driver::beats(v.timing, r->program.timing, 0.02)) << v.label;
  }
  if (r->best >= 0) {
    EXPECT_TRUE(r->certify_ran);
    EXPECT_EQ(r->certified.kind, verify::VerdictKind::kVerified) << r->certified.summary;
  }
  EXPECT_NE(r->best_source.find("mg_entry_best"), std::string::npos);
  const std::string text = driver::format_report(*r, g);
  EXPECT_NE(text.find("rank correlation"), std::string::npos) << text;
  EXPECT_NE(text.find("spread"), std::string::npos) << text;
  EXPECT_NE(text.find("interleaved rounds"), std::string::npos) << text;

  const fs::path dir = fs::temp_directory_path() / "mugraph-optimize-test";
  fs::remove_all(dir);
  ASSERT_TRUE(driver::write_optimize_results(*r, g, dir.string()).ok());
  for (const char* f : {"best.mu", "best.json", "best_cpu.cc", "report.txt", "search/summary.txt"})
    EXPECT_TRUE(fs::exists(dir / f)) << f;
}

TEST(Optimize, GpuTargetGeneratesCudaAndMeasuresOnlyWithAGpu) {
  auto r = driver::optimize(lora(), small_options(target::h100()));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NE(r->best_source.find("extern \"C\" int mg_entry_best("), std::string::npos);
  const bool gpu = runtime::open_cuda_device(0).ok();
  EXPECT_EQ(r->measured, gpu);
  bool said_unmeasured = false, compiled = false;
  for (const std::string& n : r->notes) {
    said_unmeasured |= n.find("nothing was measured") != std::string::npos;
    compiled |= n.find("best.cu compiled with nvcc") != std::string::npos;
  }
  EXPECT_EQ(said_unmeasured, !gpu);
  // With a GPU it was compiled and run for the measurement; without nvcc the note says so.
  const bool nvcc = fs::exists(driver::default_cuda_jit_options().nvcc);
  EXPECT_EQ(compiled, !gpu && nvcc);
  const fs::path dir = fs::temp_directory_path() / "mugraph-optimize-gpu-test";
  fs::remove_all(dir);
  ASSERT_TRUE(driver::write_optimize_results(*r, lora(), dir.string()).ok());
  EXPECT_TRUE(fs::exists(dir / "best.cu"));
  EXPECT_FALSE(fs::exists(dir / "best_cpu.cc"));
}

// MCFuser's G7 chain (512 x 512, K = H = 128) in bf16: for h100 some tilings need more shared
// memory than the CUDA generator's plan allows (the bf16 product A B stays an f32 tile there:
// WMMA has no bf16 accumulator), though the IR's estimate lets them through. tune must rank
// (and, on a GPU, measure) only what the generator takes, and hand out a kernel that generates;
// it once handed out such a tiling, or on a GPU failed ("the block graph needs 241664 bytes of
// shared memory per block", the f16 chain before its product was stored in f16).
TEST(Tune, GpuTargetRanksOnlyTilingsTheCudaGeneratorTakes) {
  auto program = ir::parse_graph(R"(
input A : bf16[512, 128]
input B : bf16[128, 512]
input D : bf16[512, 128]
C = matmul(A, B)
E = matmul(C, D)
output E
)");
  ASSERT_TRUE(program.ok()) << program.status().message();
  driver::TuneOptions o;
  o.target = target::h100();
  o.search.time_limit_s = 20;
  auto r = driver::tune(*program, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  bool named = false;
  for (const std::string& n : r->search.notes)
    named |= n.find("code generator refused") != std::string::npos &&
             n.find("shared memory") != std::string::npos;
  EXPECT_TRUE(named) << "no tiling of G7 was refused: the test no longer covers the refusal";
  ASSERT_TRUE(r->best.has_value());
  EXPECT_TRUE(driver::cuda_generates(*r->best, o.target).ok());
  EXPECT_TRUE(driver::cuda_generates(r->search.model_best.graph, o.target).ok());
  for (const auto& m : r->search.measured) EXPECT_TRUE(driver::cuda_generates(m.graph, o.target).ok());
}

TEST(Optimize, InvalidProgramIsRefused) {
  ir::KernelGraph g = lora();
  driver::OptimizeOptions o = small_options(target::local_cpu());
  o.search.target.device_memory_bytes = 1;  // nothing fits
  EXPECT_FALSE(driver::optimize(g, o).ok());
}

}  // namespace
}  // namespace mugraph

namespace mugraph {
namespace {

// Issue 19: optimize hands out only what is proven. A 64-wide softmax's fused variants certify
// PASSED (no bound): without the opt-in the program is kept and the report says loudly which
// faster variant was not proven; with it the variant is taken and its verdict reported. Target
// h100 without a GPU ranks by the model, so which variants are "faster" does not depend on
// timing noise.
TEST(Optimize, UnprovenVariantsAreHandedOutOnlyWithTheOptIn) {
  const ir::KernelGraph g =
      driver::load_graph_file(std::string(MUGRAPH_TEST_DATA_DIR) + "/search/silu_softmax.mu").value();
  driver::OptimizeOptions o = small_options(target::find_target("h100").value());
  o.search.max_kernel_ops = 1;
  o.search.max_graph_defined_ops = 1;
  o.search.min_blocks = 1;
  o.certify_tries = 1;
  if (runtime::open_cuda_device(0).ok()) GTEST_SKIP() << "a GPU is present: timings rank";
  auto r = driver::optimize(g, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_FALSE(r->ranked.empty());
  EXPECT_EQ(r->best, -1);
  EXPECT_FALSE(r->certify_ran);
  EXPECT_NE(r->not_verified.find("NOT VERIFIED"), std::string::npos);
  EXPECT_NE(driver::format_report(*r, g).find("NOT VERIFIED: the faster variant"),
            std::string::npos);
  o.accept_unproved = true;
  auto a = driver::optimize(g, o);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_GE(a->best, 0);
  EXPECT_EQ(a->certified.kind, verify::VerdictKind::kPassed) << a->certified.summary;
  EXPECT_NE(driver::format_report(*a, g).find("--accept-unproved"), std::string::npos);
  const fs::path dir = fs::temp_directory_path() / "mugraph-optimize-unproved";
  fs::remove_all(dir);
  ASSERT_TRUE(driver::write_optimize_results(*a, g, dir.string()).ok());
  std::ifstream best(dir / "best.mu");
  std::string first;
  std::getline(best, first);
  EXPECT_EQ(first.rfind("# verdict: PASSED (certify)", 0), 0u) << first;
}

}  // namespace
}  // namespace mugraph
