// The CPU device library's matmul (runtime/cpu/mugraph_cpu.h) against naive float64 loops, on
// shapes that hit every edge of its blocking (rows, columns and k around kMR, kNR, kKC, kMC,
// kNC), every storage type for A, B and C, transposed and strided operands, two terms
// (concat_matmul), empty terms, and accumulation into C (a block's accumulator). tests/CMakeLists.txt builds this file three times: for the
// host's ISA as the JIT does (-march=native), for AVX2+FMA, and for no vector ISA, so each
// micro-kernel the JIT may pick is tested.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "runtime/cpu/mugraph_cpu.h"

namespace {

struct Case {
  int64_t m, n, k;
  bool a_transposed = false, b_transposed = false;
  int64_t c_pad = 0;  // extra elements per row of C (a strided output)
  int64_t k2 = -1;    // a second term's k (concat_matmul), -1: none
  int64_t a_pad = 0;  // extra elements per row of A (a tile of a wider tensor, read in place)
  bool b2_rows = false;  // the second term's B row-major (read in place) instead of transposed
};

std::string describe(const Case& c) {
  return std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) +
         (c.a_transposed ? " A^T" : "") + (c.b_transposed ? " B^T" : "") +
         (c.c_pad ? " strided C" : "") + (c.a_pad ? " strided A" : "") +
         (c.k2 >= 0 ? " +term k=" + std::to_string(c.k2) : "");
}

// A matrix stored as T, row-major or transposed; `value` holds what the storage holds (the
// rounded value), so the float64 reference sees exactly the kernel's inputs.
template <class T>
struct Mat {
  std::vector<T> data;
  std::vector<double> value;  // value[i * cols + j]
  int64_t rows, cols, s0, s1;
  Mat(int64_t r, int64_t c, bool transposed, std::mt19937& rng, int64_t pad = 0)
      : data(static_cast<size_t>(r * (c + pad))), value(static_cast<size_t>(r * c)), rows(r),
        cols(c), s0(transposed ? 1 : c + pad), s1(transposed ? r : 1) {
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) {
        const T x = mg::st<T>(u(rng));
        data[static_cast<size_t>(i * s0 + j * s1)] = x;
        value[static_cast<size_t>(i * c + j)] = mg::ld(x);
      }
  }
  template <class U>
  mg::Term<T, U> term(const Mat<U>& b) const {
    return {data.data(), s0, s1, b.data.data(), b.s0, b.s1, cols};
  }
};

// mode: 0 serial, 1 parallel, 2 serial accumulating into C (which holds 7 everywhere).
template <class TC, class T, class TB = T>
void check(const Case& cs, int mode, std::mt19937& rng) {
  const bool parallel = mode == 1, accumulate = mode == 2;
  SCOPED_TRACE(describe(cs) + (parallel ? " parallel" : accumulate ? " accumulate" : " serial"));
  const Mat<T> a(cs.m, cs.k, cs.a_transposed, rng, cs.a_transposed ? 0 : cs.a_pad);
  const Mat<TB> b(cs.k, cs.n, cs.b_transposed, rng);
  const int64_t k2 = cs.k2 < 0 ? 0 : cs.k2;
  const Mat<T> a2(cs.m, k2, false, rng), b2(k2, cs.n, !cs.b2_rows, rng);
  const int64_t cm = cs.n + cs.c_pad;
  std::vector<TC> c(static_cast<size_t>(cs.m * cm), mg::st<TC>(7.f));  // 7: must be overwritten
  const mg::Term<T, T> t2 =
      cs.k2 < 0 ? mg::Term<T, T>{nullptr, 0, 0, nullptr, 0, 0, 0} : a2.term(b2);
  if (parallel)
    mg::matmul_parallel(cs.m, cs.n, c.data(), cm, 1, a.term(b), t2);
  else if (accumulate)
    mg::matmul_into(true, cs.m, cs.n, c.data(), cm, 1, a.term(b), t2);
  else
    mg::matmul(cs.m, cs.n, c.data(), cm, 1, a.term(b), t2);
  int bad = 0;
  for (int64_t i = 0; i < cs.m; ++i) {
    for (int64_t j = 0; j < cs.n; ++j) {
      double want = accumulate ? 7 : 0, mag = accumulate ? 7 : 0;
      for (int64_t p = 0; p < cs.k; ++p) {
        const double x = a.value[static_cast<size_t>(i * cs.k + p)] * b.value[static_cast<size_t>(p * cs.n + j)];
        want += x;
        mag += std::fabs(x);
      }
      for (int64_t p = 0; p < k2; ++p) {
        const double x = a2.value[static_cast<size_t>(i * k2 + p)] * b2.value[static_cast<size_t>(p * cs.n + j)];
        want += x;
        mag += std::fabs(x);
      }
      const double got = mg::ld(c[static_cast<size_t>(i * cm + j)]);
      // f32 accumulation error, plus the output's own rounding (f16: 2^-11 relative; 2^-10
      // leaves room for the accumulation error that rounding can double).
      const double out_eps = sizeof(TC) == 4 ? 0 : 0x1p-10 * std::fabs(want);
      const double tol = 1e-5 * mag + out_eps + 1e-6;
      if (!(std::fabs(got - want) <= tol) && bad++ < 3)
        ADD_FAILURE() << "C[" << i << "][" << j << "] = " << got << ", want " << want;
    }
    for (int64_t j = cs.n; j < cm; ++j)  // the padding between rows is never written
      if (mg::ld(c[static_cast<size_t>(i * cm + j)]) != 7.f && bad++ < 3)
        ADD_FAILURE() << "padding C[" << i << "][" << j << "] was written";
  }
  EXPECT_EQ(bad, 0);
}

// This build's ISA must be the host's (the AVX2 build on a host without AVX2 cannot run).
bool host_runs_this_build() {
#if defined(__AVX512F__)
  if (!__builtin_cpu_supports("avx512f")) return false;
#endif
#if defined(__AVX2__)
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return false;
#endif
  return true;
}
#define SKIP_IF_HOST_LACKS_ISA() \
  if (!host_runs_this_build()) GTEST_SKIP() << "this CPU lacks the ISA this test was built for"

std::vector<Case> cases() {
  std::vector<Case> v;
  // Rows, columns and k around the micro-kernel and cache blocks.
  for (int64_t m : {1, 3, 8, 9, 16, 65, 130})
    for (int64_t n : {1, 15, 16, 17, 32, 33, 64, 257})
      for (int64_t k : {1, 7, 256, 300}) v.push_back({m, n, k});
  v.push_back({16, 600, 520, true, false});
  v.push_back({33, 70, 40, false, true});
  v.push_back({20, 48, 33, true, true, 5});
  v.push_back({9, 40, 64, false, false, 3, 16});  // concat_matmul: two terms
  v.push_back({9, 40, 0, false, false, 0, 20});   // the first term is empty
  v.push_back({5, 7, 0});                          // no term: C = 0
  // C summed in place (f32 C, whole row blocks, whole vectors of columns): two terms; a
  // strided C whose last panel is one vector wide; A rows read in place from a wider tensor.
  v.push_back({16, 48, 64, false, false, 0, 32});
  v.push_back({8, 80, 300, false, false, 7});
  v.push_back({16, 64, 100, false, false, 0, -1, 12});
  v.push_back({9, 48, 40, false, false, 0, -1, 3});
  v.push_back({0, 64, 10});  // no rows
  // Two to four row blocks over many panels: A packed once (packed_a, parallel) or per step of k,
  // B converted once per panel and read back by the other row blocks.
  for (int64_t m : {24, 31, 32}) v.push_back({m, 257, 300});
  v.push_back({32, 600, 520, true, false});
  v.push_back({24, 300, 100, false, false, 0, 40, 12});
  return v;
}

TEST(CpuMatmul, F32MatchesNaiveLoops) {
  SKIP_IF_HOST_LACKS_ISA();
  std::printf("micro-kernel: %d rows x %lld columns, %d lanes\n", mg::kMR,
              static_cast<long long>(mg::kNR), mg::kLanes);
  std::mt19937 rng(1);
  for (const Case& c : cases())
    for (int mode : {0, 1, 2}) check<float, float>(c, mode, rng);
}

TEST(CpuMatmul, F16MatchesNaiveLoops) {
  SKIP_IF_HOST_LACKS_ISA();
  std::mt19937 rng(2);
  for (const Case& c : cases())
    for (int mode : {0, 1}) check<mg::f16, mg::f16>(c, mode, rng);  // parallel: A converted once
}

// Mixed storage types, as a block's matmul reading one operand in place from device memory
// (f16) and the other from its f32 buffer.
TEST(CpuMatmul, MixedTypesMatchNaiveLoops) {
  SKIP_IF_HOST_LACKS_ISA();
  std::mt19937 rng(4);
  for (const Case& c : cases()) {
    check<float, mg::f16, float>(c, 2, rng);
    check<float, float, mg::f16>(c, 0, rng);
    check<float, mg::f16, float>(c, 1, rng);  // parallel: the f16 A converted once, f32 B
    check<mg::f16, mg::f16, mg::bf16>(c, 2, rng);
  }
}

// matmul_parallel with fewer tiles than threads cuts the columns narrower; with 3 and 5
// threads (whatever the host has) every split, uneven ones and tiles past the last column
// included, must still give the whole product. k = 700 sums in several blocks, each
// prefetching the next.
TEST(CpuMatmul, ParallelSplitOfFewTilesMatchesNaiveLoops) {
  SKIP_IF_HOST_LACKS_ISA();
  std::mt19937 rng(5);
  const int saved = omp_get_max_threads();
  for (int threads : {3, 5}) {
    omp_set_num_threads(threads);
    for (const Case& c : std::vector<Case>{{16, 100, 700}, {3, 64, 300}, {70, 40, 129},
                                           {8, 31, 20}, {130, 257, 5}, {16, 96, 33, false, true}}) {
      check<mg::f16, mg::f16>(c, 1, rng);
      check<float, float>(c, 1, rng);
    }
  }
  omp_set_num_threads(saved);
}

// A matmul of at most 32 rows whose terms read B in place runs one tile of columns per thread,
// as wide as the scratch tile holds (2048 columns at 8 rows or fewer, 1024 at 16, 512 at 32),
// with A packed once (packed_a) and B's panel converted once for 2-4 row blocks (kSave): on one
// and two threads, widths over and at the cap, one or two row-major terms. And a serial tile
// that starts at row 64 with 3 row blocks (kSave away from row 0).
TEST(CpuMatmul, WideTilesOfFewRowsMatchNaiveLoops) {
  SKIP_IF_HOST_LACKS_ISA();
  std::mt19937 rng(11);
  const int saved = omp_get_max_threads();
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    for (int64_t m : {1, 8, 9, 16, 32})
      for (int64_t n : {2100, 4200}) {
        check<mg::f16, mg::f16>({m, n, 300}, 1, rng);
        Case two{m, n, 300, false, false, 0, 40};
        two.b2_rows = true;
        check<float, float>(two, 1, rng);
      }
  }
  omp_set_num_threads(saved);
  check<mg::f16, mg::f16>({88, 300, 300}, 0, rng);
  check<float, mg::f16>({88, 300, 300, false, false, 0, -1, 5}, 0, rng);
}

TEST(CpuMatmul, Bf16InF32OutMatchesNaiveLoops) {
  SKIP_IF_HOST_LACKS_ISA();
  std::mt19937 rng(3);
  for (const Case& c : cases()) check<float, mg::bf16>(c, 1, rng);
}

}  // namespace
