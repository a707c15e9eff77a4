// The WMMA fragment plan of the device library (runtime/device/mg_fragment.cuh), checked on the
// host: for every tile shape, layout and leading-dim padding a block matmul can take, every
// pointer a planned load_matrix_sync / store_matrix_sync uses is 32-byte aligned (issue 20:
// 8x32 fragments of a column-major A, 32x8 of a row-major B, started 16 bytes off when m or n
// was an odd multiple of 8), and tensor cores stay in use wherever an aligned shape exists.
#include <gtest/gtest.h>

#include "runtime/device/mg_fragment.cuh"

namespace mugraph {
namespace {

struct Operand {
  int s0, s1;
};

// A rows x cols matrix, row- or column-major, its leading dim padded by `pad` elements.
Operand operand(bool row_major, int rows, int cols, int pad) {
  return row_major ? Operand{cols + pad, 1} : Operand{1, rows + pad};
}

// The first fragment of a rows x cols matrix (fr x fc tiles) that starts off 32 bytes, or "".
std::string misaligned(unsigned long long base, mg::Layout l, int rows, int cols, int fr, int fc,
                       int bytes) {
  for (int i = 0; i < rows; i += fr)
    for (int j = 0; j < cols; j += fc) {
      const unsigned long long p =
          base + static_cast<unsigned long long>(mg::fragment_offset(l, i, j)) * bytes;
      if (p % 32 != 0)
        return "fragment (" + std::to_string(i) + ", " + std::to_string(j) + ") at byte " +
               std::to_string(p);
    }
  return "";
}

TEST(WmmaFragments, EveryPlannedFragmentPointerIs32ByteAligned) {
  int plans = 0, tensor_core = 0;
  for (int m = 8; m <= 64; m += 8)
    for (int n = 8; n <= 64; n += 8)
      for (int k : {16, 32, 48})
        for (int layouts = 0; layouts < 8; ++layouts)
          for (int pad : {0, 8})
            for (unsigned long long shift : {0ull, 16ull}) {
              const Operand a = operand(layouts & 1, m, k, pad);
              const Operand b = operand(layouts & 2, k, n, pad);
              const Operand c = operand(layouts & 4, m, n, pad);
              // Tiles at 128-byte aligned shared offsets, or A shifted by 16 bytes.
              const unsigned long long pa = 1024 + shift, pb = 8192, pc = 16384;
              const mg::WmmaPlan p =
                  mg::plan_wmma(true, m, n, k, a.s0, a.s1, b.s0, b.s1, c.s0, c.s1, pa, pb, pc);
              ++plans;
              if (p.fm == 0) continue;
              ++tensor_core;
              const std::string where = "m=" + std::to_string(m) + " n=" + std::to_string(n) +
                                        " k=" + std::to_string(k) + " layouts=" +
                                        std::to_string(layouts) + " pad=" + std::to_string(pad) +
                                        " shift=" + std::to_string(shift) + ", " +
                                        std::to_string(p.fm) + "x" + std::to_string(p.fn) + ": ";
              EXPECT_EQ(m % p.fm + n % p.fn, 0) << where;
              EXPECT_EQ(misaligned(pa, p.a, m, k, p.fm, 16, 2), "") << where << "A";
              EXPECT_EQ(misaligned(pb, p.b, k, n, 16, p.fn, 2), "") << where << "B";
              EXPECT_EQ(misaligned(pc, p.c, m, n, p.fm, p.fn, 4), "") << where << "C";
              if (::testing::Test::HasFailure()) return;
            }
  EXPECT_EQ(plans, 8 * 8 * 3 * 8 * 2 * 2);
  // Tensor cores wherever m and n are multiples of 16 and the tiles are aligned (16x16 never
  // starts off), and for the odd multiples of 8 whose fragments stay aligned.
  for (int m = 16; m <= 64; m += 16)
    for (int layouts = 0; layouts < 8; ++layouts) {
      const Operand a = operand(layouts & 1, m, 32, 0), b = operand(layouts & 2, 32, m, 0);
      const Operand c = operand(layouts & 4, m, m, 0);
      EXPECT_EQ(mg::plan_wmma(true, m, m, 32, a.s0, a.s1, b.s0, b.s1, c.s0, c.s1, 0, 4096, 8192).fm,
                16);
    }
  EXPECT_EQ(mg::plan_wmma(true, 24, 64, 16, 16, 1, 64, 1, 64, 1, 0, 1024, 4096).fm, 8);
  EXPECT_EQ(mg::plan_wmma(true, 64, 24, 16, 16, 1, 1, 16, 24, 1, 0, 1024, 4096).fm, 32);
  EXPECT_EQ(mg::plan_wmma(true, 8, 64, 16, 1, 8, 64, 1, 64, 1, 0, 1024, 4096).fm, 8);  // one row
  // Not for f32 operands, a k that is not a multiple of 16, or a strided (neither-major) tile.
  EXPECT_EQ(mg::plan_wmma(false, 16, 16, 16, 16, 1, 16, 1, 16, 1, 0, 1024, 4096).fm, 0);
  EXPECT_EQ(mg::plan_wmma(true, 16, 16, 8, 8, 1, 16, 1, 16, 1, 0, 1024, 4096).fm, 0);
  EXPECT_EQ(mg::plan_wmma(true, 16, 16, 16, 32, 2, 16, 1, 16, 1, 0, 1024, 4096).fm, 0);
}

}  // namespace
}  // namespace mugraph

#include "opt/cost_model.h"

namespace mugraph {
namespace {

// The cost model prices a block matmul at the tensor-core peak exactly when the device
// library's plan (row-major tiles, 32-byte aligned, as the memory plan places them) takes WMMA:
// the model ranks what the generator emits (issue 20: some tiles fell back to SIMT while the
// model still priced tensor cores).
TEST(WmmaPlan, CostModelAgreesWithTheDevicePlan) {
  int tc = 0, simt = 0;
  for (ir::DType a : {ir::DType::kF16, ir::DType::kBF16, ir::DType::kF32})
    for (ir::DType b : {ir::DType::kF16, ir::DType::kBF16, ir::DType::kF32})
      for (int m = 8; m <= 128; m += 8)
        for (int n = 8; n <= 128; n += 8)
          for (int k : {8, 16, 24, 32, 48, 64}) {
            const bool types = a == b && a != ir::DType::kF32;
            const mg::WmmaPlan p = mg::plan_wmma(types, m, n, k, k, 1, n, 1, n, 1, 0, 0, 0);
            const bool model = opt::tile_matmul_uses_tensor_cores(m, n, k, a, b);
            ASSERT_EQ(model, p.fm != 0) << m << "x" << n << "x" << k << " types " << types;
            (model ? tc : simt) += 1;
          }
  EXPECT_GT(tc, 500);
  EXPECT_GT(simt, 1000);
}

}  // namespace
}  // namespace mugraph
