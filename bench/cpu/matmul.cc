// The CPU device library's matmul alone (runtime/cpu/mugraph_cpu.h, mg::matmul_parallel) on f16
// operands and output, the shapes its comments quote: min of N calls after a warm-up, GFLOP/s,
// and a spot check against double-precision sums. Built by bench/cpu/matmul.sh with the host's
// ISA, as the CPU JIT builds kernels. --b-offset BYTES puts B that many bytes past a 64-byte
// boundary (a NumPy array is 16-byte aligned; the library's own buffers are 64-byte aligned).
//
//   matmul [--runs N] [--b-offset BYTES] M N K [M N K ...]
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
  int64_t b_offset = 0;
  bool unknown = false;
  for (; i + 1 < argc && std::strncmp(argv[i], "--", 2) == 0; i += 2) {
    if (std::strcmp(argv[i], "--runs") == 0) runs = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--b-offset") == 0) b_offset = std::atol(argv[i + 1]);
    else unknown = true;
  }
  if (unknown || (argc - i) % 3 != 0 || argc == i || b_offset < 0 || b_offset % 2 != 0) {
    std::fprintf(stderr, "usage: matmul [--runs N] [--b-offset EVEN_BYTES] M N K [M N K ...]\n");
    return 1;
  }
  std::printf("%6s %6s %6s %12s %10s %10s %6s\n", "M", "N", "K", "min-us", "GFLOP/s", "max-err", "b-off");
  for (; i + 2 < argc; i += 3) {
    const int64_t m = std::atol(argv[i]), n = std::atol(argv[i + 1]), k = std::atol(argv[i + 2]);
    mg::f16* const b_block = aligned<mg::f16>(k * n + b_offset / 2);
    mg::f16 *a = aligned<mg::f16>(m * k), *b = b_block + b_offset / 2, *c = aligned<mg::f16>(m * n);
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
    std::printf("%6ld %6ld %6ld %12.1f %10.1f %10.2g %6ld\n", static_cast<long>(m), static_cast<long>(n),
                static_cast<long>(k), best * 1e6, 2.0 * m * n * k / best / 1e9, err,
                static_cast<long>(b_offset));
    std::free(a);
    std::free(b_block);
    std::free(c);
  }
  return 0;
}
