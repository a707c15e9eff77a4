// Seeded random numbers. Every algorithm that needs randomness takes an Rng& from its caller,
// so a run is reproducible from its seed (STYLE.md rule 10); nothing reads a global generator.
#pragma once

#include <cstdint>

namespace mugraph {

// splitmix64-seeded xoshiro256** generator: small, fast and with a fixed, portable output
// sequence (std::mt19937_64 distributions differ between standard libraries).
class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t next_u64();
  // Uniform in [0, 1) with 53 random bits.
  double uniform01();
  // Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform01(); }
  // Uniform integer in [0, n), n > 0, without modulo bias.
  uint64_t below(uint64_t n);
  // Standard normal (Box-Muller).
  double normal();

 private:
  uint64_t s_[4];
};

}  // namespace mugraph
