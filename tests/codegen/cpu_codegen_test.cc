// The CPU code generator against the float64 interpreter: every example (plain program and
// hand-optimized uGraph) compiled into one module, run on seeded inputs with poisoned outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "codegen/cpu/emit_ops.h"
#include "driver/cpu_backend.h"
#include "ir/text.h"
#include "test_util.h"

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

TEST(CpuCodegen, EveryExampleMatchesTheInterpreter) {
  const auto files = example_files();
  ASSERT_GE(files.size(), 11u);
  std::vector<ir::KernelGraph> graphs;
  std::vector<codegen::cpu::NamedGraph> named;
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
        // (qknorm_attention stores exp(Qn Kn^T), up to e^64, in an f16 tensor).
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
