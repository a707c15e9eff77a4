// Timings that repeat (issue 27, item 5): the program and its variants are timed in interleaved
// rounds, summarized by median and spread, and one is preferred over another only when it wins
// beyond the noise.
//
//   time_rounds       after `warmup` untimed samples of each entry, round r takes one sample of
//                     every entry, in the order r, r+1, ..., r+n-1 (mod n): a slow spell of the
//                     machine (a busy neighbour, a frequency change) falls on every entry alike
//                     and no entry is always first or last. After `rounds` rounds, while some
//                     entry's spread exceeds max_spread, another `rounds` rounds are taken, up to
//                     max_rounds in all and while fewer than time_limit_s seconds have passed.
//   spread            (p90 - p10) / median of an entry's samples (linear interpolation between
//                     order statistics): the relative width of the middle 80%.
//   compare(a, b)     a against b round by round: the ratios a[r] / b[r] of samples taken in
//                     the same round (so under the same load), their median, p10 and p90, and
//                     a 95% confidence interval of their median (distribution-free: the order
//                     statistics n/2 -+ 0.98 sqrt(n) of the ratios, as the sign test gives it).
//                     A busy spell that slows both alike moves each one's spread, not the
//                     ratio; noise that does not cancel widens the interval, and more rounds
//                     narrow it again.
//   beats(a, b)       a is faster than b beyond the noise: the whole interval of the median
//                     ratio lies below 1 - min_gain (a win too small to repeat is no win).
//   speedup           of a variant over the program: 1 / compare(v, program).median.
//   preference_order  the variants that beat the program, best first: the fastest median leads
//                     unless an earlier-ranked variant (by the model) is within its noise, in
//                     which case the earlier-ranked one leads; repeated on the rest.
//
// Everything here is a pure function of the samples (the sampler and the clock are injected), so
// tests drive it with fake timings.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "support/status.h"

namespace mugraph::driver {

struct TimingStats {
  std::vector<double> samples;  // seconds per call, one per round, in round order
  double median = 0, p10 = 0, p90 = 0;
  double spread() const { return median > 0 ? (p90 - p10) / median : 0; }
};

// Median, p10 and p90 of `samples` (empty: all zero).
TimingStats summarize(std::vector<double> samples);

struct RoundOptions {
  int warmup = 1;             // untimed samples of each entry before round 0
  int rounds = 10;            // rounds per batch (the first batch always runs)
  int max_rounds = 80;        // cap on rounds in all
  double max_spread = 0.10;   // a batch more while some entry's spread is above this
  double time_limit_s = 10;   // ... and while less than this has passed since the first round
  double hard_limit_s = 0;    // > 0: no round starts after this many seconds, not even one of
                              // the first batch (a time budget; at least one round runs)
};

struct RoundsResult {
  std::vector<TimingStats> stats;  // per entry
  int rounds = 0;
  double seconds = 0;              // from the first warm-up sample to the last sample
  bool spread_ok = false;          // every entry's spread <= max_spread at the end
  bool capped = false;             // stopped by max_rounds with some spread too wide
  bool time_limited = false;       // stopped by time_limit_s with some spread too wide
};

// One sample of entry i: seconds per call (the sampler may time several calls and divide).
using Sampler = std::function<Result<double>(size_t)>;
// Seconds since some fixed point (steady_clock when empty).
using Clock = std::function<double()>;

// The entries sampled, in call order, for `rounds` rounds of n entries (the warm-up excluded):
// round r visits r % n, (r + 1) % n, ...
std::vector<size_t> round_order(size_t n, int round);

Result<RoundsResult> time_rounds(size_t n, const Sampler& sample, const RoundOptions& o,
                                 const Clock& clock = {});

// a's samples over b's, round by round (the first min(#a, #b) rounds); all 1 when either is empty.
struct Ratio {
  double median = 1, p10 = 1, p90 = 1;
  double lo = 1, hi = 1;  // 95% confidence interval of the median
};
Ratio compare(const TimingStats& a, const TimingStats& b);

// Whether a is faster than b beyond the noise (see the top of this header).
bool beats(const TimingStats& a, const TimingStats& b, double min_gain);

// Indices into `variants` (in the model's rank order; nullptr = not measured) of those that beat
// `program`, in preference order.
std::vector<size_t> preference_order(const TimingStats& program,
                                     const std::vector<const TimingStats*>& variants,
                                     double min_gain);

}  // namespace mugraph::driver
