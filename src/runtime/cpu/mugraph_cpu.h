// The CPU device library: the only header that generated CPU kernels include (codegen/cpu).
// It is compiled into the runtime as text (embedded by CMake) and written next to every
// generated source, so a JIT compile needs nothing but the system compiler.
//
// Layers: storage types and conversions (ld/st) -> tile algorithms (matmul) -> per-thread
// scratch (arena). Compute is always f32; f16 and bf16 exist only as storage, rounded to
// nearest-even when stored, like the reference interpreter (verify/arith.h).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

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

// ---- math -----------------------------------------------------------------------------------
// e^x in f32 for the generated element-wise loops, branch-free so that they vectorize (glibc's
// expf is a call per element unless -ffast-math, which the JIT does not use): Cody-Waite
// reduction x = n ln2 + r with |r| <= ln2/2, a degree-6 Taylor polynomial (remainder below
// 1.2e-7 relative), then 2^n applied in two steps so that subnormal results stay exact. Within
// 3 ulp of e^x on every float (tests/codegen/cpu_library_test.cc); inf, -inf, NaN and overflow
// as std::exp. 0.31 against 1.92 ns per element for std::exp on this project's machine.
inline float exp(float x) {
  const float xc = x < -104.f ? -104.f : (x > 89.f ? 89.f : x);
  const float n = (xc * 1.44269504088896341f + 12582912.f) - 12582912.f;  // round to nearest
  float r = xc - n * 0.693145751953125f;     // ln2's high bits: n * this is exact
  r = r - n * 1.428606765330187045e-6f;      // ln2's low bits
  float p = 1.f / 720.f;
  p = p * r + 1.f / 120.f;
  p = p * r + 1.f / 24.f;
  p = p * r + 1.f / 6.f;
  p = p * r + 0.5f;
  p = p * r + 1.f;
  p = p * r + 1.f;
  const int32_t ni = static_cast<int32_t>(n);
  const int32_t n1 = ni / 2, n2 = ni - n1;  // each within the normal exponents
  const uint32_t b1 = static_cast<uint32_t>(n1 + 127) << 23;
  const uint32_t b2 = static_cast<uint32_t>(n2 + 127) << 23;
  float s1, s2;
  std::memcpy(&s1, &b1, sizeof s1);
  std::memcpy(&s2, &b2, sizeof s2);
  const float v = p * s1 * s2;
  return x != x ? x : (x > 88.72283935546875f ? __builtin_inff() : v);
}

// ---- tile algorithms -----------------------------------------------------------------------
// One product term of a matmul: A[m][k] at a[m*am + k*ak], B[k][n] at b[k*bk + n*bn].
// `packed` (f32 A only, made by packed_a): A is already in the micro-kernel's layout, row blocks
// of kMR rows am apart, each [k][kMR] (ak unused).
template <class TA, class TB>
struct Term {
  const TA* a;
  int64_t am, ak;
  const TB* b;
  int64_t bk, bn;
  int64_t k;
  bool packed = false;
};

// The matmul is register-blocked (as BLIS/GotoBLAS describe): a micro-kernel keeps a kMR x kNR
// block of C in vector registers and, for each k, loads one row of B (kNR values, converted to
// f32 in registers when B is f16/bf16) and broadcasts kMR values of A (packed as f32, or an f32
// A read in place). Around it: k is cut into steps of at most kKC (k_step), rows into kMC and
// columns into kNC (one tile of C, accumulated in f32 scratch until every k is summed, or in
// place in an f32 C). B is packed into panels, or read in place by tiles of few rows
// (kDirectRowBlocks). Sizes measured on this project's 2-core AMD EPYC, the few-row paths
// (packed_a, kSave, wide tiles) on its 2-core Intel Xeon (bench/results/cpu.md).
// Compute is f32 with fused multiply-adds, as the JIT builds for the host (-march=native):
// AVX-512 (8 x 32, 16 zmm accumulators), AVX2+FMA (4 x 16, 8 ymm), else plain loops.
#if defined(__AVX512F__)
using vec = __m512;
inline constexpr int kLanes = 16, kMR = 8;
inline vec vzero() { return _mm512_setzero_ps(); }
inline vec vset1(float x) { return _mm512_set1_ps(x); }
inline vec vfma(vec a, vec b, vec c) { return _mm512_fmadd_ps(a, b, c); }
inline vec vload(const float* p) { return _mm512_loadu_ps(p); }
inline vec vload(const f16* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline vec vload(const bf16* p) {
  const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}
inline void vstore(float* p, vec v) { _mm512_storeu_ps(p, v); }
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
using vec = __m256;
inline constexpr int kLanes = 8, kMR = 4;
inline vec vzero() { return _mm256_setzero_ps(); }
inline vec vset1(float x) { return _mm256_set1_ps(x); }
inline vec vfma(vec a, vec b, vec c) { return _mm256_fmadd_ps(a, b, c); }
inline vec vload(const float* p) { return _mm256_loadu_ps(p); }
inline vec vload(const f16* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline vec vload(const bf16* p) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}
inline void vstore(float* p, vec v) { _mm256_storeu_ps(p, v); }
#else
// No vector ISA known here: a "vector" of 8 floats in plain loops the compiler may vectorize.
struct vec {
  float v[8];
};
inline constexpr int kLanes = 8, kMR = 4;
inline vec vzero() { return vec{}; }
inline vec vset1(float x) {
  vec r;
  for (float& e : r.v) e = x;
  return r;
}
inline vec vfma(vec a, vec b, vec c) {
  for (int l = 0; l < 8; ++l) c.v[l] += a.v[l] * b.v[l];
  return c;
}
template <class T>
inline vec vload(const T* p) {
  vec r;
  for (int l = 0; l < 8; ++l) r.v[l] = ld(p[l]);
  return r;
}
inline void vstore(float* p, vec v) {
  for (int l = 0; l < 8; ++l) p[l] = v.v[l];
}
#endif
// k is summed in one block when it is at most kKC, else in blocks of kKC / 2: 128 rather than
// 256 measured 5-10% faster on long sums when B was packed (16 x 4096 x 4096 f16: 1.90-2.00
// vs 2.15-2.24 ms, alternating runs; 256 x 1024 x 1024: 1.27 vs 1.34 ms): the packed block of
// B (128 KiB) leaves room in L2 for the next one, which the micro-kernel prefetches
// (NextBlock). Not re-measured for B read in place. A sum of 256 or less stays one block
// (16 x 4096 x 256: 104-110 us vs 117 us in blocks of 128).
inline constexpr int64_t kNR = 2 * kLanes, kKC = 256, kMC = 64, kNC = 256;
inline constexpr int64_t k_step(int64_t k) { return k <= kKC ? kKC : kKC / 2; }

// Prefetches the cache line `bytes` past `base`. The address is computed as an integer: a
// prefetch never faults, but pointer arithmetic past an array would be undefined (every
// prefetch below may reach past the data: the next row, block or iteration).
inline void prefetch_at(const void* base, int64_t bytes) {
  __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(base) +
                                                   static_cast<uintptr_t>(bytes)));
}

// The rows of B's next block of k that a tile reads after this one, prefetched one cache line
// at a time while the micro-kernel computes this block, spread evenly over the block's
// micro-kernel steps (spread): the next block's reads then hit the cache instead of stalling on
// memory. Measured on 16 x 4096 x 4096 f16 (B 32 MiB, past the L3): packing B with this stream
// 2.1 -> 1.85 ms; reading B in place with it 1.45-1.6 ms, without it 2.2-3.1 ms.
struct NextBlock {
  const char* base = nullptr;  // the block's first row, at this tile's first column
  int64_t row_bytes = 0, lines = 0, rows = 0;  // stride of B's rows; lines per row; rows
  int64_t r = 0, l = 0;                        // the next line to fetch
  int64_t every = 1, per = 1, n = 0;           // `per` lines every `every` steps of k
  // The block's micro-kernels take `steps` steps of k in all.
  void spread(int64_t steps) {
    const int64_t need = lines * rows;
    if (need <= 0 || steps <= 0) return;
    every = need >= steps ? 1 : steps / need;
    per = need > steps ? (need + steps - 1) / steps : 1;
  }
  void tick() {
    if (++n < every) return;
    n = 0;
    for (int64_t p = 0; p < per; ++p) fetch();
  }
  void fetch() {
    if (r >= rows) return;
    prefetch_at(base, r * row_bytes + l * 64);
    if (++l == lines) {
      l = 0;
      ++r;
    }
  }
};

// A tile with at most this many blocks of kMR rows reads B in place, converting each row of a
// panel in registers, instead of packing it first as f32: with so few rows the packing's
// stores and re-reads cost more than converting B once per block of rows (16 x 4096 x 256 f16:
// 85 vs 110 us; 16 x 4096 x 4096: 1.45 vs 2.1 ms; 32 x 4096 x 4096: 2.9 vs 3.1 ms; at 8
// blocks, 64 x 4096 x 1024, packing is 4% faster). With two or more row blocks, the first
// stores the panel it converted (kSave) and the others read that f32 copy from L1: on the
// Intel Xeon one f16 row converted in registers costs as much as 4 of the micro-kernel's 16
// FMAs (a micro-kernel on an L1-resident f16 panel ran at 78-82% of the f32 one's rate), and
// B's rows 8 KiB apart all fall into one L1 set, so a panel read twice came from L2 twice.
inline constexpr int64_t kDirectRowBlocks = 4;

// c[i][0 .. NV*kLanes) (row stride ldc, i < kMR) = (first ? 0 : c) + sum_k A[i][k] b[k][..].
// A is packed (kRows false: ap[k * kMR + i], f32) or read in place (kRows: row i at
// ap + i * am, f32, k contiguous; rows from `rows` on repeat the last one: their sums land in
// the scratch tile's padding rows and are never copied to C). b is a row-major panel with row stride bk, converted to f32 in registers.
// `next`, when given, advances its prefetch stream at every step of k. kSave: each converted row
// of b is also stored to save[k * NV * kLanes ..] (the panel as f32, for the tile's other row
// blocks to read from L1 instead of converting it again).
template <int NV, bool kRows, class TB, bool kSave = false>
inline void micro_kernel(int64_t kc, const float* __restrict ap, int64_t am, int64_t rows,
                         const TB* __restrict b, int64_t bk, float* __restrict c, int64_t ldc,
                         bool first, NextBlock* next, float* __restrict save = nullptr) {
  const float* ar[kMR];
#pragma GCC unroll 16
  for (int i = 0; i < kMR; ++i) ar[i] = kRows ? ap + (i < rows ? i : rows - 1) * am : ap + i;
  const int64_t ak = kRows ? 1 : kMR;
  vec acc[kMR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < kMR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = first ? vzero() : vload(c + i * ldc + v * kLanes);
  for (int64_t k = 0; k < kc; ++k) {
    vec bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = vload(b + k * bk + v * kLanes);
    if constexpr (kSave)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) vstore(save + k * NV * kLanes + v * kLanes, bv[v]);
    if (next) next->tick();
#pragma GCC unroll 16
    for (int i = 0; i < kMR; ++i) {
      const vec a = vset1(ar[i][k * ak]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] = vfma(a, bv[v], acc[i][v]);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < kMR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) vstore(c + i * ldc + v * kLanes, acc[i][v]);
}

// Packed panels of B lie this many floats (one cache line) apart beyond their kc x kNR values:
// panels a power of two apart (16 KiB at kc = 128) put row k of every panel in the same L1 set
// and their stores 4 KiB apart from each other, which the packing loop writes side by side.
inline constexpr int64_t kPanelPad = 16;
inline float* panel_at(float* bp, int64_t jp, int64_t kc) {
  return bp + jp / kNR * (kc * kNR + kPanelPad);
}

// A matmul's scratch, per thread and apart from the block arena (which holds the block's
// tensors while a block-level matmul runs): C tile, packed A, packed B.
inline float* matmul_scratch() {
  static thread_local std::vector<float> buf(
      static_cast<size_t>(kMC * kNC + kKC * kMC + kKC * kNC + kNC / kNR * kPanelPad));
  return buf.data();
}

// Rows of B are read this many rows ahead of their packing (software prefetch): a tile reads
// only kNC columns of each row, too short a run for the hardware prefetcher (measured on the
// 16 x 4096 x 4096 f16 matmul: 2.3 ms with it, 3.0 ms without).
inline constexpr int64_t kPrefetchRows = 8;

// Adds t's product into the f32 tile cs (rows i0..i0+rows, columns j0..j0+cols of C, row
// stride ldc); `first`: cs holds nothing yet. Per step of k: A's rows packed kMR at a time as
// [k][kMR] f32 (f32 rows of A with k contiguous are read in place instead: packing them cost as
// much as the products in a block's 16 x 32 x 64 matmul), B's block packed row by row
// (contiguous reads) as panels of kNR columns [panel][k][kNR] f32 with zero columns past the end
// (or read in place, kDirectRowBlocks), then the micro-kernel per panel and rows.
template <class TA, class TB>
inline void matmul_term(const Term<TA, TB>& t, int64_t i0, int64_t rows, int64_t j0, int64_t cols,
                        float* __restrict cs, int64_t ldc, float* __restrict ap,
                        float* __restrict bp, bool& first) {
  constexpr bool kFloatA = std::is_same_v<TA, float>;
  // A read in place: f32 rows with k contiguous, for a tile of few panels (a block's matmul;
  // packing its A cost as much as its products). With 4 panels or more, A packed per step of k
  // instead, read through one pointer: with 8 row pointers (kRows) the micro-kernel spilled
  // them to the stack inside its loop.
  const bool a_packed = kFloatA && t.packed;
  const bool a_rows = kFloatA && !a_packed && t.ak == 1 && (cols + kNR - 1) / kNR < 4;
  const int64_t row_blocks = (rows + kMR - 1) / kMR;
  const int64_t step = k_step(t.k);
  for (int64_t k0 = 0; k0 < t.k; k0 += step) {
    const int64_t kc = t.k - k0 < step ? t.k - k0 : step;
    for (int64_t r = 0; r < row_blocks && !a_rows && !a_packed; ++r) {
      float* const dst = ap + r * kc * kMR;
      for (int64_t i = 0; i < kMR; ++i) {
        const int64_t row = r * kMR + i;
        if (row < rows) {
          const TA* src = t.a + (i0 + row) * t.am + k0 * t.ak;
          int64_t k = 0;
          if (t.ak == 1)  // convert kLanes at a time, then scatter into the packed layout
            for (; k + kLanes <= kc; k += kLanes) {
              alignas(64) float v[kLanes];
              vstore(v, vload(src + k));
              for (int l = 0; l < kLanes; ++l) dst[(k + l) * kMR + i] = v[l];
            }
          for (; k < kc; ++k) dst[k * kMR + i] = ld(src[k * t.ak]);
        } else {
          for (int64_t k = 0; k < kc; ++k) dst[k * kMR + i] = 0.f;
        }
      }
    }
    // B read in place (see kDirectRowBlocks): only a last, partial panel is packed.
    const bool direct = t.bn == 1 && row_blocks <= kDirectRowBlocks;
    const int64_t packed_from = direct ? cols / kNR * kNR : 0;
    // Where panel jp is packed: B read in place packs only its last, partial panel, always in
    // the second slot (the first holds a converted panel, kSave), so a wide tile fits.
    auto packed_panel = [&](int64_t jp) { return panel_at(bp, direct ? kNR : jp, kc); };
    for (int64_t k = 0; k < kc && packed_from < cols; ++k) {
      const TB* row = t.b + (k0 + k) * t.bk + j0 * t.bn;
      if (t.bn == 1 && !direct)  // also past this term's last row: a block's next iteration reads on
        for (int64_t off = 0; off < cols * static_cast<int64_t>(sizeof(TB)); off += 64)
          prefetch_at(row, kPrefetchRows * t.bk * static_cast<int64_t>(sizeof(TB)) + off);
      int64_t jp = packed_from;
      if (t.bn == 1)
        for (; jp + kNR <= cols; jp += kNR) {
          float* const d = packed_panel(jp) + k * kNR;
          vstore(d, vload(row + jp));
          vstore(d + kLanes, vload(row + jp + kLanes));
        }
      for (; jp < cols; jp += kNR) {
        float* const d = packed_panel(jp) + k * kNR;
        const int64_t n = cols - jp < kNR ? cols - jp : kNR;
        for (int64_t j = 0; j < n; ++j) d[j] = ld(row[(jp + j) * t.bn]);
        for (int64_t j = n; j < kNR; ++j) d[j] = 0.f;
      }
    }
    // What the tile reads next, prefetched while it computes (NextBlock): the next block of k,
    // all columns row by row (contiguous runs), over this block's steps; with B read in place
    // by two or more row blocks, panel by panel instead: the next panel of this block (or the
    // next block's first), over this panel's steps. A single block of k (a block matmul in a
    // graph-defined kernel) read in place goes panel by panel too, so that it reads all but its
    // first panel from cache. Measured (alternating builds, min of 30): 8 x 4096 x 4096 f16
    // (one row block) 0.77-0.79 ms row by row vs 1.07-1.15 ms panel by panel; RMSNorm+MatMul's
    // fused grid-8 kernel 1.56 ms panel by panel vs 1.71-1.78 ms row by row.
    const int64_t panels = (cols + kNR - 1) / kNR;
    const int64_t next_kc = t.k - k0 - kc < step ? t.k - k0 - kc : step;
    const int64_t row_bytes = t.bk * static_cast<int64_t>(sizeof(TB));
    // From the cache line that holds `base`: B need not be 64-byte aligned (a NumPy array is
    // 16-byte aligned), and a run that starts mid-line spans one line more (counting from base
    // itself left each row's last line unfetched: 16 x 4096 x 4096 f16 with B 16 bytes past a
    // line took 7.2-9.7 ms instead of 3.1-4.6 ms, bench/results/cpu.md). Rows whose stride is
    // not whole lines start at other offsets within a line: one line more covers any of them
    // (a row that needs fewer fetches one line it does not read).
    auto stream = [&](const TB* base, int64_t columns, int64_t nrows, int64_t steps) {
      NextBlock n;
      const uintptr_t at = reinterpret_cast<uintptr_t>(base), skew = at % 64;
      n.base = reinterpret_cast<const char*>(at - skew);
      n.row_bytes = row_bytes;
      n.lines = (static_cast<int64_t>(skew) + columns * static_cast<int64_t>(sizeof(TB)) + 63) / 64 +
                (row_bytes % 64 != 0 ? 1 : 0);
      n.rows = nrows;
      n.spread(steps);
      return n;
    };
    NextBlock next;
    const bool by_panel = direct && row_blocks > 1;
    if (t.bn == 1 && !by_panel && next_kc > 0)
      next = stream(t.b + (k0 + kc) * t.bk + j0, cols, next_kc, panels * row_blocks * kc);
    for (int64_t jp = 0; jp < cols; jp += kNR) {
      const bool narrow = cols - jp <= kLanes;  // one vector wide is enough
      if ((by_panel || (direct && next_kc == 0)) && jp + kNR < packed_from)
        next = stream(t.b + k0 * t.bk + j0 + jp + kNR, kNR, kc, row_blocks * kc);
      else if (by_panel && next_kc > 0)
        next = stream(t.b + (k0 + kc) * t.bk + j0, kNR, next_kc, row_blocks * kc);
      else if (by_panel || (direct && next_kc == 0))
        next = NextBlock{};
      for (int64_t r = 0; r < row_blocks; ++r) {
        float* const c = cs + r * kMR * ldc + jp;
        if constexpr (kFloatA) {
          if (a_rows) {
            const float* const a = t.a + (i0 + r * kMR) * t.am + k0;
            const int64_t n = rows - r * kMR;
            if (jp < packed_from && r == 0 && row_blocks > 1)
              micro_kernel<2, true, TB, true>(kc, a, t.am, n, t.b + k0 * t.bk + j0 + jp, t.bk, c, ldc,
                                              first, &next, bp);
            else if (jp < packed_from && r > 0)
              micro_kernel<2, true>(kc, a, t.am, n, bp, kNR, c, ldc, first, &next);
            else if (jp < packed_from)
              micro_kernel<2, true>(kc, a, t.am, n, t.b + k0 * t.bk + j0 + jp, t.bk, c, ldc, first, &next);
            else if (narrow)
              micro_kernel<1, true>(kc, a, t.am, n, packed_panel(jp), kNR, c, ldc, first, &next);
            else
              micro_kernel<2, true>(kc, a, t.am, n, packed_panel(jp), kNR, c, ldc, first, &next);
            continue;
          }
        }
        const float* a = ap + r * kc * kMR;
        if constexpr (kFloatA)
          if (a_packed) a = t.a + (i0 / kMR + r) * t.am + k0 * kMR;  // i0: a multiple of kMC
        if (jp < packed_from && r == 0 && row_blocks > 1)
          micro_kernel<2, false, TB, true>(kc, a, 0, kMR, t.b + k0 * t.bk + j0 + jp, t.bk, c, ldc,
                                           first, &next, bp);
        else if (jp < packed_from && r > 0)
          micro_kernel<2, false>(kc, a, 0, kMR, bp, kNR, c, ldc, first, &next);
        else if (jp < packed_from)
          micro_kernel<2, false>(kc, a, 0, kMR, t.b + k0 * t.bk + j0 + jp, t.bk, c, ldc, first, &next);
        else if (narrow)
          micro_kernel<1, false>(kc, a, 0, kMR, packed_panel(jp), kNR, c, ldc, first, &next);
        else
          micro_kernel<2, false>(kc, a, 0, kMR, packed_panel(jp), kNR, c, ldc, first, &next);
      }
    }
    first = false;
  }
}

// C[i][j] = sum over terms t of sum_k A_t[i][k] B_t[k][j] for i in [i0, i1), j in [j0, j1),
// at c[i*cm + j*cn]; at most kMC rows and kNC columns, or a wide tile (wide_tile_columns: every
// B read in place, more columns in as few rows). Up to two terms (concat_matmul); a term
// with k == 0 is skipped. `accumulate`: C += the product instead. An f32 C whose rows and
// columns are whole micro-kernel blocks (kMR rows, kLanes columns) is summed in place; else in
// the f32 scratch tile, converted when stored (a block's 16 x 32 f32 accumulator: in place).
template <class TC, class TA, class TB, class TA2, class TB2>
inline void matmul_tile(int64_t i0, int64_t i1, int64_t j0, int64_t j1, TC* c, int64_t cm,
                        int64_t cn, const Term<TA, TB>& t1, const Term<TA2, TB2>& t2,
                        bool accumulate) {
  float* const scratch = matmul_scratch();
  float* const ap = scratch + kMC * kNC;
  float* const bp = ap + kKC * kMC;
  const int64_t rows = i1 - i0, cols = j1 - j0;
  bool first = !accumulate;
  constexpr bool kFloatC = std::is_same_v<TC, float>;
  // C must not overlap A or B (generated code never passes such buffers): in place, partial
  // sums are written into C before every k is read.
  const bool in_place = kFloatC && cn == 1 && rows % kMR == 0 && cols % kLanes == 0;
  float* cs = scratch;
  if constexpr (kFloatC)
    if (in_place) cs = c + i0 * cm + j0;
  const int64_t padded = (cols + kNR - 1) / kNR * kNR;  // the micro-kernel's full width
  const int64_t ldc = in_place ? cm : padded;
  if (accumulate && !in_place) {
    for (int64_t i = 0; i < (rows + kMR - 1) / kMR * kMR; ++i)
      for (int64_t j = 0; j < padded; ++j)
        cs[i * ldc + j] = i < rows && j < cols ? ld(c[(i0 + i) * cm + (j0 + j) * cn]) : 0.f;
  }
  if (t1.k > 0) matmul_term(t1, i0, rows, j0, cols, cs, ldc, ap, bp, first);
  if (t2.k > 0) matmul_term(t2, i0, rows, j0, cols, cs, ldc, ap, bp, first);
  if (in_place && !first) return;
  for (int64_t i = 0; i < rows; ++i) {
    TC* const out = c + (i0 + i) * cm + j0 * cn;
    if (first) {  // no term: C = 0 (cs is not read; in place it points into C)
      for (int64_t j = 0; j < cols; ++j) out[j * cn] = st<TC>(0.f);
    } else if (cn == 1) {
      const float* const in = cs + i * ldc;
#pragma omp simd
      for (int64_t j = 0; j < cols; ++j) out[j] = st<TC>(in[j]);
    } else {
      const float* const in = cs + i * ldc;
      for (int64_t j = 0; j < cols; ++j) out[j * cn] = st<TC>(in[j]);
    }
  }
}


// C[m][n] (+)= A B (+ A2 B2), serial: used inside a block (the grid is the parallel loop);
// `accumulate`: add to C (a block's accumulator) instead of overwriting it.
template <class TC, class TA, class TB, class TA2 = float, class TB2 = float>
inline void matmul_into(bool accumulate, int64_t m, int64_t n, TC* c, int64_t cm, int64_t cn,
                        const Term<TA, TB>& t1, const Term<TA2, TB2>& t2 = {}) {
  for (int64_t j0 = 0; j0 < n; j0 += kNC)
    for (int64_t i0 = 0; i0 < m; i0 += kMC)
      matmul_tile(i0, i0 + kMC < m ? i0 + kMC : m, j0, j0 + kNC < n ? j0 + kNC : n, c, cm, cn, t1,
                  t2, accumulate);
}

// C[m][n] = A B (+ A2 B2), serial.
template <class TC, class TA, class TB, class TA2 = float, class TB2 = float>
inline void matmul(int64_t m, int64_t n, TC* c, int64_t cm, int64_t cn, const Term<TA, TB>& t1,
                   const Term<TA2, TB2>& t2 = {}) {
  matmul_into(false, m, n, c, cm, cn, t1, t2);
}

// How many columns a tile of all m rows may have when every term reads B in place (row-major B,
// m <= kDirectRowBlocks * kMR; else 0: tiles of kNC columns): as many as the f32 scratch tile
// holds, kMC x kNC values. The tile reads B's rows in runs that long: with m <= 8, 2048 columns
// (4 KiB of f16 a row) instead of 256: 8 x 4096 x 4096 f16 at 188-189 GFLOP/s against 147-151,
// 1 x 4096 x 4096 at 22.8-24.6 against 18.4-19.0 (best runs of 4-5 alternating, 2 threads,
// Intel Xeon, bench/cpu/matmul.cc; this VM's medians spread as widely as the gain).
template <class TA, class TB, class TA2, class TB2>
inline int64_t wide_tile_columns(int64_t m, const Term<TA, TB>& t1, const Term<TA2, TB2>& t2) {
  if (m > kDirectRowBlocks * kMR || t1.bn != 1 || (t2.k > 0 && t2.bn != 1)) return 0;
  const int64_t rows = (m + kMR - 1) / kMR * kMR;
  return kMC * kNC / rows / kNR * kNR;
}

template <class TC, class TA, class TB, class TA2, class TB2>
inline void matmul_parallel_tiles(int64_t m, int64_t n, TC* c, int64_t cm, int64_t cn,
                                  const Term<TA, TB>& t1, const Term<TA2, TB2>& t2) {
  const int64_t rt = (m + kMC - 1) / kMC;
  int64_t nc = kNC;
#ifdef _OPENMP
  const int64_t threads = omp_get_max_threads();
  const int64_t wide = wide_tile_columns(m, t1, t2);
  if (wide > 0) {  // one tile of columns per thread, as wide as the scratch holds
    nc = ((n + threads - 1) / threads + kNR - 1) / kNR * kNR;
    if (nc > wide) nc = wide;
  } else if (rt * ((n + kNC - 1) / kNC) < threads) {
    const int64_t per = (threads + rt - 1) / rt;  // column tiles wanted per row tile
    nc = ((n + per - 1) / per + kNR - 1) / kNR * kNR;
    if (nc < kNR) nc = kNR;
    if (nc > kNC) nc = kNC;
  }
#endif
  const int64_t ct = (n + nc - 1) / nc;
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < rt * ct; ++t) {
    const int64_t i0 = (t % rt) * kMC, j0 = (t / rt) * nc;
    matmul_tile(i0, i0 + kMC < m ? i0 + kMC : m, j0, j0 + nc < n ? j0 + nc : n, c, cm, cn, t1,
                t2, false);
  }
}

#if defined(__AVX512F__)
// One step of a transpose: a and b hold groups of G consecutive values; the result holds groups
// of 2G, a's group m then b's group m, for the first (kHi false) or second half of the groups.
template <int G, bool kHi>
inline vec merge_groups(vec a, vec b) {
  static constexpr std::array<int32_t, 16> idx = [] {
    std::array<int32_t, 16> r{};
    for (int e = 0; e < 16; ++e) {
      const int m = e / (2 * G) + (kHi ? 16 / (2 * G) : 0), q = e % (2 * G);
      r[static_cast<size_t>(e)] = q < G ? G * m + q : 16 + G * m + q - G;
    }
    return r;
  }();
  return _mm512_permutex2var_ps(a, _mm512_loadu_si512(idx.data()), b);
}

// dst[l * kMR + i] = r[i][l] for 8 rows of 16 values: three steps of merge_groups.
inline void store_transposed(const vec* r, float* dst) {
  vec u[8], v[8];
  for (int i = 0; i < 4; ++i) {  // rows 2i, 2i+1 paired: values 0-7, 8-15
    u[2 * i] = merge_groups<1, false>(r[2 * i], r[2 * i + 1]);
    u[2 * i + 1] = merge_groups<1, true>(r[2 * i], r[2 * i + 1]);
  }
  for (int h = 0; h < 2; ++h)  // rows 4h..4h+3: values 0-3, 4-7, 8-11, 12-15
    for (int c = 0; c < 2; ++c) {
      v[4 * h + 2 * c] = merge_groups<2, false>(u[4 * h + c], u[4 * h + 2 + c]);
      v[4 * h + 2 * c + 1] = merge_groups<2, true>(u[4 * h + c], u[4 * h + 2 + c]);
    }
  for (int c = 0; c < 4; ++c) {  // all 8 rows: values 4c, 4c+1 then 4c+2, 4c+3
    vstore(dst + 32 * c, merge_groups<4, false>(v[c], v[4 + c]));
    vstore(dst + 32 * c + 16, merge_groups<4, true>(v[c], v[4 + c]));
  }
}
#endif

// The term with its A (m rows) converted to f32 and packed in `buf` as the micro-kernel reads it
// (Term::packed: row blocks of kMR rows, [k][kMR] each, rows past m zero), once, so that no tile
// packs (converts) it again: a 16-row A was packed once per 256-column tile, 16 times in a
// 16 x 4096 x 4096 matmul (with it packed once, and kSave: 198-204 -> 221-235 GFLOP/s,
// bench/results/cpu.md).
template <class TA, class TB>
inline Term<float, TB> packed_a(const Term<TA, TB>& t, int64_t m, std::vector<float>& buf) {
  if (t.k == 0) return {nullptr, 0, 1, t.b, t.bk, t.bn, 0};
  const int64_t blocks = (m + kMR - 1) / kMR;
  buf.resize(static_cast<size_t>(blocks * kMR * t.k));
  for (int64_t rb = 0; rb < blocks; ++rb) {
    float* const dst = buf.data() + rb * kMR * t.k;
    int64_t p = 0;
#if defined(__AVX512F__)
    if (t.ak == 1)  // 16 values of each of the 8 rows, transposed in registers
      for (; p + kLanes <= t.k; p += kLanes) {
        vec r[kMR];
        for (int i = 0; i < kMR; ++i)
          r[i] = rb * kMR + i < m ? vload(t.a + (rb * kMR + i) * t.am + p) : vzero();
        store_transposed(r, dst + p * kMR);
      }
#endif
    for (int64_t i = 0; i < kMR; ++i) {
      const int64_t row = rb * kMR + i;
      for (int64_t q = p; q < t.k; ++q) dst[q * kMR + i] = row < m ? ld(t.a[row * t.am + q * t.ak]) : 0.f;
    }
  }
  return {buf.data(), kMR * t.k, 1, t.b, t.bk, t.bn, t.k, true};
}

// The same over all cores: tiles are independent, so they are shared out statically. When
// there are fewer tiles than threads (16 x 256 x 4096 is one tile), the columns are cut
// narrower, into whole micro-kernel widths, aiming at a tile per thread (rounding to the
// width may leave fewer: n = 100 on 3 threads gives 2 tiles). An A of few rows is converted and
// packed once, before the tiles (packed_a).
template <class TC, class TA, class TB, class TA2 = float, class TB2 = float>
inline void matmul_parallel(int64_t m, int64_t n, TC* c, int64_t cm, int64_t cn,
                            const Term<TA, TB>& t1, const Term<TA2, TB2>& t2 = {}) {
  if (m <= 0 || n <= 0) return;
  if (m <= kDirectRowBlocks * kMR) {  // (16 x 4096 x 4096 f16: 1.43 -> 1.31 ms; 16 x 4096 x 272: 88 -> 84 us)
    static thread_local std::vector<float> a1, a2;  // the calling thread's; the team only reads them
    matmul_parallel_tiles(m, n, c, cm, cn, packed_a(t1, m, a1), packed_a(t2, m, a2));
    return;
  }
  matmul_parallel_tiles(m, n, c, cm, cn, t1, t2);
}

// Prefetches a tile of device memory: n0 x n1 runs of `run` contiguous elements, run (i0, i1)
// at p + i0 * s0 + i1 * s1 (a block's next for-loop tile; codegen/cpu emits the call).
template <class T>
inline void prefetch_tile(const T* p, int64_t n0, int64_t s0, int64_t n1, int64_t s1, int64_t run) {
  const int64_t bytes = run * static_cast<int64_t>(sizeof(T));
  for (int64_t i0 = 0; i0 < n0; ++i0)
    for (int64_t i1 = 0; i1 < n1; ++i1)
      for (int64_t off = 0; off < bytes; off += 64)
        prefetch_at(p, (i0 * s0 + i1 * s1) * static_cast<int64_t>(sizeof(T)) + off);
}

// ---- block scheduling ----------------------------------------------------------------------
// How many adjacent blocks of a graph-defined kernel a thread runs side by side, one for-loop
// iteration of each in turn: up to 8, while every thread still gets a group and the group's
// block buffers (`floats` each) stay within 256 KiB; 1 when there is no loop to interleave.
inline int64_t block_group(int64_t blocks, int64_t floats, int64_t forloop) {
#ifdef _OPENMP
  const int64_t threads = omp_get_max_threads();
#else
  const int64_t threads = 1;
#endif
  if (forloop <= 1) return 1;
  int64_t g = blocks / (threads > 0 ? threads : 1);
  if (g > 8) g = 8;
  const int64_t fit = (int64_t{256} << 10) / 4 / (floats > 0 ? floats : 1);
  if (g > fit) g = fit;
  return g > 1 ? g : 1;
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
