// Issue 27, item 5: interleaved timing rounds, median and spread, preference beyond the noise,
// all driven by fake timings (no clock, no JIT: deterministic and instant).
#include <gtest/gtest.h>

#include <functional>
#include <utility>
#include <vector>

#include "driver/time_rounds.h"

namespace mugraph {
namespace {

using driver::RoundOptions;
using driver::TimingStats;

// An entry's fake sample k: base * (1 + jitter[k % jitter.size()]).
struct Fake {
  explicit Fake(std::vector<double> b, std::vector<double> j = {0.0})
      : base(std::move(b)), jitter(std::move(j)) {}
  std::vector<double> base;
  std::vector<double> jitter;
  std::vector<size_t> calls;  // entries in call order, warm-up included
  std::vector<int> seen;
  Result<double> operator()(size_t i) {
    calls.push_back(i);
    if (seen.size() < base.size()) seen.resize(base.size());
    const int k = seen[i]++;
    return base[i] * (1 + jitter[static_cast<size_t>(k) % jitter.size()]);
  }
};

// 20 rounds of an entry: median * (1 + rel * d) with d cycling through -1, -0.5, 0, 0.5, 1
// starting at `phase`: entries with different phases are noisy against each other round by
// round, entries with the same phase slow down and speed up together.
TimingStats stats(double median, double rel, int phase) {
  std::vector<double> s;
  for (int k = 0; k < 20; ++k) s.push_back(median * (1 + rel * ((k + phase) % 5 - 2) / 2.0));
  return driver::summarize(s);
}

TEST(TimeRounds, SummaryIsMedianAndInterdecileSpread) {
  const TimingStats t = driver::summarize({5, 1, 4, 2, 3, 6, 9, 8, 7, 10, 11});
  EXPECT_DOUBLE_EQ(t.median, 6);
  EXPECT_DOUBLE_EQ(t.p10, 2);
  EXPECT_DOUBLE_EQ(t.p90, 10);
  EXPECT_DOUBLE_EQ(t.spread(), 8.0 / 6.0);
  EXPECT_EQ(t.samples.size(), 11u);  // kept in round order
  EXPECT_DOUBLE_EQ(t.samples.front(), 5);
  EXPECT_DOUBLE_EQ(driver::summarize({}).spread(), 0);
}

TEST(TimeRounds, RoundsInterleaveAndRotateAfterAWarmup) {
  Fake f({1, 2, 3});
  RoundOptions o;
  o.rounds = 4;
  auto r = driver::time_rounds(3, std::ref(f), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->rounds, 4);
  const std::vector<size_t> want{0, 1, 2,            // warm-up
                                 0, 1, 2, 1, 2, 0,   // rounds 0, 1
                                 2, 0, 1, 0, 1, 2};  // rounds 2, 3
  EXPECT_EQ(f.calls, want);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(r->stats[i].samples.size(), 4u);
    EXPECT_DOUBLE_EQ(r->stats[i].median, static_cast<double>(i + 1));
  }
  EXPECT_TRUE(r->spread_ok);
}

TEST(TimeRounds, WideSpreadTakesMoreRoundsUpToTheCap) {
  // Quiet: one batch. Noisy (+-30%): batches up to max_rounds, then says it was capped.
  Fake quiet({1, 1}, {0.0, 0.01, -0.01});
  RoundOptions o;
  o.rounds = 5;
  o.max_rounds = 20;
  o.max_spread = 0.1;
  auto q = driver::time_rounds(2, std::ref(quiet), o);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->rounds, 5);
  EXPECT_TRUE(q->spread_ok);
  Fake noisy({1, 1}, {0.0, 0.3, -0.3});
  auto n = driver::time_rounds(2, std::ref(noisy), o);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->rounds, 20);
  EXPECT_FALSE(n->spread_ok);
  EXPECT_TRUE(n->capped);
  EXPECT_FALSE(n->time_limited);
}

TEST(TimeRounds, NoiseThatSettlesStopsAtTheBatchWhereItFitsTheThreshold) {
  // Samples 0..9 of each entry swing +-50%; later ones are within 1%: enough quiet samples
  // bring p10..p90 inside the threshold after a few batches, before the cap.
  std::vector<double> jitter;
  for (int k = 0; k < 10; ++k) jitter.push_back(k % 2 ? 0.5 : -0.5);
  for (int k = 0; k < 200; ++k) jitter.push_back(k % 2 ? 0.01 : -0.01);
  Fake f({1, 2}, jitter);
  RoundOptions o;
  o.rounds = 10;
  o.max_rounds = 200;
  o.max_spread = 0.1;
  auto r = driver::time_rounds(2, std::ref(f), o);
  ASSERT_TRUE(r.ok());
  EXPECT_GT(r->rounds, 10);
  EXPECT_LT(r->rounds, 200);
  EXPECT_EQ(r->rounds % 10, 0);
  EXPECT_TRUE(r->spread_ok);
}

TEST(TimeRounds, TimeLimitStopsExtraRounds) {
  Fake f({1}, {0.0, 0.4, -0.4});
  double t = 0;
  RoundOptions o;
  o.rounds = 3;
  o.max_rounds = 1000;
  o.time_limit_s = 10;
  auto r = driver::time_rounds(1, [&](size_t i) { t += 1; return f(i); }, o, [&] { return t; });
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->time_limited);
  EXPECT_FALSE(r->capped);
  EXPECT_EQ(r->rounds, 9);  // 1 s per sample: warm-up + 9 rounds = 10 s
}

TEST(TimeRounds, SamplerErrorsPropagate) {
  auto r = driver::time_rounds(
      2, [](size_t i) -> Result<double> {
        if (i == 1) return error("entry 1 crashed");
        return 1.0;
      },
      RoundOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("entry 1 crashed"), std::string::npos);
}

TEST(TimeRounds, NoiseInsideTheThresholdIsNoPreference) {
  const TimingStats program = stats(100, 0.10, 0);  // +-10%, independent of the variant's noise
  const TimingStats close = stats(95, 0.10, 2);     // 5% faster by median: inside the noise
  EXPECT_LT(close.median, program.median);
  const driver::Ratio q = driver::compare(close, program);
  EXPECT_LE(q.lo, q.median);
  EXPECT_GE(q.hi, 0.98);  // the interval reaches above 1 - min_gain
  EXPECT_FALSE(driver::beats(close, program, 0.02));
  EXPECT_TRUE(driver::preference_order(program, {&close}, 0.02).empty());
  // A quiet machine but a gain below min_gain: no preference either.
  const TimingStats quiet_program = stats(100, 0.001, 0), quiet_close = stats(99, 0.001, 1);
  EXPECT_FALSE(driver::beats(quiet_close, quiet_program, 0.02));
  EXPECT_TRUE(driver::beats(quiet_close, quiet_program, 0.0));
}

TEST(TimeRounds, ClearWinIsPreferred) {
  const TimingStats program = stats(100, 0.10, 0);
  const TimingStats fast = stats(70, 0.10, 3);
  EXPECT_TRUE(driver::beats(fast, program, 0.02));
  EXPECT_FALSE(driver::beats(program, fast, 0.02));
  EXPECT_EQ(driver::preference_order(program, {&fast, nullptr}, 0.02), (std::vector<size_t>{0}));
}

TEST(TimeRounds, NoiseSharedByARoundCancelsInTheRatio) {
  // Each entry alone swings +-40% (a busy neighbour comes and goes), but both swing together:
  // round by round the variant is 10% faster every time.
  const TimingStats program = stats(100, 0.4, 0), v = stats(90, 0.4, 0);
  EXPECT_GT(program.spread(), 0.3);
  EXPECT_NEAR(driver::compare(v, program).median, 0.9, 1e-12);
  EXPECT_NEAR(driver::compare(v, program).hi - driver::compare(v, program).lo, 0, 1e-12);
  EXPECT_TRUE(driver::beats(v, program, 0.02));
}

TEST(TimeRounds, MoreRoundsNarrowTheIntervalOfTheMedianRatio) {
  // Independent +-20% noise on both: 10 rounds cannot tell a 6% gain from none; 400 can.
  auto entry = [](double median, int rounds, int mult) {
    std::vector<double> s;
    for (int k = 0; k < rounds; ++k) s.push_back(median * (1 + 0.2 * (((k * mult) % 7) - 3) / 3.0));
    return driver::summarize(s);
  };
  EXPECT_FALSE(driver::beats(entry(94, 10, 3), entry(100, 10, 1), 0.02));
  EXPECT_TRUE(driver::beats(entry(94, 400, 3), entry(100, 400, 1), 0.02));
}

TEST(TimeRounds, TiedVariantsKeepTheModelsRankOrder) {
  const TimingStats program = stats(100, 0.05, 0);
  const TimingStats v0 = stats(80, 0.05, 1), v1 = stats(78, 0.05, 3);  // tied: v0 ranked first
  const TimingStats v2 = stats(60, 0.05, 2);                           // beats both clearly
  const TimingStats v3 = stats(99, 0.05, 0);  // 1% faster every round: below min_gain
  EXPECT_FALSE(driver::beats(v1, v0, 0.02));
  EXPECT_TRUE(driver::beats(v2, v0, 0.02));
  EXPECT_EQ(driver::preference_order(program, {&v0, &v1}, 0.02), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(driver::preference_order(program, {&v0, &v1, &v2, &v3}, 0.02),
            (std::vector<size_t>{2, 0, 1}));
  EXPECT_EQ(driver::preference_order(program, {&v3, &v1, &v0}, 0.02),
            (std::vector<size_t>{1, 2}));
}

TEST(TimeRounds, InterleavedFakeRunsPickTheSameVariantUnderASlowSpell) {
  // A busy neighbour slows every entry by 2x in rounds 3..6. Interleaving spreads it over all
  // entries alike: the pick (variant 1, 30% faster) and its speedup do not move.
  auto run = [](bool busy) {
    std::vector<size_t> calls;
    int n = 0;
    RoundOptions o;
    o.rounds = 10;
    o.max_rounds = 40;
    o.max_spread = 1.0;
    const double base[] = {1.0, 0.7, 0.99};  // 1%: below min_gain
    auto sample = [&](size_t i) -> Result<double> {
      const int round = n++ / 3 - 1;  // -1: warm-up
      return base[i] * (busy && round >= 3 && round <= 6 ? 2.0 : 1.0);
    };
    auto r = driver::time_rounds(3, sample, o).value();
    const auto order = driver::preference_order(r.stats[0], {&r.stats[1], &r.stats[2]}, 0.02);
    return std::make_pair(order, r.stats[0].median / r.stats[1].median);
  };
  const auto quiet = run(false), busy = run(true);
  EXPECT_EQ(quiet.first, (std::vector<size_t>{0}));
  EXPECT_EQ(busy.first, quiet.first);
  EXPECT_NEAR(busy.second, quiet.second, 0.15 * quiet.second);
}

}  // namespace
}  // namespace mugraph
