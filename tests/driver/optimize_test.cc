// `mugraph optimize` end to end on a small program: search, rank, JIT, check, time, certify.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "driver/optimize.h"

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
  // The chosen graph is the fastest measured one, or the program when none beats it.
  for (const driver::Variant& v : r->ranked) EXPECT_GE(v.seconds, r->chosen().seconds);
  if (r->best >= 0) {
    EXPECT_TRUE(r->certify_ran);
    EXPECT_EQ(r->certified.kind, verify::VerdictKind::kVerified) << r->certified.summary;
  }
  EXPECT_NE(r->best_source.find("mg_entry_best"), std::string::npos);
  const std::string text = driver::format_report(*r, g);
  EXPECT_NE(text.find("rank correlation"), std::string::npos) << text;

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
  EXPECT_EQ(compiled, !gpu);  // with a GPU it was compiled and run for the measurement
  const fs::path dir = fs::temp_directory_path() / "mugraph-optimize-gpu-test";
  fs::remove_all(dir);
  ASSERT_TRUE(driver::write_optimize_results(*r, lora(), dir.string()).ok());
  EXPECT_TRUE(fs::exists(dir / "best.cu"));
  EXPECT_FALSE(fs::exists(dir / "best_cpu.cc"));
}

TEST(Optimize, InvalidProgramIsRefused) {
  ir::KernelGraph g = lora();
  driver::OptimizeOptions o = small_options(target::local_cpu());
  o.search.target.device_memory_bytes = 1;  // nothing fits
  EXPECT_FALSE(driver::optimize(g, o).ok());
}

}  // namespace
}  // namespace mugraph
