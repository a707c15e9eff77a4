// The CUDA code generator without a GPU (what CI runs): every example and every candidate the
// discovery searches find is generated and compiled by nvcc for sm_80 and sm_90; the
// hand-optimized examples' sources match golden files; errors are clear. Execution on a GPU is
// tests/codegen/gpu_execution_test.cc (ctest label `gpu`).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "codegen/candidates.h"
#include "codegen/cuda_test_util.h"
#include "driver/cuda_backend.h"
#include "ir/text.h"
#include "test_util.h"

namespace mugraph {
namespace {

namespace fs = std::filesystem;
using testing::candidates;
using testing::examples;
using testing::Named;
using testing::test_cuda_jit;

// ---- compile (no GPU needed) ----------------------------------------------------------------

TEST(CudaCodegen, EveryExampleCompilesForSm80AndSm90) {
  MG_SKIP_WITHOUT_NVCC();
  const Named ex = examples();
  auto so = driver::compile_cuda(ex.named(), target::h100(), test_cuda_jit());
  ASSERT_TRUE(so.ok()) << so.status().message();
  EXPECT_TRUE(fs::exists(so.value()));
}

void compile_candidates(const std::string& program) {
  MG_SKIP_WITHOUT_NVCC();
  const Named c = candidates(program);
  ASSERT_GE(c.graphs.size(), 2u) << program << ": the search found nothing to generate";
  auto so = driver::compile_cuda(c.named(), target::h100(), test_cuda_jit());
  ASSERT_TRUE(so.ok()) << so.status().message();
}

TEST(CudaCodegen, EveryGatedMlpCandidateCompiles) { compile_candidates("gated_mlp"); }
TEST(CudaCodegen, EveryAttentionCandidateCompiles) { compile_candidates("attention"); }
TEST(CudaCodegen, EveryLoraCandidateCompiles) { compile_candidates("lora"); }
TEST(CudaCodegen, EveryRmsNormCandidateCompiles) { compile_candidates("rms_norm_matmul"); }
TEST(CudaCodegen, EveryNTransCandidateCompiles) { compile_candidates("ntrans"); }
TEST(CudaCodegen, EveryGqaDecodeCandidateCompiles) { compile_candidates("gqa_decode"); }
TEST(CudaCodegen, EveryQkNormCandidateCompiles) { compile_candidates("qknorm"); }

// ---- golden sources -------------------------------------------------------------------------

// The generated source of each hand-optimized example, byte for byte. After an intended change
// to the generator, regenerate with MUGRAPH_UPDATE_GOLDEN=1 and review the diff.
TEST(CudaCodegen, HandOptimizedExamplesMatchGoldenSources) {
  const bool update = std::getenv("MUGRAPH_UPDATE_GOLDEN") != nullptr;
  for (const std::string e : {"rms_norm_matmul.fused", "gated_mlp.fused", "gqa.flash_attention",
                               "gqa.flash_decoding", "lora.concat_matmul"}) {
    const ir::KernelGraph g = testing::load_example(e);
    auto m = driver::generate_cuda({{"graph", &g}}, target::h100());
    ASSERT_TRUE(m.ok()) << e << ": " << m.status().message();
    const fs::path golden = fs::path(MUGRAPH_TEST_DATA_DIR) / "golden" / (e + ".cu");
    if (update) {
      std::ofstream(golden) << m->source;
      continue;
    }
    ASSERT_TRUE(fs::exists(golden)) << golden << " missing (MUGRAPH_UPDATE_GOLDEN=1 writes it)";
    EXPECT_EQ(m->source, testing::read_file(golden.string()))
        << e << ": generated CUDA differs from " << golden;
  }
}

// ---- structure of the generated code ---------------------------------------------------------

TEST(CudaCodegen, FusedRmsNormIsOneKernelWithTensorCoreOperandsAndDoubleBuffering) {
  const ir::KernelGraph g = testing::load_example("rms_norm_matmul.fused");
  auto m = driver::generate_cuda({{"graph", &g}}, target::h100());
  ASSERT_TRUE(m.ok()) << m.status().message();
  const std::string& s = m->source;
  auto count = [&](const std::string& needle) {
    size_t n = 0;
    for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("__global__"), 1u);
  EXPECT_EQ(count("<<<"), 1u);
  // xg = mul(x, g) feeds only the matmul: stored as f16 so that tensor cores take it.
  EXPECT_NE(s.find("mg::Mat<const mg::f16>{s_xg"), std::string::npos);
  EXPECT_NE(s.find("mg::cp_async_wait<1>()"), std::string::npos);  // double-buffered loop
  EXPECT_EQ(count("cublasGemm"), 0u);  // no cuBLAS call
}

TEST(CudaCodegen, PredefinedMatmulGoesThroughCublas) {
  const ir::KernelGraph g = testing::load_example("lora");
  auto m = driver::generate_cuda({{"graph", &g}}, target::h100());
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_NE(m->source.find("cublasGemmStridedBatchedEx"), std::string::npos);
}

// ---- errors ---------------------------------------------------------------------------------

TEST(CudaCodegen, SharedMemoryOverflowNamesTheOpAndTheBytes) {
  const ir::KernelGraph g = testing::load_example("gqa.flash_attention");
  codegen::cuda::CudaOptions o;
  o.shared_limit = 16 * 1024;
  auto m = codegen::cuda::generate_cuda({{"graph", &g}}, o);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("graph_defined op 0 producing 'O'"), std::string::npos)
      << m.status().message();
  EXPECT_NE(m.status().message().find("the target allows 16384"), std::string::npos)
      << m.status().message();
}

TEST(CudaCodegen, CpuTargetIsRefused) {
  const ir::KernelGraph g = testing::load_example("lora");
  auto m = driver::generate_cuda({{"graph", &g}}, target::local_cpu());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("needs a GPU target"), std::string::npos);
}

TEST(CudaJit, MissingNvccIsAClearError) {
  runtime::CudaJitOptions o = test_cuda_jit();
  o.nvcc = "/nonexistent/nvcc";
  const ir::KernelGraph g = testing::load_example("lora");
  auto so = driver::compile_cuda({{"graph", &g}}, target::h100(), o);
  ASSERT_FALSE(so.ok());
  EXPECT_NE(so.status().message().find("CUDA compiler '/nonexistent/nvcc' not found"),
            std::string::npos)
      << so.status().message();
}

TEST(CudaJit, CompileErrorShowsTheLogAndTheSource) {
  MG_SKIP_WITHOUT_NVCC();
  codegen::Module m;
  m.source = "this is not CUDA\n";
  auto so = runtime::compile_cuda(m, test_cuda_jit());
  ASSERT_FALSE(so.ok());
  EXPECT_NE(so.status().message().find("compiling generated CUDA code failed"), std::string::npos);
  EXPECT_NE(so.status().message().find(".cu"), std::string::npos);
}

}  // namespace
}  // namespace mugraph
