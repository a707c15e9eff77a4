// The host CUDA harness (runtime/host_cuda) on hand-written kernels: each defect class the
// checker knows is planted in a tiny kernel and must be reported with kernel, buffer, op and
// thread; a correct kernel of the same shape runs clean and computes the right values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "codegen/cuda/tiles.h"
#include "driver/cpu_backend.h"
#include "runtime/device/mg_fragment.cuh"
#include "runtime/host_cuda/host_cuda.h"
#include "test_util.h"

namespace mugraph {
namespace {

using runtime::HostCudaFinding;
using runtime::HostCudaRun;

// One input X : f32[64], one output O : f32[64]; `body` is the kernel body (64 threads, one
// block unless `grid` says more, 256 bytes of dynamic shared memory as s_x).
const char* const kGraph = "input X : f32[64]\nO = exp(X)\noutput O\n";

std::string kernel_source(const std::string& body, const std::string& grid = "1", int smem = 256) {
  const std::string attr = smem > 48 * 1024
                               ? "  if (cudaFuncSetAttribute(test_kernel, "
                                 "cudaFuncAttributeMaxDynamicSharedMemorySize, " +
                                     std::to_string(smem) + ") != cudaSuccess) return 1;\n"
                               : "";
  return "#include <cuda_runtime.h>\n#include \"mugraph_device.cuh\"\nnamespace {\n"
         "__global__ void __launch_bounds__(64) test_kernel(const float* __restrict__ d_X, "
         "float* __restrict__ d_O) {\n"
         "  extern __shared__ __align__(128) unsigned char smem[];\n"
         "  float* const s_x = reinterpret_cast<float*>(smem + 0);  // [64]\n"
         "  const int t = threadIdx.x;\n" +
         body +
         "}\n}  // namespace\n"
         "extern \"C\" int mg_entry_t(void* const* in, void* const* out, void*, void*) {\n" +
         attr + "  test_kernel<<<dim3(" + grid + "), 64, " + std::to_string(smem) +
         ", nullptr>>>(static_cast<const float*>(in[0]), static_cast<float*>(out[0]));\n"
         "  return static_cast<int>(cudaGetLastError());\n}\n";
}

struct Ran {
  HostCudaRun run;
  std::vector<float> out, in;
};

Ran run_kernel(const std::string& body, const std::string& grid = "1", int smem = 256,
               int arch = 80) {
  codegen::Module m;
  m.source = kernel_source(body, grid, smem);
  m.entries.push_back({"mg_entry_t", 0, 1, 1});
  runtime::HostCudaOptions o;
  o.arch = arch;
  auto mod = runtime::compile_host_cuda(m, o);
  if (!mod.ok())
    throw std::runtime_error(mod.status().message());
  const ir::KernelGraph g = testing::parse_ok(kGraph);
  driver::CpuBuffers b = driver::make_buffers(g, 1);
  auto r = (*mod)->run(0, g, b.inputs, b.outputs);
  if (!r.ok())
    throw std::runtime_error(r.status().message());
  return {*r, b.outputs[0].values(), b.inputs[0].values()};
}

const HostCudaFinding* find(const HostCudaRun& r, const std::string& kind) {
  for (const HostCudaFinding& f : r.findings)
    if (f.kind == kind)
      return &f;
  return nullptr;
}

TEST(HostCuda, CorrectKernelIsCleanAndComputes) {
  const Ran r = run_kernel(
      "  // x = input_iterator(X)\n  s_x[t] = d_X[blockIdx.x * 0 + t];\n  __syncthreads();\n"
      "  // o = exp(x), neighbour's element\n  d_O[t] = expf(s_x[t]);\n");
  EXPECT_TRUE(r.run.findings.empty()) << r.run.report();
  EXPECT_EQ(r.run.entry_rc, 0);
  for (size_t i = 0; i < 64; ++i)
    EXPECT_NEAR(r.out[i], std::exp(r.in[i]), 1e-5) << i;
}

TEST(HostCuda, ReadOfAnotherThreadsWriteWithoutBarrierIsARace) {
  const Ran r = run_kernel("  // x = input_iterator(X)\n  s_x[t] = d_X[t];\n"
                           "  // o = shift(x)\n  d_O[t] = s_x[(t + 1) % 64];\n");
  const HostCudaFinding* f = find(r.run, "race-raw");
  ASSERT_NE(f, nullptr) << r.run.report();
  EXPECT_EQ(f->kernel, "test_kernel");
  EXPECT_EQ(f->buffer, "s_x");
  EXPECT_EQ(f->op, "o = shift(x)");
  EXPECT_GT(f->line, 0);
  EXPECT_EQ(f->other_thread, (f->thread + 1) % 64) << f->to_string();
}

TEST(HostCuda, WriteOverAnotherThreadsReadIsARace) {
  const Ran r = run_kernel(
      "  s_x[t] = d_X[t];\n  __syncthreads();\n"
      "  // y = read(x)\n  const float v = s_x[(t + 1) % 64];\n"
      "  // x = overwrite(x)\n  s_x[t] = 2 * v;\n  __syncthreads();\n  d_O[t] = s_x[t];\n");
  const HostCudaFinding* f = find(r.run, "race-war");
  ASSERT_NE(f, nullptr) << r.run.report();
  EXPECT_EQ(f->op, "x = overwrite(x)");
}

TEST(HostCuda, WarpShuffleRunsInLockstep) {
  const Ran r = run_kernel("  const float s = mg::warp_sum(d_X[t]);\n  d_O[t] = s;\n");
  EXPECT_TRUE(r.run.findings.empty()) << r.run.report();
  for (int w = 0; w < 2; ++w) {
    float sum = 0;
    for (int l = 0; l < 32; ++l)
      sum += r.in[static_cast<size_t>(w * 32 + l)];
    EXPECT_NEAR(r.out[static_cast<size_t>(w * 32)], sum, 1e-4);
  }
}

// cp.async: the copy lands at the wait. Reading the destination before (here: after a
// barrier but without the issuing thread's wait) is reported...
TEST(HostCuda, ReadOfCpAsyncDestinationBeforeItsWaitIsReported) {
  const Ran r = run_kernel(
      "  if (t < 16) mg::cp_async16(s_x + 4 * t, d_X + 4 * t);\n  mg::cp_async_commit();\n"
      "  __syncthreads();\n  // o = exp(x)\n  d_O[t] = expf(s_x[t]);\n"
      "  mg::cp_async_wait<0>();\n");
  const HostCudaFinding* f = find(r.run, "cp.async-early");
  ASSERT_NE(f, nullptr) << r.run.report();
  EXPECT_EQ(f->op, "o = exp(x)");
  EXPECT_EQ(f->buffer, "s_x");
}

// ... and so is a wait followed by another thread's read without a barrier (issue 20's race:
// wait, ops, then the barrier).
TEST(HostCuda, CpAsyncWaitWithoutBarrierBeforeOtherThreadsReadIsARace) {
  const Ran r = run_kernel(
      "  if (t < 16) mg::cp_async16(s_x + 4 * t, d_X + 4 * t);\n  mg::cp_async_commit();\n"
      "  mg::cp_async_wait<0>();\n  // o = exp(x)\n  d_O[t] = expf(s_x[t]);\n"
      "  __syncthreads();\n");
  const HostCudaFinding* f = find(r.run, "race-raw");
  ASSERT_NE(f, nullptr) << r.run.report();
  EXPECT_EQ(f->op, "o = exp(x)");
}

TEST(HostCuda, CpAsyncWithWaitAndBarrierIsClean) {
  const Ran r = run_kernel(
      "  if (t < 16) mg::cp_async16(s_x + 4 * t, d_X + 4 * t);\n  mg::cp_async_commit();\n"
      "  mg::cp_async_wait<0>();\n  __syncthreads();\n  d_O[t] = expf(s_x[t]);\n");
  EXPECT_TRUE(r.run.findings.empty()) << r.run.report();
  for (size_t i = 0; i < 64; ++i)
    EXPECT_NEAR(r.out[i], std::exp(r.in[i]), 1e-5) << i;
}

TEST(HostCuda, BarrierSkippedByExitedThreadsIsReported) {
  const Ran r = run_kernel("  if (t >= 32) return;\n  __syncthreads();\n  d_O[t] = 0;\n");
  const HostCudaFinding* f = find(r.run, "barrier-not-reached");
  ASSERT_NE(f, nullptr) << r.run.report();
  EXPECT_EQ(f->kernel, "test_kernel");
  EXPECT_NE(r.run.entry_rc, 0);
}

TEST(HostCuda, BarriersAtDifferentCallSitesAreReported) {
  const Ran r =
      run_kernel("  if (t < 32) { __syncthreads(); } else { __syncthreads(); }\n  d_O[t] = 0;\n");
  ASSERT_NE(find(r.run, "barrier-divergent"), nullptr) << r.run.report();
}

TEST(HostCuda, OutOfBoundsSharedAndGlobalAccessesAreReported) {
  const Ran r = run_kernel(
      "  // x = oob(X)\n  s_x[t + 8] = d_X[t + 8];\n  __syncthreads();\n  d_O[t] = s_x[t];\n");
  const HostCudaFinding* s = find(r.run, "oob-shared");
  ASSERT_NE(s, nullptr) << r.run.report();
  EXPECT_EQ(s->op, "x = oob(X)");
  const HostCudaFinding* g = find(r.run, "oob-global");
  ASSERT_NE(g, nullptr) << r.run.report();
  EXPECT_EQ(g->buffer, "X");
  EXPECT_GE(g->offset, 256);
}

TEST(HostCuda, MisalignedWmmaLoadIsReported) {
  const Ran r = run_kernel(
      "  using namespace nvcuda;\n  mg::f16* const h = reinterpret_cast<mg::f16*>(smem);\n"
      "  for (int i = t; i < 512; i += 64) h[i] = mg::st<mg::f16>(0.f);\n  __syncthreads();\n"
      "  if (t < 32) {\n    wmma::fragment<wmma::matrix_a, 16, 16, 16, mg::f16, wmma::row_major> "
      "a;\n"
      "    // a = load(h + 8)\n    wmma::load_matrix_sync(a, h + 8, 16);\n  }\n"
      "  d_O[t] = 0;\n",
      "1", 2048);
  const HostCudaFinding* f = find(r.run, "wmma-misaligned");
  ASSERT_NE(f, nullptr) << r.run.report();
  EXPECT_EQ(f->op, "a = load(h + 8)") << f->to_string();
}

TEST(HostCuda, BlocksWritingTheSameGlobalBytesAreReported) {
  const Ran r = run_kernel("  // o = save(x)\n  d_O[t] = d_X[t];\n", "2");
  const HostCudaFinding* f = find(r.run, "race-global");
  ASSERT_NE(f, nullptr) << r.run.report();
  EXPECT_EQ(f->buffer, "O");
  EXPECT_EQ(f->op, "o = save(x)");
}

// Issue 20: sm_80's opt-in limit is 163 KiB (164 KiB was the target's figure); sm_90's 227 KiB.
TEST(HostCuda, SharedMemoryBeyondTheArchitecturesOptInLimitFailsTheLaunch) {
  EXPECT_EQ(runtime::max_dynamic_shared_memory(80), 163 * 1024);
  EXPECT_EQ(runtime::max_dynamic_shared_memory(90), 227 * 1024);
  const Ran a100 = run_kernel("  d_O[t] = 0;\n", "1", 164 * 1024, 80);
  EXPECT_NE(a100.run.entry_rc, 0);
  ASSERT_NE(find(a100.run, "launch"), nullptr) << a100.run.report();
  const Ran h100 = run_kernel("  d_O[t] = 0;\n", "1", 164 * 1024, 90);
  EXPECT_EQ(h100.run.entry_rc, 0) << h100.run.report();
  EXPECT_TRUE(h100.run.findings.empty()) << h100.run.report();
}

// Issue 20's WMMA alignment bug: C[24, 32] = A[24, 16] B[16, 32] with a column-major A (leading
// dim 24) tiles into 8x32 fragments, and the one at row 8 starts 16 bytes past a 32-byte
// boundary. mg::matmul_tile must not hand WMMA that pointer (the checker reports
// wmma-misaligned if it does), and the product must be right either way.
TEST(HostCuda, TileMatmulNeverLoadsMisalignedFragments) {
  const Ran r = run_kernel(
      "  mg::f16* const a = reinterpret_cast<mg::f16*>(smem);\n"
      "  mg::f16* const b = reinterpret_cast<mg::f16*>(smem + 1024);\n"
      "  float* const c = reinterpret_cast<float*>(smem + 2048);\n"
      "  for (int i = t; i < 24 * 16; i += 64) a[i] = mg::st<mg::f16>(d_X[i % 64]);\n"
      "  for (int i = t; i < 16 * 32; i += 64) b[i] = mg::st<mg::f16>(d_X[(i * 7) % 64]);\n"
      "  __syncthreads();\n"
      "  // c = matmul(a, b)\n"
      "  mg::matmul_tile(24, 32, 16, mg::Mat<const mg::f16>{a, 1, 24}, "
      "mg::Mat<const mg::f16>{b, 32, 1}, mg::Mat<float>{c, 32, 1}, false);\n"
      "  __syncthreads();\n  d_O[t] = c[t + 8 * 32];\n",
      "1", 8192);
  EXPECT_TRUE(r.run.findings.empty()) << r.run.report();
  for (int t = 0; t < 64; ++t) {
    const int i = 8 + t / 32, j = t % 32;
    double ref = 0;
    for (int q = 0; q < 16; ++q) {
      // f16 rounding of the operands: the inputs are f32 in [-1, 1); compare loosely.
      ref += static_cast<double>(r.in[static_cast<size_t>((i + q * 24) % 64)]) *
             r.in[static_cast<size_t>(((q * 32 + j) * 7) % 64)];
    }
    EXPECT_NEAR(r.out[static_cast<size_t>(t)], ref, 2e-2) << t;
  }
}

// The harness's bank-conflict count of a 16-bit fragment load (ldmatrix: 8x8 blocks of 8
// memory rows of 16 bytes, one wavefront if their 16-byte chunks fall in distinct bank
// groups): a 16x16 fragment with rows 64 bytes apart puts 2 rows in each of 4 groups (3 extra
// wavefronts per block, 12 per load), 128 bytes apart all 8 rows in one group (7 per block,
// 28 per load), 144 bytes apart (an odd number of chunks: what pad_rows makes) none.
TEST(HostCuda, FragmentLoadBankConflictsAreCounted) {
  const Ran r = run_kernel(
      "  using namespace nvcuda;\n  mg::f16* const h = reinterpret_cast<mg::f16*>(smem);\n"
      "  for (int i = t; i < 16 * 72; i += 64) h[i] = mg::st<mg::f16>(0.f);\n  __syncthreads();\n"
      "  if (t < 32) {\n"
      "    wmma::fragment<wmma::matrix_a, 16, 16, 16, mg::f16, wmma::row_major> a;\n"
      "    wmma::load_matrix_sync(a, h, 32);\n    wmma::load_matrix_sync(a, h, 64);\n"
      "    wmma::load_matrix_sync(a, h, 72);\n  }\n"
      "  d_O[t] = 0;\n",
      "1", 4096);
  EXPECT_TRUE(r.run.findings.empty()) << r.run.report();
  EXPECT_EQ(r.run.wmma_fragment_loads, 3);
  EXPECT_EQ(r.run.wmma_bank_conflicts, 12 + 28 + 0);
}

// Register-blocked tensor-core tile matmuls (mg_tile.cuh): each warp owns a group of RM x RN
// fragments and loads RM + RN fragments per k step. For 2, 4 and 8 warps, three fragment grids
// and every operand layout (A, B row- or column-major), C = A B (and C += A B after it, which
// loads C into the group's accumulators) matches a float64 loop over the
// f16-rounded operands, the checker is clean, and the fragment loads are those of the group
// mg::wmma_group picks (hand counts below; without register blocking every 16x16 output tile
// would load two fragments per k step).
double round_f16(double v) {
  if (v == 0) return 0;
  int e = 0;
  std::frexp(v, &e);
  const double ulp = std::ldexp(1.0, std::max(e - 11, -24));
  return std::nearbyint(v / ulp) * ulp;
}

// Runs `body` as the kernel of one block of `threads` threads with `smem` bytes of dynamic
// shared memory (`smem`), reading d_X (X : f32[32768], drawn) and writing d_O (O, as large);
// `buf` receives the buffers.
HostCudaRun run_block(const std::string& body, int threads, int smem, driver::CpuBuffers& buf) {
  codegen::Module mod;
  mod.source = "#include <cuda_runtime.h>\n#include \"mugraph_device.cuh\"\nnamespace {\n"
               "__global__ void __launch_bounds__(" + std::to_string(threads) +
               ") test_kernel(const float* __restrict__ d_X, float* __restrict__ d_O) {\n"
               "  extern __shared__ __align__(128) unsigned char smem[];\n" + body +
               "}\n}  // namespace\n"
               "extern \"C\" int mg_entry_t(void* const* in, void* const* out, void*, void*) {\n"
               "  test_kernel<<<dim3(1), " + std::to_string(threads) + ", " + std::to_string(smem) +
               ", nullptr>>>(static_cast<const float*>(in[0]), static_cast<float*>(out[0]));\n"
               "  return static_cast<int>(cudaGetLastError());\n}\n";
  mod.entries.push_back({"mg_entry_t", 0, 1, 1});
  auto compiled = runtime::compile_host_cuda(mod, {});
  if (!compiled.ok())
    throw std::runtime_error(compiled.status().message());
  const ir::KernelGraph g = testing::parse_ok("input X : f32[32768]\nO = exp(X)\noutput O\n");
  buf = driver::make_buffers(g, 1);
  auto r = (*compiled)->run(0, g, buf.inputs, buf.outputs);
  if (!r.ok())
    throw std::runtime_error(r.status().message());
  return *r;
}

TEST(HostCuda, RegisterBlockedTileMatmulsComputeAndLoadEachFragmentOncePerGroup) {
  struct Shape {
    int m, n, k;
  };
  const Shape shapes[] = {{64, 64, 32}, {16, 16, 32}, {32, 64, 48}};
  // Fragment loads of one product per warp count: groups x k steps x (rm + rn).
  struct Case {
    int threads;
    long long loads[3];  // per shape, for one layout
  };
  const Case cases[] = {
      // 2 warps: 64x64 (4x4 fragments) -> 2x4 groups (2), 16x16 -> 1x1, 32x64 -> 2x2 (2).
      {64, {2 * 2 * 6, 1 * 2 * 2, 2 * 3 * 4}},
      // 4 warps: 64x64 -> 2x2 (4 groups), 16x16 -> 1x1, 32x64 -> 1x2 (4).
      {128, {4 * 2 * 4, 1 * 2 * 2, 4 * 3 * 3}},
      // 8 warps: 64x64 -> 1x2 (8 groups), 16x16 -> 1x1, 32x64 -> 1x1 (8 fragments, 8 warps).
      {256, {8 * 2 * 3, 1 * 2 * 2, 8 * 3 * 2}},
  };
  for (const Case& c : cases) {
    std::string body =
        "  mg::f16* const a = reinterpret_cast<mg::f16*>(smem);\n"
        "  mg::f16* const b = reinterpret_cast<mg::f16*>(smem + 8192);\n"
        "  float* const c = reinterpret_cast<float*>(smem + 16384);\n"
        "  const int t = threadIdx.x;\n";
    int out = 0;
    for (const Shape& s : shapes)
      for (int layout = 0; layout < 4; ++layout) {
        const bool ac = layout & 1, bc = layout & 2;
        const std::string m = std::to_string(s.m), n = std::to_string(s.n), k = std::to_string(s.k);
        body += "  for (int i = t; i < " + std::to_string(s.m * s.k) +
                "; i += blockDim.x) a[i] = mg::st<mg::f16>(d_X[i]);\n"
                "  for (int i = t; i < " + std::to_string(s.k * s.n) +
                "; i += blockDim.x) b[i] = mg::st<mg::f16>(d_X[8192 + i]);\n"
                "  __syncthreads();\n"
                "  mg::matmul_tile(" + m + ", " + n + ", " + k + ", mg::Mat<const mg::f16>{a, " +
                (ac ? "1, " + m : k + ", 1") + "}, mg::Mat<const mg::f16>{b, " +
                (bc ? "1, " + k : n + ", 1") + "}, mg::Mat<float>{c, " + n + ", 1}, false);\n"
                "  __syncthreads();\n"
                "  for (int i = t; i < " + std::to_string(s.m * s.n) +
                "; i += blockDim.x) d_O[" + std::to_string(out) + " + i] = c[i];\n"
                "  __syncthreads();\n";
        out += s.m * s.n;
      }
    // Accumulating: C = A B, then C += A B (2x4 / 2x2 / 1x2 groups load C first).
    body += "  for (int i = t; i < 2048; i += blockDim.x) a[i] = mg::st<mg::f16>(d_X[i]);\n"
            "  for (int i = t; i < 2048; i += blockDim.x) b[i] = mg::st<mg::f16>(d_X[8192 + i]);\n"
            "  __syncthreads();\n"
            "  mg::matmul_tile(64, 64, 32, mg::Mat<const mg::f16>{a, 32, 1}, "
            "mg::Mat<const mg::f16>{b, 64, 1}, mg::Mat<float>{c, 64, 1}, false);\n"
            "  __syncthreads();\n"
            "  mg::matmul_tile(64, 64, 32, mg::Mat<const mg::f16>{a, 32, 1}, "
            "mg::Mat<const mg::f16>{b, 64, 1}, mg::Mat<float>{c, 64, 1}, true);\n"
            "  __syncthreads();\n"
            "  for (int i = t; i < 4096; i += blockDim.x) d_O[" + std::to_string(out) +
            " + i] = c[i];\n";
    driver::CpuBuffers buf;
    const HostCudaRun run = run_block(body, c.threads, 32768, buf);
    EXPECT_EQ(run.entry_rc, 0);
    EXPECT_TRUE(run.findings.empty()) << run.report();
    long long loads = 2 * c.loads[0];  // the accumulating pair
    for (long long l : c.loads) loads += 4 * l;
    EXPECT_EQ(run.wmma_fragment_loads, loads) << c.threads << " threads";
    const std::vector<float> x = buf.inputs[0].values(), o = buf.outputs[0].values();
    size_t at = 0;
    for (const Shape& s : shapes)
      for (int layout = 0; layout < 4; ++layout) {
        const bool ac = layout & 1, bc = layout & 2;
        double worst = 0;
        for (int i = 0; i < s.m; ++i)
          for (int j = 0; j < s.n; ++j) {
            double ref = 0;
            for (int q = 0; q < s.k; ++q)
              ref += round_f16(x[static_cast<size_t>(ac ? i + q * s.m : i * s.k + q)]) *
                     round_f16(x[static_cast<size_t>(8192 + (bc ? q + j * s.k : q * s.n + j))]);
            worst = std::max(worst, std::abs(ref - o[at + static_cast<size_t>(i * s.n + j)]));
          }
        EXPECT_LT(worst, 1e-4) << c.threads << " threads, " << s.m << "x" << s.n << "x" << s.k
                               << ", layout " << layout;
        at += static_cast<size_t>(s.m * s.n);
      }
    double worst = 0;  // C += A B after C = A B: 2 A B (64x64x32, row-major)
    for (int i = 0; i < 64; ++i)
      for (int j = 0; j < 64; ++j) {
        double ref = 0;
        for (int q = 0; q < 32; ++q)
          ref += round_f16(x[static_cast<size_t>(i * 32 + q)]) *
                 round_f16(x[static_cast<size_t>(8192 + q * 64 + j)]);
        worst = std::max(worst, std::abs(2 * ref - o[at + static_cast<size_t>(i * 64 + j)]));
      }
    EXPECT_LT(worst, 2e-4) << c.threads << " threads, accumulating";
    // std::max above drops a NaN (a fragment read before it was loaded or filled).
    EXPECT_EQ(std::count_if(o.begin(), o.begin() + static_cast<std::ptrdiff_t>(at + 4096),
                            [](float v) { return !std::isfinite(v); }),
              0)
        << c.threads << " threads: non-finite outputs";
  }
}

// mg::RegisterAccumulator (mg_tile.cuh): a loop's C = sum over iterations of A_it B_it kept in
// WMMA fragments. Over 3 iterations C must match a float64 sum of the f16-rounded products,
// the checker must be clean, and C's fragments must reach shared memory once, after the loop
// (the tile form loads and stores C every iteration: 16 + 2 x 32 transfers for a 64x64 tile
// over 3 iterations). A third-iteration A 16 bytes off alignment (no fragment plan fits) spills
// the fragments into C and goes on in shared memory; a tile too large for the warps' registers
// (128x64 at 2 warps: 16 fragments a warp) stays in shared memory from the start.
TEST(HostCuda, RegisterAccumulatorKeepsTheLoopSumInFragments) {
  struct Case {
    int threads, m, n, k;
    bool misalign_last;
    long long transfers;  // accumulator fragments loaded or stored (per warp)
    const char* type = "mg::f16";
  };
  const Case cases[] = {
      {128, 64, 64, 32, false, 16},           // 2x2 groups, one a warp: stored once
      {256, 32, 64, 48, false, 8},            // 1x1 groups at 8 warps
      {128, 64, 64, 32, true, 16},            // the spill (then SIMT: no fragments)
      {64, 128, 64, 16, false, 32 + 2 * 64},  // shared memory: as mg::matmul_tile
      {128, 32, 96, 16, false, 12},           // 1x2 groups: 6 over 4 warps (2 get a second)
      {128, 64, 64, 32, false, 16, "mg::bf16"},
  };
  for (const Case& c : cases) {
    const std::string m = std::to_string(c.m), n = std::to_string(c.n), k = std::to_string(c.k);
    const std::string body =
        "  using T = " + std::string(c.type) + ";\n"
        "  T* const a = reinterpret_cast<T*>(smem);\n"
        "  T* const b = reinterpret_cast<T*>(smem + 8192);\n"
        "  float* const c = reinterpret_cast<float*>(smem + 16384);\n"
        "  const int t = threadIdx.x;\n"
        "  mg::RegisterAccumulator<" + m + ", " + n + ", " + std::to_string(c.threads) + "> acc;\n"
        "  for (int it = 0; it < 3; ++it) {\n"
        "    T* const at = a + (" + (c.misalign_last ? "it == 2" : "false") + " ? 8 : 0);\n"
        "    for (int i = t; i < " + std::to_string(c.m * c.k) +
        "; i += blockDim.x) at[i] = mg::st<T>(d_X[(it * 977 + i) % 8192]);\n"
        "    for (int i = t; i < " + std::to_string(c.k * c.n) +
        "; i += blockDim.x) b[i] = mg::st<T>(d_X[8192 + (it * 131 + i) % 8192]);\n"
        "    __syncthreads();\n"
        "    acc.add(" + k + ", mg::Mat<const T>{at, " + k + ", 1}, mg::Mat<const T>{b, " +
        n + ", 1}, mg::Mat<float>{c, " + n + ", 1}, it > 0);\n"
        "    __syncthreads();\n"
        "  }\n"
        "  acc.store(mg::Mat<float>{c, " + n + ", 1});\n"
        "  __syncthreads();\n"
        "  for (int i = t; i < " + std::to_string(c.m * c.n) + "; i += blockDim.x) d_O[i] = c[i];\n";
    driver::CpuBuffers buf;
    const HostCudaRun run = run_block(body, c.threads, 49152, buf);
    EXPECT_EQ(run.entry_rc, 0);
    EXPECT_TRUE(run.findings.empty()) << run.report();
    EXPECT_EQ(run.wmma_accumulator_transfers, c.transfers)
        << c.threads << " threads, " << c.m << "x" << c.n;
    EXPECT_EQ(run.wmma_mmas,
              c.misalign_last ? 2 * 16 * 2 : 3LL * (c.m / 16) * (c.n / 16) * (c.k / 16));
    const std::vector<float> x = buf.inputs[0].values(), o = buf.outputs[0].values();
    const bool bf16 = std::string(c.type) == "mg::bf16";
    const auto round16 = [&](double v) {  // to the operands' type: 11 or 8 significant bits
      if (!bf16) return round_f16(v);
      if (v == 0) return 0.0;
      int e = 0;
      std::frexp(v, &e);
      const double ulp = std::ldexp(1.0, e - 8);
      return std::nearbyint(v / ulp) * ulp;
    };
    double worst = 0;
    int non_finite = 0;
    for (int i = 0; i < c.m; ++i)
      for (int j = 0; j < c.n; ++j) {
        double ref = 0;
        for (int it = 0; it < 3; ++it)
          for (int q = 0; q < c.k; ++q)
            ref += round16(x[static_cast<size_t>((it * 977 + i * c.k + q) % 8192)]) *
                   round16(x[static_cast<size_t>(8192 + (it * 131 + q * c.n + j) % 8192)]);
        const float got = o[static_cast<size_t>(i * c.n + j)];
        non_finite += std::isfinite(got) ? 0 : 1;  // std::max would drop a NaN
        worst = std::max(worst, std::abs(ref - got));
      }
    EXPECT_EQ(non_finite, 0) << c.threads << " threads, " << c.m << "x" << c.n;
    EXPECT_LT(worst, 2e-4) << c.threads << " threads, " << c.m << "x" << c.n << " " << c.type
                           << (c.misalign_last ? ", spilled" : "");
  }
}

// The groups themselves: the largest that tiles the fragment grid and keeps every warp busy.
TEST(HostCuda, WmmaGroupIsTheLargestThatKeepsEveryWarpBusy) {
  const auto g = [](int tm, int tn, int warps) {
    const mg::WmmaGroup r = mg::wmma_group(tm, tn, warps);
    return r.rm * 10 + r.rn;
  };
  EXPECT_EQ(g(4, 4, 2), 24);
  EXPECT_EQ(g(4, 4, 4), 22);
  EXPECT_EQ(g(4, 4, 8), 12);
  EXPECT_EQ(g(4, 4, 16), 11);
  EXPECT_EQ(g(2, 4, 4), 12);
  EXPECT_EQ(g(1, 1, 4), 11);
  EXPECT_EQ(g(3, 3, 1), 11);  // odd fragment grids: no group tiles them
  EXPECT_EQ(g(8, 16, 8), 24);
}

// The generator's count of the fragments a warp keeps in registers (codegen/cuda, which may not
// include the device library) agrees with the device library's groups on every grid up to 16 x
// 16 fragments at 1-8 warps.
TEST(HostCuda, GeneratorCountsTheFragmentsTheDeviceLibraryHolds) {
  for (int warps : {1, 2, 4, 8})
    for (int tm = 1; tm <= 16; ++tm)
      for (int tn = 1; tn <= 16; ++tn) {
        const mg::WmmaGroup g = mg::wmma_group(tm, tn, warps);
        const int groups = (tm / g.rm) * (tn / g.rn);
        EXPECT_EQ(codegen::cuda::wmma_fragments_per_warp(tm, tn, warps),
                  (groups + warps - 1) / warps * g.rm * g.rn)
            << tm << "x" << tn << " at " << warps << " warps";
      }
}

TEST(HostCuda, LaunchSyntaxIsTheOnlyRewrite) {
  EXPECT_EQ(
      runtime::rewrite_launches("k_1<<<dim3(2, 1, 1), 128, 0, stream>>>(a, b);\nx << 2;"),
      "::mg_host::launch_config(k_1, \"k_1\", dim3(2, 1, 1), 128, 0, stream)(a, b);\nx << 2;");
}

}  // namespace
}  // namespace mugraph
