#include "driver/time_rounds.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace mugraph::driver {
namespace {

// The q-quantile of sorted `s`, interpolating linearly between order statistics.
double quantile(const std::vector<double>& s, double q) {
  if (s.empty()) return 0;
  const double pos = q * static_cast<double>(s.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, s.size() - 1);
  return s[lo] + (pos - static_cast<double>(lo)) * (s[hi] - s[lo]);
}

}  // namespace

TimingStats summarize(std::vector<double> samples) {
  TimingStats t;
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  t.median = quantile(sorted, 0.5);
  t.p10 = quantile(sorted, 0.1);
  t.p90 = quantile(sorted, 0.9);
  t.samples = std::move(samples);
  return t;
}

std::vector<size_t> round_order(size_t n, int round) {
  std::vector<size_t> order;
  for (size_t k = 0; k < n; ++k) order.push_back((static_cast<size_t>(round) + k) % n);
  return order;
}

Result<RoundsResult> time_rounds(size_t n, const Sampler& sample, const RoundOptions& o,
                                 const Clock& clock) {
  const Clock now = clock ? clock : [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  RoundsResult r;
  r.stats.resize(n);
  if (n == 0) return r;
  const double start = now();
  for (int w = 0; w < o.warmup; ++w)
    for (size_t i = 0; i < n; ++i) MG_RETURN_IF_ERROR(sample(i).status());
  std::vector<std::vector<double>> samples(n);
  const int batch = std::max(1, o.rounds);
  const int cap = std::max(batch, o.max_rounds);
  auto too_wide = [&] {
    for (const auto& s : samples)
      if (summarize(s).spread() > o.max_spread) return true;
    return false;
  };
  for (int round = 0;; ++round) {
    if (round >= 1 && o.hard_limit_s > 0 && now() - start >= o.hard_limit_s) {
      r.time_limited = true;
      break;
    }
    if (round >= batch) {  // the first batch always runs; then whole batches while too wide
      if (round % batch == 0 && !too_wide()) break;
      if (round >= cap) {
        r.capped = true;
        break;
      }
      if (now() - start >= o.time_limit_s) {
        r.time_limited = true;
        break;
      }
    }
    for (size_t i : round_order(n, round)) {
      MG_ASSIGN_OR_RETURN(const double s, sample(i));
      samples[i].push_back(s);
    }
    r.rounds = round + 1;
  }
  r.seconds = now() - start;
  for (size_t i = 0; i < n; ++i) r.stats[i] = summarize(std::move(samples[i]));
  r.spread_ok = true;
  for (const TimingStats& s : r.stats) r.spread_ok &= s.spread() <= o.max_spread;
  return r;
}

Ratio compare(const TimingStats& a, const TimingStats& b) {
  Ratio q;
  const size_t n = std::min(a.samples.size(), b.samples.size());
  if (n == 0) return q;
  std::vector<double> r;
  for (size_t k = 0; k < n; ++k)
    r.push_back(b.samples[k] > 0 ? a.samples[k] / b.samples[k] : 1.0);
  std::sort(r.begin(), r.end());
  q.median = quantile(r, 0.5);
  q.p10 = quantile(r, 0.1);
  q.p90 = quantile(r, 0.9);
  // Ranks k and n-1-k with k = floor((n - 1.96 sqrt(n)) / 2): P(median outside) <= ~5%.
  const double k = std::floor((static_cast<double>(n) - 1.96 * std::sqrt(static_cast<double>(n))) / 2);
  const size_t lo = static_cast<size_t>(std::max(0.0, k));
  q.lo = r[lo];
  q.hi = r[n - 1 - lo];
  return q;
}

bool beats(const TimingStats& a, const TimingStats& b, double min_gain) {
  return compare(a, b).hi < 1 - min_gain;
}

std::vector<size_t> preference_order(const TimingStats& program,
                                     const std::vector<const TimingStats*>& variants,
                                     double min_gain) {
  std::vector<size_t> rest;
  for (size_t i = 0; i < variants.size(); ++i)
    if (variants[i] != nullptr && beats(*variants[i], program, min_gain)) rest.push_back(i);
  std::vector<size_t> order;
  while (!rest.empty()) {
    // The fastest: the largest speedup over the program (round by round).
    size_t fastest = rest.front();
    for (size_t i : rest)
      if (compare(*variants[i], program).median < compare(*variants[fastest], program).median)
        fastest = i;
    // The earliest-ranked variant the fastest does not beat beyond the noise (rest is in rank
    // order, and the fastest does not beat itself).
    size_t lead = fastest;
    for (size_t i : rest)
      if (!beats(*variants[fastest], *variants[i], min_gain)) {
        lead = i;
        break;
      }
    order.push_back(lead);
    rest.erase(std::find(rest.begin(), rest.end(), lead));
  }
  return order;
}

}  // namespace mugraph::driver
