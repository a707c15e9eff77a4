// The cost model's byte and FLOP counts on hand-computed cases (the counting rules in
// opt/cost_model.h), its time formula, and the rank correlation.
#include <gtest/gtest.h>

#include "driver/driver.h"
#include "ir/text.h"
#include "opt/cost_model.h"

namespace mugraph {
namespace {

ir::KernelGraph example(const std::string& name) {
  return driver::load_graph_file(std::string(MUGRAPH_EXAMPLES_DIR) + "/" + name).value();
}

TEST(CostModel, FusedRmsNormCountsByHand) {
  // Mirage Fig. 3b: grid 128, for-loop 64; X [16,4096] and G [4096] replicated, W split by
  // columns, Y tile [16,32]; all f16.
  const ir::KernelGraph g = example("rms_norm_matmul.fused.mu");
  const target::Target& t = target::h100();
  const opt::Cost c = opt::estimate(g, t);
  ASSERT_EQ(c.kernels.size(), 1u);
  const opt::KernelCost& k = c.kernels[0];
  EXPECT_EQ(k.blocks, 128);
  const int64_t x = 16 * 4096 * 2 * 128, gb = 4096 * 2 * 128, w = 4096 * 4096 * 2,
                y = 16 * 32 * 2 * 128;
  EXPECT_EQ(k.bytes, x + gb + w + y);
  // Per block and iteration (8192 of them): matmul 2*16*32*64; mul, square, sum 1024 each;
  // accumulators 512 + 16. After the loop: 3 thread-graph ops on the [16, 32] tile.
  EXPECT_DOUBLE_EQ(k.matmul_flops, 2.0 * 16 * 32 * 64 * 8192);
  EXPECT_DOUBLE_EQ(k.other_flops, (3 * 1024 + 512 + 16) * 8192.0 + 3 * 512 * 128.0);
  const double mem = static_cast<double>(k.bytes) / t.memory_bandwidth;
  const double comp = k.matmul_flops / t.peak_flops_f16 + k.other_flops / t.peak_flops_f32;
  EXPECT_DOUBLE_EQ(k.occupancy, (128.0 + 132.0) / 128.0);
  EXPECT_NEAR(k.total_s, (mem + comp) * k.occupancy + t.kernel_launch_s, 1e-15);
  EXPECT_NEAR(c.total_s, k.total_s, 1e-15);
}

TEST(CostModel, PredefinedOpsReadInputsAndWriteOutputsOnce) {
  const ir::KernelGraph g = example("rms_norm_matmul.mu");
  const opt::Cost c = opt::estimate(g, target::a100());
  ASSERT_EQ(c.kernels.size(), 7u);
  const opt::KernelCost& mm = c.kernels.back();  // Y = matmul(xg, W)
  EXPECT_FALSE(mm.graph_defined);
  EXPECT_EQ(mm.bytes, (16 * 4096 + 4096 * 4096 + 16 * 4096) * 2);
  EXPECT_DOUBLE_EQ(mm.matmul_flops, 2.0 * 16 * 4096 * 4096);
  EXPECT_DOUBLE_EQ(mm.occupancy, 1.0);
  const opt::KernelCost& sq = c.kernels[0];  // square(X)
  EXPECT_EQ(sq.bytes, 2 * 16 * 4096 * 2);
  EXPECT_DOUBLE_EQ(sq.other_flops, 16 * 4096);
  const opt::KernelCost& ss = c.kernels[1];  // sum(sq, dim=1): one add per input element
  EXPECT_EQ(ss.bytes, (16 * 4096 + 16) * 2);
  EXPECT_DOUBLE_EQ(ss.other_flops, 16 * 4096);
}

TEST(CostModel, FewBlocksPayTheOccupancySlowdown) {
  // The same kernel on a target with 4x the SMs: more idle SMs, a larger factor.
  const ir::KernelGraph g = example("rms_norm_matmul.fused.mu");
  target::Target big = target::h100();
  big.sm_count *= 4;
  EXPECT_GT(opt::estimate(g, big).kernels[0].occupancy,
            opt::estimate(g, target::h100()).kernels[0].occupancy);
}

// A GEMM chain in one block graph: with f16 the product C is stored f16 and both matmuls run on
// tensor cores; with bf16 the generator keeps C in f32 (WMMA has no bf16 accumulator), so the
// second matmul is priced at the f32 peak, as it runs (SIMT).
TEST(CostModel, GpuChainedMatmulOnTensorCoresOnlyWhereTheGeneratorPutsIt) {
  auto chain = [](const std::string& t) {
    return ir::parse_graph("input A : " + t + "[64, 32]\ninput B : " + t + "[32, 64]\ninput D : " + t +
                           "[64, 32]\nE = graph_defined(A, B, D, grid=[2, 1, 1], forloop=2) {\n"
                           "  a = input_iterator(A, imap={x:0}, fmap=phi)\n"
                           "  b = input_iterator(B, imap={}, fmap=1)\n"
                           "  d = input_iterator(D, imap={}, fmap=0)\n"
                           "  c = matmul(a, b)\n  t = matmul(c, d)\n"
                           "  e = accumulator(t, fmap=phi)\n  output_saver(e, omap={x:0})\n}\noutput E\n")
        .value();
  };
  target::Target t = target::h100();
  t.peak_flops_f16 = t.peak_flops_bf16 = 1e12;
  t.peak_flops_f32 = 1e10;
  const double f16 = opt::estimate(chain("f16"), t).kernels[0].compute_s;
  const double bf16 = opt::estimate(chain("bf16"), t).kernels[0].compute_s;
  // Each matmul: 2 blocks x 2 iterations x 2 * 32 * 32 * 32 FLOPs = 262144; the accumulator's
  // adds, 2 x 2 x 32 * 32 = 4096, at the f32 rate.
  EXPECT_NEAR(f16, 2 * 262144 / 1e12 + 4096 / 1e10, 1e-15);
  EXPECT_NEAR(bf16, 262144 / 1e12 + 262144 / 1e10 + 4096 / 1e10, 1e-15);
}

// A CPU target with round numbers, for hand counts.
target::Target round_cpu() {
  target::Target t = target::local_cpu();
  t.sm_count = 1;
  t.memory_bandwidth = 1e9;
  t.peak_flops_f32 = t.peak_flops_f16 = t.peak_flops_bf16 = 1e9;
  t.shared_memory_per_block = 1 << 20;
  t.kernel_launch_s = 0;
  t.cpu_matmul_rows = 8;
  t.cpu_matmul_cols = 32;
  return t;
}

// One block, one iteration: matmul [m, k] x [k, n] of f32 row-major tiles that are the whole
// tensors (one contiguous run each).
ir::KernelGraph one_matmul(int m, int k, int n) {
  const std::string s = "input A : f32[" + std::to_string(m) + ", " + std::to_string(k) +
                        "]\ninput B : f32[" + std::to_string(k) + ", " + std::to_string(n) +
                        "]\nC = graph_defined(A, B, grid=[1, 1, 1], forloop=1) {\n"
                        "  a = input_iterator(A, imap={}, fmap=phi)\n"
                        "  b = input_iterator(B, imap={}, fmap=phi)\n"
                        "  c = matmul(a, b)\n  output_saver(c, omap={})\n}\noutput C\n";
  return ir::parse_graph(s).value();
}

TEST(CostModel, CpuBlockMatmulRoundsToTheMicroKernel) {
  // 8 x 32 micro-kernel blocks of C; per step of k (all of k up to 256, else 128), C's block
  // is loaded and stored: share = (m / m rounded to 8) (n / n rounded to 32) / (1 + 8 / step).
  const target::Target t = round_cpu();
  auto compute = [&](int m, int k, int n) { return opt::estimate(one_matmul(m, k, n), t).kernels[0].compute_s; };
  EXPECT_NEAR(compute(64, 256, 64), 2.0 * 64 * 64 * 256 / 1e9 * (1 + 8.0 / 256), 1e-12);
  EXPECT_NEAR(compute(64, 256, 16), 2.0 * 64 * 16 * 256 / 1e9 * 2 * (1 + 8.0 / 256), 1e-12);
  EXPECT_NEAR(compute(4, 16, 64), 2.0 * 4 * 64 * 16 / 1e9 * 2 * (1 + 8.0 / 16), 1e-12);
  EXPECT_NEAR(compute(64, 1024, 64), 2.0 * 64 * 64 * 1024 / 1e9 * (1 + 8.0 / 128), 1e-12);
  EXPECT_NEAR(compute(64, 257, 64), 2.0 * 64 * 64 * 257 / 1e9 * (1 + 8.0 / 128), 1e-12);
  // A GPU target prices the same (f32) matmul at its plain f32 peak, bytes at full bandwidth.
  const target::Target& h = target::h100();
  const opt::KernelCost g = opt::estimate(one_matmul(64, 256, 16), h).kernels[0];
  EXPECT_DOUBLE_EQ(g.compute_s, 2.0 * 64 * 16 * 256 / h.peak_flops_f32);
  EXPECT_DOUBLE_EQ(g.slow_bytes, static_cast<double>(g.bytes));
  // The AVX2 micro-kernel (4 x 16) pays no padding for n = 16.
  target::Target avx2 = t;
  avx2.cpu_matmul_rows = 4;
  avx2.cpu_matmul_cols = 16;
  EXPECT_NEAR(opt::estimate(one_matmul(64, 256, 16), avx2).kernels[0].compute_s,
              2.0 * 64 * 16 * 256 / 1e9 * (1 + 8.0 / 256), 1e-12);
}

TEST(CostModel, CpuRereadsOfACachedChunkCostAQuarter) {
  // B [64, 64] f32 (16 KiB, one contiguous run) is replicated over 4 blocks: 1 DRAM read and
  // 3 cached re-reads (a quarter each); A's 4 chunks of [16, 64] are read once each.
  const ir::KernelGraph g = ir::parse_graph(R"(
input A : f32[64, 64]
input B : f32[64, 64]
C = graph_defined(A, B, grid=[4, 1, 1], forloop=1) {
  a = input_iterator(A, imap={x:0}, fmap=phi)
  b = input_iterator(B, imap={}, fmap=phi)
  c = matmul(a, b)
  output_saver(c, omap={x:0})
}
output C
)").value();
  target::Target t = round_cpu();
  const double run = 64 * 64 * 4;  // bytes of each tile's contiguous run: the whole tensor
  const double share = run / (run + 256);
  const double a = 64 * 64 * 4, b = 4 * 64 * 64 * 4, c = 64 * 64 * 4;
  const opt::KernelCost k = opt::estimate(g, t).kernels[0];
  EXPECT_EQ(k.bytes, static_cast<int64_t>(a + b + c));
  EXPECT_NEAR(k.slow_bytes, a / (16.0 * 64 * 4 / (16.0 * 64 * 4 + 256)) + (b - 0.75 * b * 3 / 4) / share + c, 1e-6);
  // A chunk larger than the L2: every re-read is a DRAM read.
  t.shared_memory_per_block = 1024;
  EXPECT_NEAR(opt::estimate(g, t).kernels[0].slow_bytes,
              a / (16.0 * 64 * 4 / (16.0 * 64 * 4 + 256)) + b / share + c, 1e-6);
}

TEST(CostModel, SpearmanRankCorrelation) {
  EXPECT_DOUBLE_EQ(opt::spearman({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(opt::spearman({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  // Ranks (1,2,3,4) vs (2,1,4,3): d^2 = 4, rho = 1 - 6*4/(4*15) = 0.6.
  EXPECT_NEAR(opt::spearman({1, 2, 3, 4}, {5, 1, 9, 7}), 0.6, 1e-12);
  EXPECT_DOUBLE_EQ(opt::spearman({1}, {2}), 0.0);
  EXPECT_DOUBLE_EQ(opt::spearman({1, 1, 1}, {1, 2, 3}), 0.0);
}

// Kendall's tau over the pairs whose measured ranges do not overlap, checked by hand.
TEST(CostModel, AgreementBeyondNoiseCountsOnlySeparatedPairs) {
  // Measured ranges: A [10, 12], B [11, 13] (overlaps A), C [20, 22], D [30, 31].
  const std::vector<double> lo{10, 11, 20, 30}, hi{12, 13, 22, 31};
  // Separated pairs: AC, AD, BC, BD, CD (5). Model: A < B < C < D orders all 5 alike.
  opt::PairAgreement a = opt::agreement_beyond_noise({1, 2, 3, 4}, lo, hi);
  EXPECT_EQ(a.pairs, 5);
  EXPECT_EQ(a.alike, 5);
  EXPECT_DOUBLE_EQ(a.tau, 1.0);
  // The overlapping pair AB does not count, whichever way the model orders it.
  a = opt::agreement_beyond_noise({2, 1, 3, 4}, lo, hi);
  EXPECT_DOUBLE_EQ(a.tau, 1.0);
  // D ranked first by the model: AD, BD, CD opposite, AC, BC alike: (2 - 3) / 5.
  a = opt::agreement_beyond_noise({2, 3, 4, 1}, lo, hi);
  EXPECT_EQ(a.alike, 2);
  EXPECT_DOUBLE_EQ(a.tau, -0.2);
  // A model tie on a separated pair (C, D) counts in neither: (4 - 0) / 5.
  a = opt::agreement_beyond_noise({1, 2, 3, 3}, lo, hi);
  EXPECT_DOUBLE_EQ(a.tau, 0.8);
  // No separated pair at all.
  a = opt::agreement_beyond_noise({1, 2}, {1, 1.5}, {2, 2.5});
  EXPECT_EQ(a.pairs, 0);
  EXPECT_DOUBLE_EQ(a.tau, 0.0);
}

}  // namespace
}  // namespace mugraph
