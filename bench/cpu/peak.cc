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

// GFLOP/s of `body`, which runs kIters x kChains instructions of `flops` each per thread.
template <class F>
double rate(double flops, F body) {
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    const double t0 = omp_get_wtime();
    body();
    const double t = omp_get_wtime() - t0;
    if (t < best) best = t;
  }
  return omp_get_max_threads() * static_cast<double>(kIters) * kChains * flops / best / 1e9;
}

volatile float sink;

}  // namespace

int main() {
#if defined(__AVX512F__)
  const double f32 = rate(32, [] {  // 16 lanes x (multiply + add)
#pragma omp parallel
    {
      __m512 a[kChains];
      for (int i = 0; i < kChains; ++i) a[i] = _mm512_set1_ps(0.001f * i);
      __m512 b = _mm512_set1_ps(0.9999f), c = _mm512_set1_ps(0.0001f);
      for (long i = 0; i < kIters; ++i) {
#pragma GCC unroll 12
        for (int j = 0; j < kChains; ++j) a[j] = _mm512_fmadd_ps(a[j], b, c);
        __asm__ volatile("" : "+v"(b));
      }
      float s = 0;
      for (int i = 0; i < kChains; ++i) s += _mm512_reduce_add_ps(a[i]);
      sink = s;
    }
  });
  std::printf("f32_fma_gflops %.1f\n", f32);
#else
  std::printf("f32_fma_gflops n/a (no AVX-512 on this host)\n");
#endif
#if defined(__AVX512BF16__)
  const double bf16 = rate(64, [] {  // 16 lanes x 2 products x (multiply + add)
#pragma omp parallel
    {
      __m512 a[kChains];
      for (int i = 0; i < kChains; ++i) a[i] = _mm512_set1_ps(0.001f * i);
      __m512bh b = (__m512bh)_mm512_set1_epi16(0x3f80), c = (__m512bh)_mm512_set1_epi16(0x3a00);
      for (long i = 0; i < kIters; ++i) {
#pragma GCC unroll 12
        for (int j = 0; j < kChains; ++j) a[j] = _mm512_dpbf16_ps(a[j], b, c);
        __asm__ volatile("" : "+v"(b));
      }
      float s = 0;
      for (int i = 0; i < kChains; ++i) s += _mm512_reduce_add_ps(a[i]);
      sink = s;
    }
  });
  std::printf("bf16_dot_gflops %.1f\n", bf16);
#else
  std::printf("bf16_dot_gflops n/a (no AVX512_BF16 on this host)\n");
#endif
  return 0;
}
