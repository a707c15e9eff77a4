// The CPU device library: the only header that generated CPU kernels include (codegen/cpu).
// It is compiled into the runtime as text (embedded by CMake) and written next to every
// generated source, so a JIT compile needs nothing but the system compiler.
//
// Layers: storage types and conversions (ld/st) -> tile algorithms (matmul) -> per-thread
// scratch (arena). Compute is always f32; f16 and bf16 exist only as storage, rounded to
// nearest-even when stored, like the reference interpreter (verify/arith.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace mg {

// ---- storage types -------------------------------------------------------------------------
// f16 is the compiler's _Float16 (GCC >= 12 on x86-64) as a storage type. Its conversions are
// written out in integer and float arithmetic below rather than as casts: GCC 12 converts casts
// one element at a time (scalar vcvtph2ps / vcvtps2ph, no vectorization), which made every f16
// load and store loop scalar. These forms are branch-free, so the loops vectorize, and they give
// the casts' results bit for bit (tests/codegen/cpu_library_test.cc; every NaN stays a NaN).
using f16 = _Float16;
struct bf16 {
  uint16_t bits;
};

inline float ld(float x) { return x; }
inline float ld(f16 x) {
  uint16_t h;
  std::memcpy(&h, &x, sizeof h);
  const uint32_t mag = (static_cast<uint32_t>(h) & 0x7fffu) << 13;  // exponent and mantissa
  float f;
  std::memcpy(&f, &mag, sizeof f);
  f *= 0x1p112f;  // rebias the exponent (2^(127-15)); exact for normals and subnormals alike
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  b = (h & 0x7c00u) == 0x7c00u ? (mag | 0x7f800000u) : b;  // infinities and NaNs
  b |= (static_cast<uint32_t>(h) & 0x8000u) << 16;         // sign
  std::memcpy(&f, &b, sizeof f);
  return f;
}
inline float ld(bf16 x) {
  const uint32_t b = static_cast<uint32_t>(x.bits) << 16;
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

template <class T>
T st(float x);
template <>
inline float st<float>(float x) { return x; }
template <>
inline f16 st<f16>(float x) {  // round to nearest, ties to even
  uint32_t f;
  std::memcpy(&f, &x, sizeof f);
  const uint32_t sign = f & 0x80000000u;
  f ^= sign;
  // |x| >= 65536 (or inf/NaN): infinity, or a quiet NaN.
  const uint32_t huge = f > 0x7f800000u ? 0x7e00u : 0x7c00u;
  // |x| < 2^-14 (f16 subnormal or zero): adding 0.5 puts the f16 mantissa in the low bits,
  // rounded to nearest even by the float addition itself.
  float t;
  std::memcpy(&t, &f, sizeof t);
  t += 0.5f;
  uint32_t tb;
  std::memcpy(&tb, &t, sizeof tb);
  const uint32_t tiny = tb - 0x3f000000u;
  // Normal: rebias the exponent (15 - 127) and round the 13 dropped bits to nearest even.
  const uint32_t normal = (f + 0xc8000fffu + ((f >> 13) & 1u)) >> 13;
  const uint32_t o = f >= 0x47800000u ? huge : f < 0x38800000u ? tiny : normal;
  const uint16_t h = static_cast<uint16_t>(o | (sign >> 16));
  f16 r;
  std::memcpy(&r, &h, sizeof r);
  return r;
}
template <>
inline bf16 st<bf16>(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  if (std::isnan(x)) return bf16{static_cast<uint16_t>((b >> 16) | 0x40u)};  // stay NaN
  b = (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;  // round to nearest, ties to even
  return bf16{static_cast<uint16_t>(b)};
}

// ---- tile algorithms -----------------------------------------------------------------------
// One product term of a matmul: A[m][k] at a[m*am + k*ak], B[k][n] at b[k*bk + n*bn].
template <class TA, class TB>
struct Term {
  const TA* a;
  int64_t am, ak;
  const TB* b;
  int64_t bk, bn;
  int64_t k;
};

// Tile sizes of the matmul: kRows x kCols f32 accumulators (32 KiB, an L1-sized block) and one
// converted row of B, so B is read once per block of kRows rows and the inner loop over
// columns is a contiguous, vectorizable f32 FMA.
inline constexpr int64_t kRows = 16, kCols = 512;

// C[i][j] = sum over terms t of sum_k A_t[i][k] B_t[k][j] for i in [i0, i1), j in [j0, j1),
// at c[i*cm + j*cn]. Up to two terms (concat_matmul); a term with k == 0 is skipped.
template <class TC, class TA, class TB, class TA2, class TB2>
inline void matmul_tile(int64_t i0, int64_t i1, int64_t j0, int64_t j1, TC* c, int64_t cm,
                        int64_t cn, const Term<TA, TB>& t1, const Term<TA2, TB2>& t2) {
  float acc[kRows][kCols];
  float brow[kCols];
  const int64_t rows = i1 - i0, cols = j1 - j0;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) acc[i][j] = 0.f;
  auto run = [&](const auto& t) {
    for (int64_t k = 0; k < t.k; ++k) {
      const auto* bp = t.b + k * t.bk + j0 * t.bn;
      if (t.bn == 1) {
        for (int64_t j = 0; j < cols; ++j) brow[j] = ld(bp[j]);
      } else {
        for (int64_t j = 0; j < cols; ++j) brow[j] = ld(bp[j * t.bn]);
      }
      for (int64_t i = 0; i < rows; ++i) {
        const float av = ld(t.a[(i0 + i) * t.am + k * t.ak]);
#pragma omp simd
        for (int64_t j = 0; j < cols; ++j) acc[i][j] += av * brow[j];
      }
    }
  };
  run(t1);
  run(t2);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) c[(i0 + i) * cm + (j0 + j) * cn] = st<TC>(acc[i][j]);
}

// C[m][n] = A B (+ A2 B2), serial: used inside a block (the grid is the parallel loop).
template <class TC, class TA, class TB, class TA2 = float, class TB2 = float>
inline void matmul(int64_t m, int64_t n, TC* c, int64_t cm, int64_t cn, const Term<TA, TB>& t1,
                   const Term<TA2, TB2>& t2 = Term<TA2, TB2>{nullptr, 0, 0, nullptr, 0, 0, 0}) {
  for (int64_t i0 = 0; i0 < m; i0 += kRows)
    for (int64_t j0 = 0; j0 < n; j0 += kCols)
      matmul_tile(i0, i0 + kRows < m ? i0 + kRows : m, j0, j0 + kCols < n ? j0 + kCols : n, c, cm,
                  cn, t1, t2);
}

// The same over all cores: tiles are independent, so they are shared out statically.
template <class TC, class TA, class TB, class TA2 = float, class TB2 = float>
inline void matmul_parallel(int64_t m, int64_t n, TC* c, int64_t cm, int64_t cn,
                            const Term<TA, TB>& t1,
                            const Term<TA2, TB2>& t2 = Term<TA2, TB2>{nullptr, 0, 0, nullptr, 0,
                                                                      0, 0}) {
  const int64_t rt = (m + kRows - 1) / kRows, ct = (n + kCols - 1) / kCols;
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < rt * ct; ++t) {
    const int64_t i0 = (t / ct) * kRows, j0 = (t % ct) * kCols;
    matmul_tile(i0, i0 + kRows < m ? i0 + kRows : m, j0, j0 + kCols < n ? j0 + kCols : n, c, cm,
                cn, t1, t2);
  }
}

// ---- per-thread scratch --------------------------------------------------------------------
// A block's shared-memory tensors live in one per-thread buffer of `n` floats (grown on first
// use, kept across calls so a timed run does not allocate).
inline float* arena(int64_t n) {
  static thread_local std::vector<float> buf;
  if (static_cast<int64_t>(buf.size()) < n) buf.resize(static_cast<size_t>(n));
  return buf.data();
}

}  // namespace mg
