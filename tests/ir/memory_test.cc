// Memory validity (Def. 2.1 (2)): shared memory per block, device memory, registers.
#include "ir/memory.h"
#include "test_util.h"

namespace mugraph::ir {
namespace {

using mugraph::testing::example_path;
using mugraph::testing::parse_ok;
using mugraph::testing::read_file;

TEST(Memory, SharedBytesSumEveryBlockTensor) {
  KernelGraph g = parse_ok(read_file(example_path("rms_norm_matmul.fused")));
  // f16 tiles: x [16,64], g [64], w [64,32], xg [16,64], m [16,32], sq [16,64], ss [16,1],
  // macc [16,32], sacc [16,1], y [16,32].
  const int64_t want = 2 * (1024 + 64 + 2048 + 1024 + 512 + 1024 + 16 + 512 + 16 + 512);
  EXPECT_EQ(shared_bytes(*g.ops[0].block), want);
}

TEST(Memory, LimitsAreEnforcedWithNumbers) {
  KernelGraph g = parse_ok(read_file(example_path("rms_norm_matmul.fused")));
  const int64_t smem = shared_bytes(*g.ops[0].block);
  const int64_t device = 2 * (16 * 4096 + 4096 + 4096 * 4096 + 16 * 4096);
  MemoryLimits ok{device, smem, 255};
  EXPECT_TRUE(check_memory(g, ok).ok()) << check_memory(g, ok).message();
  MemoryLimits small_smem{device, smem - 1, 255};
  EXPECT_NE(check_memory(g, small_smem).message().find(
                "graph_defined op producing 'Y': block graph tensors need " + std::to_string(smem) +
                " bytes of shared memory per block, target allows " + std::to_string(smem - 1)),
            std::string::npos);
  MemoryLimits small_device{device - 1, smem, 255};
  EXPECT_NE(check_memory(g, small_device).message().find("need " + std::to_string(device) +
                                                         " bytes of device memory"),
            std::string::npos);
  // The thread graph has macc, sacc, ms, rms, y: 5 thread tensors, one register each.
  MemoryLimits few_regs{device, smem, 4};
  EXPECT_NE(check_memory(g, few_regs).message().find("thread graph producing 'y' needs 5 registers"),
            std::string::npos);
}

}  // namespace
}  // namespace mugraph::ir
