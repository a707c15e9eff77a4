#include "target/target.h"

#include <gtest/gtest.h>

#include <map>

namespace mugraph::target {
namespace {

TEST(Target, KnownTargetsHaveConsistentNumbers) {
  for (const std::string& name : target_names()) {
    auto t = find_target(name);
    ASSERT_TRUE(t.ok()) << name;
    EXPECT_EQ(t->name, name);
    EXPECT_GT(t->sm_count, 0);
    EXPECT_GT(t->device_memory_bytes, t->shared_memory_per_block);
    EXPECT_GT(t->memory_bandwidth, 0);
    EXPECT_GE(t->peak_flops_f16, t->peak_flops_f32);
    EXPECT_GT(t->max_registers_per_thread, 0);
  }
  // The two Hoppers share the die and differ in memory.
  EXPECT_EQ(h100().sm_count, h200().sm_count);
  EXPECT_GT(h200().memory_bandwidth, h100().memory_bandwidth);
  EXPECT_GT(h200().device_memory_bytes, h100().device_memory_bytes);
  EXPECT_GT(h100().shared_memory_per_block, a100().shared_memory_per_block);
}

// A block may use at most the architecture's opt-in maximum of shared memory (CUDA C
// Programming Guide, "Technical Specifications per Compute Capability", maximum shared memory
// per thread block): 163 KB on 8.0, 227 KB on 9.0. Not the per-SM capacity (164 KB on A100,
// 228 KB on H100): 1 KB per block is reserved, and a kernel asking for more fails to launch.
TEST(Target, SharedMemoryPerBlockIsTheArchitecturesOptInMaximum) {
  const std::map<int, int64_t> opt_in{{80, 163 * 1024}, {90, 227 * 1024}};
  for (const std::string& name : target_names()) {
    const Target t = find_target(name).value();
    if (t.kind != Kind::kGpu) continue;
    ASSERT_TRUE(opt_in.count(t.sm_arch)) << name << ": sm_" << t.sm_arch << " not in the table";
    EXPECT_EQ(t.shared_memory_per_block, opt_in.at(t.sm_arch)) << name;
  }
  EXPECT_EQ(a100().shared_memory_per_block, 166912);
}

TEST(Target, UnknownTargetListsTheKnownOnes) {
  auto t = find_target("tpu");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "unknown target 'tpu' (known: a100, h100, h200, cpu)");
}

}  // namespace
}  // namespace mugraph::target
