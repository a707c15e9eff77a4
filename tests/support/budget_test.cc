// Deadlines and the memory budget (support/deadline.h, support/memory.h).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include "support/deadline.h"
#include "support/memory.h"

namespace mugraph {
namespace {

TEST(Deadline, NoneNeverPasses) {
  const Deadline d;
  EXPECT_TRUE(d.none());
  EXPECT_FALSE(d.passed());
  EXPECT_TRUE(std::isinf(d.left()));
  EXPECT_TRUE(Deadline::after(0).none());
  EXPECT_TRUE(Deadline::after(-3).none());
  EXPECT_TRUE(d.share(0.5).none());
}

TEST(Deadline, AfterShareAndEarliest) {
  const Deadline d = Deadline::after(10);
  EXPECT_FALSE(d.passed());
  EXPECT_NEAR(d.left(), 10, 0.5);
  EXPECT_NEAR(d.share(0.25).left(), 2.5, 0.5);
  EXPECT_NEAR(d.share(2).left(), 10, 0.5);  // never later than the deadline itself
  EXPECT_NEAR(d.earliest(Deadline::after(1)).left(), 1, 0.5);
  EXPECT_NEAR(d.earliest(Deadline()).left(), 10, 0.5);
  EXPECT_NEAR(Deadline().earliest(d).left(), 10, 0.5);
  EXPECT_TRUE(Deadline::at(Deadline::Clock::now() - std::chrono::seconds(1)).passed());
}

TEST(Deadline, CancelFlagPassesIt) {
  std::atomic<bool> cancel{false};
  Deadline d;
  d.with_cancel(&cancel);
  EXPECT_FALSE(d.passed());
  cancel = true;
  EXPECT_TRUE(d.passed());
  EXPECT_TRUE(d.share(0.5).passed());  // shares keep the flag
}

TEST(Deadline, CheckThrowsOnlyInsideAPassedScope) {
  EXPECT_NO_THROW(check_deadline());
  {
    DeadlineScope s(Deadline::after(100));
    EXPECT_NO_THROW(check_deadline());
    {
      DeadlineScope inner(Deadline::at(Deadline::Clock::now()));  // the earlier one holds
      EXPECT_THROW(check_deadline(), DeadlinePassed);
    }
    EXPECT_NO_THROW(check_deadline());  // the outer one is restored
    {
      DeadlineScope later(Deadline::after(1000));  // cannot extend the outer one
      EXPECT_NEAR(current_deadline().left(), 100, 1);
    }
  }
  std::atomic<bool> cancel{true};
  Deadline c;
  c.with_cancel(&cancel);
  DeadlineScope s(c);
  try {
    check_deadline();
    FAIL() << "no throw";
  } catch (const DeadlinePassed& e) {
    EXPECT_TRUE(e.cancelled);
    EXPECT_STREQ(e.what(), "cancelled");
  }
}

TEST(MemoryBudget, ParseBytes) {
  EXPECT_EQ(parse_bytes("123"), 123);
  EXPECT_EQ(parse_bytes("2k"), 2048);
  EXPECT_EQ(parse_bytes("512M"), int64_t{512} << 20);
  EXPECT_EQ(parse_bytes("8G"), int64_t{8} << 30);
  EXPECT_EQ(parse_bytes("8GiB"), int64_t{8} << 30);
  EXPECT_EQ(parse_bytes("8GB"), int64_t{8} << 30);
  EXPECT_EQ(parse_bytes("1.5G"), int64_t{3} << 29);
  EXPECT_EQ(parse_bytes(""), -1);
  EXPECT_EQ(parse_bytes("G"), -1);
  EXPECT_EQ(parse_bytes("12x"), -1);
  EXPECT_EQ(parse_bytes("-5M"), -1);
}

TEST(MemoryBudget, MachineAndProcessNumbersArePlausible) {
  EXPECT_GT(machine_memory_bytes(), int64_t{64} << 20);
  EXPECT_GT(resident_bytes(), 0);
  EXPECT_GE(peak_resident_bytes(), resident_bytes() / 2);
  set_memory_budget(0);
  EXPECT_EQ(memory_budget(), machine_memory_bytes() / 2);  // the default
}

TEST(MemoryBudget, RefusesMoreThanTheBudgetAndWaitsForOthers) {
  set_memory_budget(1000);
  std::string why;
  MemoryReservation r;
  EXPECT_FALSE(reserve_memory(1001, r, &why));
  EXPECT_NE(why.find("over the memory budget"), std::string::npos) << why;
  ASSERT_TRUE(reserve_memory(700, r, &why));
  MemoryReservation r2;
  EXPECT_FALSE(reserve_memory(400, r2, &why, /*wait=*/false));  // 700 + 400 > 1000
  EXPECT_NE(why.find("leaves beside"), std::string::npos) << why;
  const int64_t waits = memory_stats().waits;
  std::atomic<bool> got{false};
  std::thread t([&] {
    MemoryReservation r3;
    std::string w;
    got = reserve_memory(400, r3, &w);  // waits until r is released
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_FALSE(got.load());
  r = MemoryReservation();  // release
  t.join();
  EXPECT_TRUE(got.load());
  EXPECT_EQ(memory_stats().waits, waits + 1);
  set_memory_budget(0);
}

TEST(MemoryBudget, WaitingStopsAtTheDeadline) {
  set_memory_budget(1000);
  MemoryReservation held, other;
  std::string why;
  ASSERT_TRUE(reserve_memory(900, held, &why));
  DeadlineScope s(Deadline::after(0.2));
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(reserve_memory(500, other, &why), DeadlinePassed);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
  EXPECT_EQ(other.bytes(), 0);
  set_memory_budget(0);
}

TEST(MemoryBudget, CachesAreCountedAndDroppedToMakeRoom) {
  static std::atomic<int64_t> cached{0};
  static std::atomic<int> dropped{0};
  register_cache([] { return cached.load(); }, [] { cached = 0, ++dropped; });
  set_memory_budget(1000);
  cached = 800;
  MemoryReservation r;
  std::string why;
  ASSERT_TRUE(reserve_memory(500, r, &why));  // fits only once the cache is dropped
  EXPECT_EQ(dropped.load(), 1);
  EXPECT_EQ(cached.load(), 0);
  set_memory_budget(0);
}

// A cache refilled by another check while this one waits is dropped again (it used to be
// dropped once per reservation, and the wait then never ended).
TEST(MemoryBudget, RefilledCachesAreDroppedAgain) {
  static std::atomic<int64_t> cached{0};
  register_cache([] { return cached.load(); }, [] { cached = 0; });
  set_memory_budget(1000);
  MemoryReservation a;
  std::string why;
  ASSERT_TRUE(reserve_memory(400, a, &why));
  cached = 500;
  std::thread other([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    cached = 500;             // refilled while the main thread waits
    a = MemoryReservation();  // then released
  });
  DeadlineScope s(Deadline::after(5));
  MemoryReservation b;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(reserve_memory(700, b, &why));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
  other.join();
  set_memory_budget(0);
}

}  // namespace
}  // namespace mugraph
