// The CUDA code generator without a GPU (what CI runs): every example and every candidate the
// discovery searches find is generated and compiled by nvcc for sm_80 and sm_90; the
// hand-optimized examples' sources match golden files; errors are clear. Execution on a GPU is
// tests/codegen/gpu_execution_test.cc (ctest label `gpu`).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "codegen/candidates.h"
#include "codegen/cuda_source_check.h"
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

// The structural checks of cuda_source_check.h on a module's source: none may report.
void expect_clean_source(const std::string& what, const std::string& source) {
  for (const std::string& p : testing::check_cp_async_reads(source)) ADD_FAILURE() << what << ": " << p;
  for (const std::string& p : testing::check_wmma_alignment(source)) ADD_FAILURE() << what << ": " << p;
}

void compile_candidates(const std::string& program) {
  MG_SKIP_WITHOUT_NVCC();
  const Named c = candidates(program);
  ASSERT_GE(c.graphs.size(), 2u) << program << ": the search found nothing to generate";
  auto m = driver::generate_cuda(c.named(), target::h100());
  ASSERT_TRUE(m.ok()) << m.status().message();
  expect_clean_source(program, m->source);
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
// LoRA as one graph-defined kernel, (X A) B chaining two block matmuls (issue 20: the chained
// matmul's f16 output tile tripped an internal check in 50 of these 65 candidates).
TEST(CudaCodegen, EveryLoraSingleKernelCandidateCompiles) { compile_candidates("lora_single_kernel"); }

// ---- structure, without nvcc ----------------------------------------------------------------

// Generating the LoRA single-kernel space needs no nvcc (its search takes well under a second),
// so the quick loop catches a generator that cannot take a matmul feeding a matmul.
TEST(CudaCodegen, ChainedBlockMatmulsGenerate) {
  const Named c = candidates("lora_single_kernel");
  ASSERT_GE(c.graphs.size(), 2u);
  size_t chained = 0;
  for (const ir::KernelGraph& g : c.graphs)
    for (const ir::KernelOp& op : g.ops) {
      if (!op.graph_defined) continue;
      std::vector<bool> from_matmul(op.block->tensors.size(), false);
      for (const ir::BlockNode& n : op.block->nodes) {
        const bool mm = n.kind == ir::BlockNodeKind::kCompute && n.op == ir::OpKind::kMatmul;
        for (ir::TensorId t : n.inputs)
          if (mm && from_matmul[static_cast<size_t>(t)]) ++chained;
        if (mm) from_matmul[static_cast<size_t>(n.outputs[0])] = true;
      }
    }
  EXPECT_GT(chained, 0u) << "no candidate chains two block matmuls: the space changed";
  for (size_t i = 0; i < c.graphs.size(); ++i) {
    auto m = driver::generate_cuda({{"graph", &c.graphs[i]}}, target::h100());
    ASSERT_TRUE(m.ok()) << c.names[i] << ": " << m.status().message() << "\n"
                        << ir::print_graph(c.graphs[i]);
    expect_clean_source(c.names[i], m->source);
  }
}

// Issue 20's data race: a tile filled by cp.async is read only after a cp_async_wait covering
// it and then a __syncthreads() (the wait completes only the calling thread's copies). Loop-
// invariant tiles used to be read right after the wait (every forloop = 1 kernel, kernel 2 of
// gqa.flash_decoding, QKNorm's Q-norm in the first iteration). Checked here on every example and
// on the LoRA single-kernel space (forloop 1 and 4; its search takes a second), and by
// compile_candidates on every other space (slow: nTrans's search alone takes ~50 s). The WMMA
// fragments of every matmul_tile call are 32-byte aligned.
TEST(CudaCodegen, CpAsyncTilesAreReadAfterWaitAndBarrierAndFragmentsAreAligned) {
  const Named ex = examples();
  for (size_t i = 0; i < ex.graphs.size(); ++i) {
    auto m = driver::generate_cuda({{"graph", &ex.graphs[i]}}, target::h100());
    ASSERT_TRUE(m.ok()) << ex.names[i] << ": " << m.status().message();
    expect_clean_source(ex.names[i], m->source);
  }
  const Named c = candidates("lora_single_kernel");
  auto m = driver::generate_cuda(c.named(), target::h100());
  ASSERT_TRUE(m.ok()) << m.status().message();
  expect_clean_source("lora_single_kernel", m->source);
}

// The checker itself finds what it looks for (a must-fail test on hand-written kernels).
TEST(CudaSourceCheck, FindsReadsBeforeTheBarrierAndMisalignedFragments) {
  const std::string racy = R"(__global__ void __launch_bounds__(128) k_kernel(const mg::f16* d) {
  extern __shared__ __align__(128) unsigned char smem[];
  mg::f16* const s_x = reinterpret_cast<mg::f16*>(smem + 0);  // [8, 16]
  float* const s_y = reinterpret_cast<float*>(smem + 256);  // [8, 16]
  mg::copy_rows_async(s_x, d, 8, 16, [&](int r) -> int64_t { return r * 16; }, [&](int r) -> int { return r * 16; });
  mg::cp_async_commit();
  for (int it = 0; it < 1; ++it) {
    mg::cp_async_commit();
    mg::cp_async_wait<0>();
    s_y[0] = mg::ld(s_x[0]);
    __syncthreads();
  }
}
)";
  const auto p = testing::check_cp_async_reads(racy);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].find("k_kernel (it = 0): reads s_x after cp_async_wait but before __syncthreads()"),
            std::string::npos)
      << p[0];
  std::string fixed = racy;
  fixed.replace(fixed.find("    s_y[0]"), 0, "    __syncthreads();\n");
  EXPECT_TRUE(testing::check_cp_async_reads(fixed).empty());
  std::string early = racy;
  early.replace(early.find("    mg::cp_async_commit();\n    mg::cp_async_wait"), 0, "    s_y[1] = mg::ld(s_x[1]);\n");
  EXPECT_NE(testing::check_cp_async_reads(early).at(0).find("while its cp.async copy is in flight"),
            std::string::npos);
  // A column-major A of 24 rows at 8x32 fragments: the middle fragment starts 16 bytes off.
  const std::string wmma = R"(__global__ void __launch_bounds__(128) w_kernel() {
  extern __shared__ __align__(128) unsigned char smem[];
  mg::f16* const s_a = reinterpret_cast<mg::f16*>(smem + 0);  // [24, 16] column-major
  mg::f16* const s_b = reinterpret_cast<mg::f16*>(smem + 768);  // [16, 32]
  float* const s_c = reinterpret_cast<float*>(smem + 1792);  // [24, 32]
  mg::matmul_tile(24, 32, 16, mg::Mat<const mg::f16>{s_a + 0, 1, 24}, mg::Mat<const mg::f16>{s_b + 0, 32, 1}, mg::Mat<float>{s_c + 0, 32, 1}, false);
}
)";
  EXPECT_TRUE(testing::check_wmma_alignment(wmma).empty());  // plan_wmma takes SIMT there
  const mg::WmmaPlan p24 = mg::plan_wmma(true, 24, 32, 16, 1, 24, 32, 1, 32, 1, 0, 768, 1792);
  EXPECT_EQ(p24.fm, 0);
  const mg::WmmaPlan p24r = mg::plan_wmma(true, 24, 32, 16, 16, 1, 32, 1, 32, 1, 0, 768, 1792);
  EXPECT_EQ(p24r.fm, 8);  // row-major A: 8x32 fragments stay aligned
}

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

// A kernel-level sum along a contiguous row is spread over a block per output (GQA's 4096-long
// softmax rows: 512 outputs, 512 blocks, a block reduction in 128 bytes of shared memory) or a
// warp per output (RMSNorm's 4096-long rows would also take blocks; a 64-long row a warp), not
// one thread reading a row serially. The host harness runs both forms (HostCudaExamples).
TEST(CudaCodegen, KernelLevelSumsSpreadALongRowOverABlockOrAWarp) {
  const ir::KernelGraph gqa = testing::load_example("gqa");
  auto m = driver::generate_cuda({{"graph", &gqa}}, target::h100());
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_NE(m->source.find("mg::block_sum(acc, "), std::string::npos) << m->source;
  EXPECT_NE(m->source.find("_kernel<<<512, 256, 128, stream>>>"), std::string::npos) << m->source;
  auto g = ir::parse_graph(
      "input X : f16[16, 64]\ninput Y : f32[64, 16]\n"
      "S = sum(X, dim=1, group=64)\nT = sum(Y, dim=0, group=64)\noutput S, T\n");
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto w = driver::generate_cuda({{"graph", &*g}}, target::h100());
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_NE(w->source.find("mg::warp_sum(acc)"), std::string::npos) << w->source;
  EXPECT_NE(w->source.find("_kernel<<<2, 256, 0, stream>>>"), std::string::npos) << w->source;
  // Y's column sums read along a strided dim: one thread per output (coalesced across threads).
  EXPECT_NE(w->source.find("for (int g = 0; g < 64; ++g)"), std::string::npos) << w->source;
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

TEST(CudaJit, CompileEachCompilesEveryModuleAndReportsTheFirstError) {
  MG_SKIP_WITHOUT_NVCC();
  runtime::CudaJitOptions o = test_cuda_jit();
  o.archs = {80};
  std::vector<codegen::Module> ms(3);
  for (size_t i = 0; i < ms.size(); ++i)
    ms[i].source = "__global__ void k" + std::to_string(i) + "(float* x) { x[0] = " +
                   std::to_string(i) + "; }\n";
  auto paths = runtime::compile_cuda_each(ms, o, 2);
  ASSERT_TRUE(paths.ok()) << paths.status().message();
  ASSERT_EQ(paths->size(), 3u);
  for (const std::string& p : *paths) EXPECT_TRUE(std::filesystem::exists(p)) << p;
  EXPECT_NE((*paths)[0], (*paths)[1]);
  EXPECT_NE((*paths)[1], (*paths)[2]);
  // Modules 1 and 2 fail: the error is module 1's, whichever nvcc finished first.
  ms[1].source = "#error first_broken_module\n";
  ms[2].source = "#error second_broken_module\n";
  auto bad = runtime::compile_cuda_each(ms, o, 3);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("first_broken_module"), std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace mugraph
