// The CPU runtime sizes its OpenMP team by the cores other processes leave idle.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>

#include "runtime/cpu_jit.h"

namespace mugraph::runtime {
namespace {

TEST(CpuThreads, IdleCoresSeesABusyThread) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int quiet = idle_cores(0.1);
  EXPECT_GE(quiet, 1);
  EXPECT_LE(quiet, cores);
  if (cores < 2) GTEST_SKIP() << "one core: nothing to leave idle";
  std::atomic<bool> stop{false};
  std::thread spin([&] {
    volatile uint64_t x = 0;
    while (!stop.load(std::memory_order_relaxed)) x = x + 1;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const int busy = idle_cores(0.3);
  stop = true;
  spin.join();
  EXPECT_LE(busy, cores - 1) << "one core spins; " << busy << " of " << cores << " reported idle";
}

// libgomp loads with a short spin before idle threads sleep, unless the user chose a policy
// (bench/cpu/busy_neighbour.py measures why).
TEST(CpuThreads, OpenMpSpinsBrieflyUnlessTheUserChose) {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  const std::string user_spin = spin ? spin : "";
  const bool chosen = policy != nullptr || spin != nullptr;
  init_openmp();
  const char* now = std::getenv("GOMP_SPINCOUNT");
  if (chosen) {
    EXPECT_EQ(now ? std::string(now) : "", user_spin) << "the user's setting is kept";
  } else {
    ASSERT_NE(now, nullptr);
    EXPECT_STREQ(now, "1000");
  }
}

}  // namespace
}  // namespace mugraph::runtime
