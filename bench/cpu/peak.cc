// Peak arithmetic rates of this CPU on all cores (bench/cpu/run.sh prints them beside the
// table): f32 fused multiply-adds, which mugraph's CPU kernels use (f32 compute), and, where the
// host has AVX512_BF16, bf16 dot products (vdpbf16ps), which PyTorch's bf16 paths use. Each
// thread runs 12 independent accumulator chains, enough to fill the FMA pipes. Built by run.sh
// with the host's ISA (-march=native -fopenmp), as the CPU JIT builds kernels.
#include <immintrin.h>
#include <omp.h>

#include <cstdio>

namespace {

constexpr long kIters = 20000000;
constexpr int kChains = 12;

// GFLOP/s of `body`, which runs kIters x kChains instructions of `flops` each per thread and
// returns the number of threads that ran.
template <class F>
double rate(double flops, F body) {
  double best = 1e30;
  int threads = 1;
  for (int rep = 0; rep < 3; ++rep) {
    const double t0 = omp_get_wtime();
    threads = body();
    const double t = omp_get_wtime() - t0;
    if (t < best) best = t;
  }
  return threads * static_cast<double>(kIters) * kChains * flops / best / 1e9;
}

#if defined(__AVX512F__)
volatile float sink;

// Each thread: kChains accumulators, each updated kIters times by step(acc) (one instruction).
template <class Step>
int chains(Step step) {
  int threads = 1;
  float total = 0;
#pragma omp parallel reduction(+ : total)
  {
#pragma omp single
    threads = omp_get_num_threads();
    __m512 a[kChains];
    for (int i = 0; i < kChains; ++i) a[i] = _mm512_set1_ps(0.001f * i);
    for (long i = 0; i < kIters; ++i) {
#pragma GCC unroll 12
      for (int j = 0; j < kChains; ++j) a[j] = step(a[j]);
    }
    for (int i = 0; i < kChains; ++i) total += _mm512_reduce_add_ps(a[i]);
  }
  sink = total;
  return threads;
}
#endif

}  // namespace

int main() {
#if defined(__AVX512F__)
  // 16 lanes x (multiply + add); the operands come through asm so nothing folds.
  __m512 b = _mm512_set1_ps(0.9999f), c = _mm512_set1_ps(0.0001f);
  __asm__ volatile("" : "+v"(b), "+v"(c));
  std::printf("f32_fma_gflops %.1f\n",
              rate(32, [&] { return chains([&](__m512 x) { return _mm512_fmadd_ps(x, b, c); }); }));
#else
  std::printf("f32_fma_gflops n/a (no AVX-512 on this host)\n");
#endif
#if defined(__AVX512BF16__)
  // 16 lanes x 2 products x (multiply + add).
  __m512bh p = (__m512bh)_mm512_set1_epi16(0x3f80), q = (__m512bh)_mm512_set1_epi16(0x3a00);
  __asm__ volatile("" : "+v"(p), "+v"(q));
  std::printf("bf16_dot_gflops %.1f\n",
              rate(64, [&] { return chains([&](__m512 x) { return _mm512_dpbf16_ps(x, p, q); }); }));
#else
  std::printf("bf16_dot_gflops n/a (no AVX512_BF16 on this host)\n");
#endif
  return 0;
}
