// The CPU device library's f16 conversions (runtime/cpu/mugraph_cpu.h) against the compiler's
// own _Float16 casts: every f16 loads as the cast would, and stores round like the cast
// (round to nearest, ties to even) on every 61st float bit pattern, which covers every exponent,
// both signs, subnormals, ties, overflow and NaNs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "runtime/cpu/mugraph_cpu.h"  // its OpenMP pragmas: see tests/CMakeLists.txt

namespace {

template <class To, class From>
To bits(From x) {
  static_assert(sizeof(To) == sizeof(From));
  To t;
  std::memcpy(&t, &x, sizeof t);
  return t;
}

TEST(CpuLibrary, F16LoadsEqualTheCompilersCastOnEveryValue) {
  int mismatches = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    const mg::f16 x = bits<mg::f16>(static_cast<uint16_t>(h));
    const float want = static_cast<float>(x), got = mg::ld(x);
    if (std::isnan(want) ? !std::isnan(got) : bits<uint32_t>(want) != bits<uint32_t>(got))
      ++mismatches;
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(CpuLibrary, F16StoresRoundLikeTheCompilersCast) {
  int mismatches = 0, checked = 0;
  for (uint64_t u = 0; u < (1ull << 32); u += 61) {
    const float x = bits<float>(static_cast<uint32_t>(u));
    const uint16_t want = bits<uint16_t>(static_cast<mg::f16>(x));
    const uint16_t got = bits<uint16_t>(mg::st<mg::f16>(x));
    ++checked;
    if (std::isnan(x)) {
      mismatches += (got & 0x7c00u) != 0x7c00u || (got & 0x3ffu) == 0;  // some NaN
      continue;
    }
    if (want != got && mismatches++ < 5) ADD_FAILURE() << std::hex << "float bits " << u << ": cast " << want << ", st " << got;
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_GT(checked, 70000000);
  // Ties go to even: 1 + 2^-11 is halfway between 1 and 1 + 2^-10.
  EXPECT_EQ(bits<uint16_t>(mg::st<mg::f16>(1.0f + 0x1p-11f)), 0x3c00u);
  EXPECT_EQ(bits<uint16_t>(mg::st<mg::f16>(1.0f + 3 * 0x1p-11f)), 0x3c02u);
  EXPECT_EQ(bits<uint16_t>(mg::st<mg::f16>(65520.0f)), 0x7c00u);  // rounds up to infinity
}

// mg::exp against e^x in double on every 97th float bit pattern (all exponents, both signs,
// subnormal results, overflow), within 3 ulp of the float result; specials as std::exp.
TEST(CpuLibrary, ExpIsWithinThreeUlpOnEveryRange) {
  double worst = 0;
  float worst_x = 0;
  int wrong_specials = 0;
  for (uint64_t u = 0; u < (1ull << 32); u += 97) {
    const float x = bits<float>(static_cast<uint32_t>(u));
    const float got = mg::exp(x);
    const double want = std::exp(static_cast<double>(x));
    if (std::isnan(x)) {
      wrong_specials += !std::isnan(got);
      continue;
    }
    if (want > 3.4028234663852886e38) {
      wrong_specials += !(std::isinf(got) && got > 0);
      continue;
    }
    const double ulp = want < 1.1754943508222875e-38
                           ? 0x1p-149
                           : std::ldexp(1.0, std::ilogb(static_cast<float>(want)) - 23);
    const double e = std::fabs(static_cast<double>(got) - want) / ulp;
    if (e > worst) worst = e, worst_x = x;
  }
  EXPECT_LE(worst, 3.0) << "at x = " << worst_x;
  EXPECT_EQ(wrong_specials, 0);
  EXPECT_EQ(mg::exp(0.f), 1.f);
  EXPECT_EQ(mg::exp(-INFINITY), 0.f);
  EXPECT_TRUE(std::isinf(mg::exp(INFINITY)));
}

}  // namespace
