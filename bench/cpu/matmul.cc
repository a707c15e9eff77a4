// The CPU device library's matmul alone (runtime/cpu/mugraph_cpu.h, mg::matmul_parallel) on f16
// operands and output, the shapes its comments quote: min of N calls after a warm-up, GFLOP/s,
// and a spot check against double-precision sums. Built by bench/cpu/matmul.sh with the host's
// ISA, as the CPU JIT builds kernels.
//
//   matmul [--runs N] M N K [M N K ...]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "mugraph_cpu.h"

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <class T>
T* aligned(size_t n) {
  return static_cast<T*>(std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64));
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 30, i = 1;
  if (argc > 2 && std::strcmp(argv[1], "--runs") == 0) runs = std::atoi(argv[2]), i = 3;
  if ((argc - i) % 3 != 0 || argc == i) {
    std::fprintf(stderr, "usage: matmul [--runs N] M N K [M N K ...]\n");
    return 1;
  }
  std::printf("%6s %6s %6s %12s %10s %10s\n", "M", "N", "K", "min-us", "GFLOP/s", "max-err");
  for (; i + 2 < argc; i += 3) {
    const int64_t m = std::atol(argv[i]), n = std::atol(argv[i + 1]), k = std::atol(argv[i + 2]);
    mg::f16 *a = aligned<mg::f16>(m * k), *b = aligned<mg::f16>(k * n), *c = aligned<mg::f16>(m * n);
    std::mt19937 g(1);
    std::uniform_real_distribution<float> u(-1, 1);
    for (int64_t j = 0; j < m * k; ++j) a[j] = mg::st<mg::f16>(u(g));
    for (int64_t j = 0; j < k * n; ++j) b[j] = mg::st<mg::f16>(u(g));
    const mg::Term<mg::f16, mg::f16> t{a, k, 1, b, n, 1, k};
    double best = 1e30;
    for (int r = 0; r <= runs; ++r) {  // run 0 warms up
      const double t0 = now();
      mg::matmul_parallel(m, n, c, n, 1, t);
      if (r > 0) best = std::min(best, now() - t0);
    }
    double err = 0;  // relative to the sum of |products|, over a sample of entries
    for (int64_t r = 0; r < m; r += 7)
      for (int64_t col = 0; col < n; col += 509) {
        double s = 0, mag = 0;
        for (int64_t p = 0; p < k; ++p) {
          const double x = static_cast<double>(mg::ld(a[r * k + p])) * mg::ld(b[p * n + col]);
          s += x;
          mag += std::fabs(x);
        }
        err = std::max(err, std::fabs(s - mg::ld(c[r * n + col])) / mag);
      }
    std::printf("%6ld %6ld %6ld %12.1f %10.1f %10.2g\n", static_cast<long>(m), static_cast<long>(n),
                static_cast<long>(k), best * 1e6, 2.0 * m * n * k / best / 1e9, err);
    std::free(a);
    std::free(b);
    std::free(c);
  }
  return 0;
}
