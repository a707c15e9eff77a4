// mugraph device library, layer 2: tile algorithms over shared memory, run by a whole thread
// block (every thread must call them: they are collective, but contain no barrier unless said).
//   copy_rows_async   global -> shared tile copy in 16-byte cp.async chunks
//   store_rows        shared -> global tile store in 16-byte chunks, converting
//   matmul_tile       C (+)= A x B on shared-memory tiles: tensor cores (WMMA, f32 accumulation)
//                     for f16/bf16 operands where mg_fragment.cuh plans aligned fragments, else
//                     f32 SIMT
//   RegisterAccumulator  a loop's matmul accumulator kept in WMMA fragments across iterations
#pragma once

#include <mma.h>

#include <type_traits>

#include "mg_arch.cuh"
#include "mg_fragment.cuh"

namespace mg {

// Copies `rows` rows of `row_elems` elements (row_elems * sizeof(T) a multiple of 16) from
// global memory to shared memory; row r starts at src + src_row(r) and dst + dst_row(r), both
// 16-byte aligned. Issues cp.async chunks; the caller commits and waits.
template <class T, class SrcRow, class DstRow>
__device__ __forceinline__ void copy_rows_async(T* dst, const T* src, int rows, int row_elems,
                                                SrcRow src_row, DstRow dst_row) {
  constexpr int kVec = 16 / static_cast<int>(sizeof(T));
  const int chunks = row_elems / kVec;
  for (int c = static_cast<int>(threadIdx.x); c < rows * chunks; c += static_cast<int>(blockDim.x)) {
    const int r = c / chunks, k = (c - r * chunks) * kVec;
    cp_async16(dst + dst_row(r) + k, src + src_row(r) + k);
  }
}

// Stores `rows` rows of `row_elems` elements from shared memory to global memory, converted to
// the global type TD, 16 bytes (16 / sizeof(TD) elements) per store instruction: row r starts at
// dst + dst_row(r) (16-byte aligned; row_elems * sizeof(TD) a multiple of 16) and
// src + src_row(r). A warp writes whole 16-byte chunks of consecutive memory (the output
// savers' coalesced, vectorized global stores).
template <class TD, class TS, class DstRow, class SrcRow>
__device__ __forceinline__ void store_rows(TD* dst, const TS* src, int rows, int row_elems,
                                           DstRow dst_row, SrcRow src_row) {
  constexpr int kVec = 16 / static_cast<int>(sizeof(TD));
  const int chunks = row_elems / kVec;
  for (int c = static_cast<int>(threadIdx.x); c < rows * chunks; c += static_cast<int>(blockDim.x)) {
    const int r = c / chunks, k = (c - r * chunks) * kVec;
    const TS* const s = src + src_row(r) + k;
    // f32 source rows read 16 bytes at a time where aligned: a thread's kVec consecutive floats
    // read one by one would put 8 threads of a warp in the same bank (32 bytes apart x 8).
    float v[kVec];
    if constexpr (std::is_same<TS, float>::value && kVec % 4 == 0) {
      if (reinterpret_cast<uintptr_t>(s) % 16 == 0) {
#pragma unroll
        for (int e = 0; e < kVec; e += 4) {
          const float4 q = *reinterpret_cast<const float4*>(s + e);
          v[e] = q.x;
          v[e + 1] = q.y;
          v[e + 2] = q.z;
          v[e + 3] = q.w;
        }
      } else {
#pragma unroll
        for (int e = 0; e < kVec; ++e) v[e] = s[e];
      }
    } else {
#pragma unroll
      for (int e = 0; e < kVec; ++e) v[e] = ld(s[e]);
    }
    // Packed into four 32-bit words in registers and stored with __stwb (with a plain int4
    // store through this address arithmetic, nvcc 13 emitted four st.global.u32 instead of one
    // st.global.v4: seen in the PTX of the golden RMSNorm+MatMul kernel).
    unsigned w[4] = {0, 0, 0, 0};
#pragma unroll
    for (int e = 0; e < kVec; ++e)
      w[e / (kVec / 4)] |= bits(st<TD>(v[e])) << ((e % (kVec / 4)) * (128 / kVec));
    __stwb(reinterpret_cast<int4*>(dst + dst_row(r) + k),
           make_int4(static_cast<int>(w[0]), static_cast<int>(w[1]), static_cast<int>(w[2]),
                     static_cast<int>(w[3])));
  }
}

// An operand of a tile matmul: element (i, j) at p[i * s0 + j * s1].
template <class T>
struct Mat {
  T* p;
  int s0, s1;
};

// C[m, n] = A[m, k] x B[k, n] (or += with `accumulate`), f32 accumulation, C in f32 or (a
// block tensor stored in its declared 16-bit type) f16/bf16, rounded once at the end.
// SIMT form: each thread owns output elements tid, tid + blockDim, ...
template <class TA, class TB, class TC>
__device__ __forceinline__ void matmul_simt(int m, int n, int k, Mat<const TA> a, Mat<const TB> b,
                                            Mat<TC> c, bool accumulate) {
  for (int e = static_cast<int>(threadIdx.x); e < m * n; e += static_cast<int>(blockDim.x)) {
    const int i = e / n, j = e - i * n;
    float acc = accumulate ? ld(c.p[i * c.s0 + j * c.s1]) : 0.f;
    for (int q = 0; q < k; ++q) acc += ld(a.p[i * a.s0 + q * a.s1]) * ld(b.p[q * b.s0 + j * b.s1]);
    c.p[i * c.s0 + j * c.s1] = st<TC>(acc);
  }
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
// The k loop of one register-blocked group: acc[r][s] += A[i0 + r FM.., :k] x B[:k, j0 + s FN..]
// (the FM x FN output fragment (r, s) of the group at (i0, j0)). For every k step the warp loads
// RM fragments of A and RN of B and issues RM * RN mma. Unrolled twice: a group's RM * RN
// independent mma already fill the pipe, and a full unroll of a long k multiplies nvcc's time
// (each variant of every call site).
template <int FM, int FN, int RM, int RN, class T, class LA, class LB>
__device__ __forceinline__ void wmma_group_products(
    int k, const T* a, const T* b, const WmmaPlan& p, int i0, int j0,
    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, FM, FN, 16, float> (&acc)[RM][RN]) {
  using namespace nvcuda;
#pragma unroll 2
  for (int q = 0; q < k; q += 16) {
    wmma::fragment<wmma::matrix_a, FM, FN, 16, T, LA> fa[RM];
    wmma::fragment<wmma::matrix_b, FM, FN, 16, T, LB> fb[RN];
#pragma unroll
    for (int r = 0; r < RM; ++r)
      wmma::load_matrix_sync(fa[r], a + fragment_offset(p.a, i0 + r * FM, q),
                             static_cast<unsigned>(p.a.ld));
#pragma unroll
    for (int s = 0; s < RN; ++s)
      wmma::load_matrix_sync(fb[s], b + fragment_offset(p.b, q, j0 + s * FN),
                             static_cast<unsigned>(p.b.ld));
#pragma unroll
    for (int r = 0; r < RM; ++r)
#pragma unroll
      for (int s = 0; s < RN; ++s) wmma::mma_sync(acc[r][s], fa[r], fb[s], acc[r][s]);
  }
}

// Tensor-core form: each warp owns groups of RM x RN output fragments (FM x FN each), groups
// warp, warp + warps, ...; for every k step it loads RM fragments of A and RN of B from shared
// memory and issues RM * RN mma (register blocking, wmma_group_products: 2x2 groups load one
// fragment per mma, not two). LA/LB are A's and B's WMMA layouts (p.a / p.b), C's is
// p.c. Every fragment starts at mg::fragment_offset, the function mg::plan_wmma checked for
// 32-byte alignment (mg_fragment.cuh). Each output element still sums its k products in k
// order, whatever the group. An f16 C (TC = f16, never accumulated into) takes the f32
// accumulator rounded element by element into an f16 accumulator fragment of the same shape.
template <int FM, int FN, int RM, int RN, class T, class LA, class LB, class TC>
__device__ __forceinline__ void matmul_wmma(int m, int n, int k, const T* a, const T* b, TC* c,
                                            const WmmaPlan& p, bool accumulate) {
  using namespace nvcuda;
  const int warp = static_cast<int>(threadIdx.x) / 32, warps = static_cast<int>(blockDim.x) / 32;
  const int gn = n / (FN * RN), groups = (m / (FM * RM)) * gn;
  const wmma::layout_t lc = p.c.major == kRowMajor ? wmma::mem_row_major : wmma::mem_col_major;
  for (int g = warp; g < groups; g += warps) {
    const int i0 = (g / gn) * (FM * RM), j0 = (g % gn) * (FN * RN);
    wmma::fragment<wmma::accumulator, FM, FN, 16, float> acc[RM][RN];
#pragma unroll
    for (int r = 0; r < RM; ++r)
#pragma unroll
      for (int s = 0; s < RN; ++s) {
        if constexpr (std::is_same<TC, float>::value) {
          if (accumulate) {
            wmma::load_matrix_sync(acc[r][s], c + fragment_offset(p.c, i0 + r * FM, j0 + s * FN),
                                   static_cast<unsigned>(p.c.ld), lc);
            continue;
          }
        }
        wmma::fill_fragment(acc[r][s], 0.f);
      }
    wmma_group_products<FM, FN, RM, RN, T, LA, LB>(k, a, b, p, i0, j0, acc);
#pragma unroll
    for (int r = 0; r < RM; ++r)
#pragma unroll
      for (int s = 0; s < RN; ++s) {
        TC* const ct = c + fragment_offset(p.c, i0 + r * FM, j0 + s * FN);
        if constexpr (std::is_same<TC, float>::value) {
          wmma::store_matrix_sync(ct, acc[r][s], static_cast<unsigned>(p.c.ld), lc);
        } else {
          wmma::fragment<wmma::accumulator, FM, FN, 16, TC> out;
          // Element e of both accumulators is the same (row, col): they share the accumulator
          // register layout on sm_80/sm_90 (the mapping is not specified by the CUDA guide; the
          // GPU tests and tune's check of every timed kernel against the program hold it).
          static_assert(decltype(out)::num_elements == std::remove_reference_t<decltype(acc[0][0])>::num_elements,
                        "f32 and f16 accumulator fragments of one shape hold the same elements");
          for (int e = 0; e < out.num_elements; ++e) out.x[e] = st<TC>(acc[r][s].x[e]);
          wmma::store_matrix_sync(ct, out, static_cast<unsigned>(p.c.ld), lc);
        }
      }
  }
}

// kThreads: the block's threads when the generator knows them (0: blockDim.x), so that the group
// folds to a constant once the call's literal m and n are inlined and only its variant is
// optimized. 16x16 fragments only: the 8x32 and 32x8 shapes are fallbacks for alignment
// (mg::plan_wmma) and take 1x1 groups.
template <int FM, int FN, int kThreads, class T, class LA, class LB, class TC>
__device__ __forceinline__ void matmul_wmma_grouped(int m, int n, int k, const T* a, const T* b,
                                                    TC* c, const WmmaPlan& p, bool accumulate) {
  if constexpr (FM != 16 || FN != 16) {
    matmul_wmma<FM, FN, 1, 1, T, LA, LB, TC>(m, n, k, a, b, c, p, accumulate);
  } else {
    // m and n are literals of the generated call: with kThreads, g folds to one variant.
    const int warps = (kThreads > 0 ? kThreads : static_cast<int>(blockDim.x)) / 32;
    const WmmaGroup g = wmma_group(m / FM, n / FN, warps);
    if (g.rm == 2 && g.rn == 4)
      matmul_wmma<FM, FN, 2, 4, T, LA, LB, TC>(m, n, k, a, b, c, p, accumulate);
    else if (g.rm == 2)
      matmul_wmma<FM, FN, 2, 2, T, LA, LB, TC>(m, n, k, a, b, c, p, accumulate);
    else if (g.rn == 2)
      matmul_wmma<FM, FN, 1, 2, T, LA, LB, TC>(m, n, k, a, b, c, p, accumulate);
    else
      matmul_wmma<FM, FN, 1, 1, T, LA, LB, TC>(m, n, k, a, b, c, p, accumulate);
  }
}

template <int FM, int FN, int kThreads, class T, class TC>
__device__ __forceinline__ void matmul_wmma_any(int m, int n, int k, const T* a, const T* b,
                                                TC* c, const WmmaPlan& p, bool accumulate) {
  using nvcuda::wmma::col_major;
  using nvcuda::wmma::row_major;
  const bool ar = p.a.major == kRowMajor, br = p.b.major == kRowMajor;
  if (ar && br)
    matmul_wmma_grouped<FM, FN, kThreads, T, row_major, row_major, TC>(m, n, k, a, b, c, p, accumulate);
  else if (ar)
    matmul_wmma_grouped<FM, FN, kThreads, T, row_major, col_major, TC>(m, n, k, a, b, c, p, accumulate);
  else if (br)
    matmul_wmma_grouped<FM, FN, kThreads, T, col_major, row_major, TC>(m, n, k, a, b, c, p, accumulate);
  else
    matmul_wmma_grouped<FM, FN, kThreads, T, col_major, col_major, TC>(m, n, k, a, b, c, p, accumulate);
}
#endif

// Which form a tile matmul takes: tensor cores where mg::plan_wmma (mg_fragment.cuh) finds a
// fragment shape with every fragment pointer 32-byte aligned (f16 or bf16 operands of one type,
// row- or column-major, k a multiple of 16) and the architecture has them; SIMT otherwise. The
// choice depends only on the arguments, so every thread of the block takes the same branch.
// C is f32, or f16 (a block tensor stored in its declared type, written once: tensor cores
// round the f32 accumulator into it; no `accumulate`).
template <int kThreads = 0, class TA, class TB, class TC>
__device__ __forceinline__ void matmul_tile(int m, int n, int k, Mat<const TA> a, Mat<const TB> b,
                                            Mat<TC> c, bool accumulate) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  // WMMA has f32 and f16 accumulator fragments only: a bf16 C takes the SIMT form.
  constexpr bool tc_types = std::is_same<TA, TB>::value &&
                            (std::is_same<TA, f16>::value || std::is_same<TA, bf16>::value) &&
                            (std::is_same<TC, float>::value || std::is_same<TC, f16>::value);
  // An f16 C accumulated into takes the SIMT form (it is never emitted so).
  if constexpr (tc_types) {
    if (std::is_same<TC, float>::value || !accumulate) {
      const WmmaPlan p = plan_wmma(true, m, n, k, a.s0, a.s1, b.s0, b.s1, c.s0, c.s1,
                                   reinterpret_cast<uintptr_t>(a.p), reinterpret_cast<uintptr_t>(b.p),
                                   reinterpret_cast<uintptr_t>(c.p), static_cast<int>(sizeof(TC)));
      if (p.fm == 16) {
        matmul_wmma_any<16, 16, kThreads, TA>(m, n, k, a.p, b.p, c.p, p, accumulate);
        return;
      }
      if (p.fm == 8) {
        matmul_wmma_any<8, 32, kThreads, TA>(m, n, k, a.p, b.p, c.p, p, accumulate);
        return;
      }
      if (p.fm == 32) {
        matmul_wmma_any<32, 8, kThreads, TA>(m, n, k, a.p, b.p, c.p, p, accumulate);
        return;
      }
    }
  }
#endif
  matmul_simt<TA, TB, TC>(m, n, k, a, b, c, accumulate);
}

// A matmul's f32 accumulator kept in registers across the for-loop (issue 20 item 5): the
// generator declares one before the loop for a matmul that accumulates into a loop
// accumulator (C = sum over iterations of A_it x B_it), calls add() in every iteration and
// store() once after the loop, followed by a barrier. Each warp keeps its register-blocked
// groups (mg::wmma_group at kThreads) as WMMA accumulator fragments, so an iteration loads
// only A and B fragments: no load and store of C per k-tile. Used when the tile is made of
// 16x16 fragments, the warp's share is at most 8 of them (64 registers a thread), the operands
// take tensor cores (f16 or bf16, one type) and mg::plan_wmma finds 16x16 fragments; otherwise
// add() is mg::matmul_tile on C in shared memory, as without it (where mg::plan_wmma finds no
// 16x16 fragments for a tile that fits, SIMT on C). A plan that stops fitting in a later
// iteration (it depends only on the arguments, the same for every thread) first writes the
// fragments to C (a spill, then a barrier) and goes on in shared memory. The sums
// are the same as matmul_tile's: each output element adds its k products in k order, starting
// from 0 in the first iteration.
template <int M, int N, int kThreads>
struct RegisterAccumulator {
  static_assert(kThreads >= 32 && kThreads % 32 == 0, "whole warps");
  static constexpr int kWarps = kThreads / 32;
  static constexpr WmmaGroup kGroup = wmma_group(M / 16, N / 16, kWarps);
  static constexpr int kRM = kGroup.rm, kRN = kGroup.rn;
  static constexpr int kGroups =
      M % 16 == 0 && N % 16 == 0 && M > 0 && N > 0 ? (M / (16 * kRM)) * (N / (16 * kRN)) : 0;
  static constexpr int kPerWarp = kWarps > 0 ? (kGroups + kWarps - 1) / kWarps : 0;
  static constexpr bool kInRegisters = kGroups > 0 && kPerWarp * kRM * kRN <= 8;

  template <class TA, class TB>
  __device__ __forceinline__ void add(int k, Mat<const TA> a, Mat<const TB> b, Mat<float> c,
                                      bool accumulate) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    constexpr bool tc_types = std::is_same<TA, TB>::value &&
                              (std::is_same<TA, f16>::value || std::is_same<TA, bf16>::value);
    if constexpr (tc_types && kInRegisters) {
      const WmmaPlan p = plan_wmma(true, M, N, k, a.s0, a.s1, b.s0, b.s1, c.s0, c.s1,
                                   reinterpret_cast<uintptr_t>(a.p), reinterpret_cast<uintptr_t>(b.p),
                                   reinterpret_cast<uintptr_t>(c.p), static_cast<int>(sizeof(float)));
      if (p.fm == 16 && (live_ || !accumulate)) {
        if (!accumulate) {
          for_each([&](auto& f, int, int) { nvcuda::wmma::fill_fragment(f, 0.f); });
          plan_ = p;
          live_ = true;
        }
        using nvcuda::wmma::col_major;
        using nvcuda::wmma::row_major;
        const bool ar = p.a.major == kRowMajor, br = p.b.major == kRowMajor;
        if (ar && br)
          products<TA, row_major, row_major>(k, a.p, b.p, p);
        else if (ar)
          products<TA, row_major, col_major>(k, a.p, b.p, p);
        else if (br)
          products<TA, col_major, row_major>(k, a.p, b.p, p);
        else
          products<TA, col_major, col_major>(k, a.p, b.p, p);
        return;
      }
      if (live_) {  // the spill: C in shared memory from here on
        store(c);
        __syncthreads();
      }
      // SIMT, not matmul_tile's other fragment shapes: this path is for misaligned operands
      // only, and a second set of WMMA variants per call site doubled nvcc's time.
      matmul_simt<TA, TB, float>(M, N, k, a, b, c, accumulate);
      return;
    }
#endif
    matmul_tile<kThreads>(M, N, k, a, b, c, accumulate);
  }

  // Writes the fragments to C (when they hold the sum); the caller's barrier makes C visible.
  __device__ __forceinline__ void store(Mat<float> c) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if constexpr (kInRegisters) {
      if (!live_) return;
      live_ = false;
      const nvcuda::wmma::layout_t lc =
          plan_.c.major == kRowMajor ? nvcuda::wmma::mem_row_major : nvcuda::wmma::mem_col_major;
      for_each([&](auto& f, int i, int j) {
        nvcuda::wmma::store_matrix_sync(c.p + fragment_offset(plan_.c, i, j), f,
                                        static_cast<unsigned>(plan_.c.ld), lc);
      });
    }
#endif
    (void)c;
  }

 private:
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using Fragment = nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float>;
  static constexpr int kGn = N / (16 * kRN) > 0 ? N / (16 * kRN) : 1;

  // f(fragment, row, col) for each fragment of this warp's groups (warp, warp + kWarps, ...).
  template <class F>
  __device__ __forceinline__ void for_each(F f) {
    const int warp = static_cast<int>(threadIdx.x) / 32;
#pragma unroll
    for (int w = 0; w < kPerWarp; ++w) {
      const int g = warp + w * kWarps;
      if (g >= kGroups) continue;
#pragma unroll
      for (int r = 0; r < kRM; ++r)
#pragma unroll
        for (int s = 0; s < kRN; ++s)
          f(acc_[w][r][s], (g / kGn) * (16 * kRM) + r * 16, (g % kGn) * (16 * kRN) + s * 16);
    }
  }

  template <class T, class LA, class LB>
  __device__ __forceinline__ void products(int k, const T* a, const T* b, const WmmaPlan& p) {
    const int warp = static_cast<int>(threadIdx.x) / 32;
#pragma unroll
    for (int w = 0; w < kPerWarp; ++w) {
      const int g = warp + w * kWarps;
      if (g >= kGroups) continue;
      wmma_group_products<16, 16, kRM, kRN, T, LA, LB>(k, a, b, p, (g / kGn) * (16 * kRM),
                                                         (g % kGn) * (16 * kRN), acc_[w]);
    }
  }

  Fragment acc_[kInRegisters ? kPerWarp : 1][kRM][kRN];
  WmmaPlan plan_{};
#endif
  bool live_ = false;  // the fragments hold the sum (else C in shared memory does)
};

}  // namespace mg
