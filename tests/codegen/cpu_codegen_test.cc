// The CPU code generator against the float64 interpreter: every example (plain program and
// hand-optimized uGraph) compiled into one module, run on seeded inputs with poisoned outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "codegen/cpu/emit_ops.h"
#include "codegen/cpu/generate_cpu.h"
#include "driver/cpu_backend.h"
#include "ir/text.h"
#include "search/search.h"
#include "codegen/candidates.h"
#include "test_util.h"
#include "verify/small_programs.h"

namespace mugraph {
namespace {

namespace fs = std::filesystem;

runtime::JitOptions test_jit() {
  runtime::JitOptions o = driver::default_jit_options();
  o.cache_dir = (fs::temp_directory_path() / "mugraph-test-cache").string();
  return o;
}

std::vector<std::string> example_files() {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(MUGRAPH_EXAMPLES_DIR))
    if (e.path().extension() == ".mu") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}


TEST(CpuCodegen, TransposesMatchTheInterpreter) {
  auto g = ir::parse_graph(testing::kTransposes);
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto m = driver::compile_cpu({{"graph", &*g}}, test_jit());
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto diffs = driver::check_cpu(*m.value(), 0, *g, 3);
  ASSERT_TRUE(diffs.ok()) << diffs.status().message();
  ASSERT_EQ(diffs->size(), 2u);
  for (const driver::OutputDiff& d : *diffs) EXPECT_LE(d.max_rel, 1e-5) << d.name;
}

TEST(CpuCodegen, EveryExampleMatchesTheInterpreter) {
  const auto files = example_files();
  ASSERT_GE(files.size(), 11u);
  std::vector<ir::KernelGraph> graphs;
  std::vector<codegen::NamedGraph> named;
  for (const std::string& f : files) graphs.push_back(driver::load_graph_file(f).value());
  for (size_t i = 0; i < files.size(); ++i)
    named.push_back({fs::path(files[i]).stem().string(), &graphs[i]});
  auto m = driver::compile_cpu(named, test_jit());
  ASSERT_TRUE(m.ok()) << m.status().message();
  for (size_t i = 0; i < graphs.size(); ++i) {
    auto diffs = driver::check_cpu(*m.value(), i, graphs[i], 7);
    ASSERT_TRUE(diffs.ok()) << files[i] << ": " << diffs.status().message();
    for (size_t o = 0; o < diffs.value().size(); ++o) {
      const driver::OutputDiff& d = diffs.value()[o];
      if (std::isnan(d.max_rel)) {
        // Only acceptable where the program itself overflows its storage type: the float32
        // interpreter, which rounds to f16 like the generated code, must then see it too
        // (e.g. exp of unscaled normalized scores, up to e^64, stored in f16).
        auto s = driver::run_graph(graphs[i], 7, driver::Precision::kFloat);
        ASSERT_TRUE(s.ok());
        EXPECT_GT(s.value()[o].non_finite, 0) << files[i] << " output " << d.name;
        continue;
      }
      EXPECT_LE(d.max_rel, driver::cpu_tolerance(graphs[i])) << files[i] << " output " << d.name;
    }
  }
}

}  // namespace
}  // namespace mugraph

namespace mugraph {
namespace {

// Every verified candidate the search finds for a discovery program, compiled into one module
// and checked like the examples.
void check_all_candidates(const std::string& name) {
  const std::vector<ir::KernelGraph> graphs = testing::program_and_candidates(
      name, testing::discovery_options(name), target::local_cpu());
  ASSERT_GE(graphs.size(), 2u) << name << ": the search found nothing to generate";
  std::vector<codegen::NamedGraph> named;
  for (size_t i = 0; i < graphs.size(); ++i) named.push_back({"c" + std::to_string(i), &graphs[i]});
  auto m = driver::compile_cpu(named, test_jit());
  ASSERT_TRUE(m.ok()) << m.status().message();
  for (size_t i = 0; i < graphs.size(); ++i) {
    auto diffs = driver::check_cpu(*m.value(), i, graphs[i], 11);
    ASSERT_TRUE(diffs.ok()) << diffs.status().message();
    for (const driver::OutputDiff& d : diffs.value())
      EXPECT_LE(d.max_rel, driver::cpu_tolerance(graphs[i]))
          << name << " candidate " << i << "\n" << ir::print_graph(graphs[i]);
  }
}

TEST(CpuCodegen, EveryGatedMlpCandidate) { check_all_candidates("gated_mlp"); }
TEST(CpuCodegen, EveryAttentionCandidate) { check_all_candidates("attention"); }
TEST(CpuCodegen, EveryLoraCandidate) { check_all_candidates("lora"); }
TEST(CpuCodegen, EveryRmsNormCandidate) { check_all_candidates("rms_norm_matmul"); }
TEST(CpuCodegen, EveryNTransCandidate) { check_all_candidates("ntrans"); }
TEST(CpuCodegen, EveryGqaDecodeCandidate) { check_all_candidates("gqa_decode"); }
TEST(CpuCodegen, EveryQkNormCandidate) { check_all_candidates("qknorm"); }

TEST(CpuJit, MissingCompilerIsAClearError) {
  runtime::JitOptions o = test_jit();
  o.compiler = "/nonexistent/c++";
  const ir::KernelGraph g = testing::search_data("lora");
  auto m = driver::compile_cpu({{"g", &g}}, o);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("C++ compiler '/nonexistent/c++' not found"),
            std::string::npos)
      << m.status().message();
}

TEST(CpuJit, CompileErrorsNameTheSource) {
  codegen::Module bad;
  bad.source = "this is not C++";
  auto m = runtime::load_cpu_module(bad, test_jit());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("compiling generated C++ code failed"), std::string::npos);
}

TEST(CpuJit, SecondLoadIsACacheHit) {
  const ir::KernelGraph g = testing::search_data("lora");
  auto a = driver::compile_cpu({{"g", &g}}, test_jit());
  auto b = driver::compile_cpu({{"g", &g}}, test_jit());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(b.value()->from_cache());
  EXPECT_EQ(a.value()->path(), b.value()->path());
  // Wrong arity is refused, not a crash.
  EXPECT_FALSE(b.value()->run(0, {}, {}).ok());
}

// A graph-defined kernel prefetches the tiles its next for-loop iteration reads: RMSNorm+MatMul's
// fused kernel, W's 64 x 32 column tile (64 rows of 32 f16, 4096 apart), guarded on the last
// iteration; a loop-invariant tile (fmap = phi) is never prefetched.
TEST(CpuCodegen, NextIterationTilesArePrefetched) {
  const ir::KernelGraph g =
      driver::load_graph_file(std::string(MUGRAPH_EXAMPLES_DIR) + "/rms_norm_matmul.fused.mu").value();
  auto m = codegen::cpu::generate_cpu({{"graph", &g}});
  ASSERT_TRUE(m.ok()) << m.status().message();
  const std::string& src = m->source;
  EXPECT_NE(src.find("if (it + 1 < 64) mg::prefetch_tile(d_W + (((it + 1)) * 64) * 4096 + bx * 32, 1, 0, 64, 4096, 32);"),
            std::string::npos) << src;
  EXPECT_NE(src.find("if (it + 1 < 64) mg::prefetch_tile(d_X + ((it + 1)) * 64, 1, 0, 16, 4096, 64);"),
            std::string::npos);
  const ir::KernelGraph gqa =
      driver::load_graph_file(std::string(MUGRAPH_EXAMPLES_DIR) + "/gqa.flash_attention.mu").value();
  auto m2 = codegen::cpu::generate_cpu({{"graph", &gqa}});
  ASSERT_TRUE(m2.ok()) << m2.status().message();
  EXPECT_NE(m2->source.find("mg::prefetch_tile(d_K"), std::string::npos) << m2->source;
  EXPECT_EQ(m2->source.find("mg::prefetch_tile(d_Q"), std::string::npos) << m2->source;
}

TEST(CpuCodegen, FloatLiteralsRoundTrip) {
  for (double x : {1.0 / 4096, 0.125, 1.0 / 3, 3.0, 1e-7})
    EXPECT_EQ(std::stof(codegen::float_literal(x)), static_cast<float>(x)) << x;
  EXPECT_EQ(codegen::identifier("9a-b"), "t_9a_b");
}

}  // namespace
}  // namespace mugraph
