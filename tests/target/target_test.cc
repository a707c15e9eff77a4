#include "target/target.h"

#include <gtest/gtest.h>

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

TEST(Target, UnknownTargetListsTheKnownOnes) {
  auto t = find_target("tpu");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "unknown target 'tpu' (known: a100, h100, h200, cpu)");
}

}  // namespace
}  // namespace mugraph::target
