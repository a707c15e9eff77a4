#include "support/rng.h"

#include <gtest/gtest.h>

#include <cmath>

namespace mugraph {
namespace {

TEST(Rng, SameSeedSameSequenceDifferentSeedDifferent) {
  Rng a(42), b(42), c(43);
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.next_u64();
    EXPECT_EQ(x, b.next_u64());
    EXPECT_NE(x, c.next_u64());
  }
}

TEST(Rng, DistributionsHaveTheirMoments) {
  Rng r(1);
  const int n = 200000;
  double su = 0, sn = 0, sn2 = 0;
  uint64_t below_hist[5] = {};
  for (int i = 0; i < n; ++i) {
    const double u = r.uniform(-1, 1);
    ASSERT_TRUE(u >= -1 && u < 1);
    su += u;
    const double z = r.normal();
    sn += z;
    sn2 += z * z;
    ++below_hist[r.below(5)];
  }
  EXPECT_NEAR(su / n, 0, 0.01);
  EXPECT_NEAR(sn / n, 0, 0.01);
  EXPECT_NEAR(sn2 / n, 1, 0.02);
  for (uint64_t h : below_hist) EXPECT_NEAR(static_cast<double>(h) / n, 0.2, 0.01);
}

}  // namespace
}  // namespace mugraph
