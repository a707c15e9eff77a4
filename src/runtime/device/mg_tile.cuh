// mugraph device library, layer 2: tile algorithms over shared memory, run by a whole thread
// block (every thread must call them: they are collective, but contain no barrier unless said).
//   copy_rows_async   global -> shared tile copy in 16-byte cp.async chunks
//   matmul_tile       C (+)= A x B on shared-memory tiles: tensor cores (WMMA, f32 accumulation)
//                     for f16/bf16 operands with fragment-multiple sizes, else f32 SIMT
#pragma once

#include <mma.h>

#include <type_traits>

#include "mg_arch.cuh"

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

// An operand of a tile matmul: element (i, j) at p[i * s0 + j * s1].
template <class T>
struct Mat {
  T* p;
  int s0, s1;
};

// C[m, n] = A[m, k] x B[k, n] (or += with `accumulate`), f32 accumulation, C in f32.
// SIMT form: each thread owns output elements tid, tid + blockDim, ...
template <class TA, class TB>
__device__ __forceinline__ void matmul_simt(int m, int n, int k, Mat<const TA> a, Mat<const TB> b,
                                            Mat<float> c, bool accumulate) {
  for (int e = static_cast<int>(threadIdx.x); e < m * n; e += static_cast<int>(blockDim.x)) {
    const int i = e / n, j = e - i * n;
    float acc = accumulate ? c.p[i * c.s0 + j * c.s1] : 0.f;
    for (int q = 0; q < k; ++q) acc += ld(a.p[i * a.s0 + q * a.s1]) * ld(b.p[q * b.s0 + j * b.s1]);
    c.p[i * c.s0 + j * c.s1] = acc;
  }
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
// Tensor-core form: each warp owns FMxFN output tiles warp, warp + warps, ...; LA/LB say whether
// A and B are row-major (s1 == 1) or column-major (s0 == 1) with leading dims lda/ldb, and
// c_row_major the same of C. The fragment shape (FM, FN, 16) is one WMMA supports for 16-bit
// inputs: 16x16, 8x32 or 32x8.
template <int FM, int FN, class T, class LA, class LB>
__device__ __forceinline__ void matmul_wmma(int m, int n, int k, const T* a, int lda, const T* b,
                                            int ldb, float* c, int ldc, bool c_row_major,
                                            bool accumulate) {
  using namespace nvcuda;
  constexpr bool a_row = std::is_same<LA, wmma::row_major>::value;
  constexpr bool b_row = std::is_same<LB, wmma::row_major>::value;
  const int warp = static_cast<int>(threadIdx.x) / 32, warps = static_cast<int>(blockDim.x) / 32;
  const int tn = n / FN, tiles = (m / FM) * tn;
  const wmma::layout_t lc = c_row_major ? wmma::mem_row_major : wmma::mem_col_major;
  for (int t = warp; t < tiles; t += warps) {
    const int i = (t / tn) * FM, j = (t % tn) * FN;
    float* const ct = c + (c_row_major ? i * ldc + j : i + j * ldc);
    wmma::fragment<wmma::accumulator, FM, FN, 16, float> acc;
    if (accumulate)
      wmma::load_matrix_sync(acc, ct, static_cast<unsigned>(ldc), lc);
    else
      wmma::fill_fragment(acc, 0.f);
    for (int q = 0; q < k; q += 16) {
      wmma::fragment<wmma::matrix_a, FM, FN, 16, T, LA> fa;
      wmma::fragment<wmma::matrix_b, FM, FN, 16, T, LB> fb;
      wmma::load_matrix_sync(fa, a + (a_row ? i * lda + q : i + q * lda), static_cast<unsigned>(lda));
      wmma::load_matrix_sync(fb, b + (b_row ? q * ldb + j : q + j * ldb), static_cast<unsigned>(ldb));
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(ct, acc, static_cast<unsigned>(ldc), lc);
  }
}

template <int FM, int FN, class T>
__device__ __forceinline__ void matmul_wmma_any(int m, int n, int k, int ma, int mb, const T* a,
                                                int lda, const T* b, int ldb, float* c, int ldc,
                                                bool cr, bool accumulate) {
  using nvcuda::wmma::col_major;
  using nvcuda::wmma::row_major;
  if (ma == 1 && mb == 1)
    matmul_wmma<FM, FN, T, row_major, row_major>(m, n, k, a, lda, b, ldb, c, ldc, cr, accumulate);
  else if (ma == 1)
    matmul_wmma<FM, FN, T, row_major, col_major>(m, n, k, a, lda, b, ldb, c, ldc, cr, accumulate);
  else if (mb == 1)
    matmul_wmma<FM, FN, T, col_major, row_major>(m, n, k, a, lda, b, ldb, c, ldc, cr, accumulate);
  else
    matmul_wmma<FM, FN, T, col_major, col_major>(m, n, k, a, lda, b, ldb, c, ldc, cr, accumulate);
}
#endif

// Which form a tile matmul takes: tensor cores when both operands are f16 (or both bf16), k is
// a multiple of 16, m x n tiles into 16x16, 8x32 or 32x8 fragments, every operand is row- or
// column-major with a leading dim that is a multiple of 8 (16 bytes), and the architecture has
// them; SIMT otherwise. The choice depends
// only on the arguments, so every thread of the block takes the same branch.
template <class TA, class TB>
__device__ __forceinline__ void matmul_tile(int m, int n, int k, Mat<const TA> a, Mat<const TB> b,
                                            Mat<float> c, bool accumulate) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same<TA, TB>::value &&
                (std::is_same<TA, f16>::value || std::is_same<TA, bf16>::value)) {
    using namespace nvcuda;
    auto major = [](int s0, int s1, int& ld) {  // 1 row, 2 column, 0 neither
      if (s1 == 1 && s0 % 8 == 0) { ld = s0; return 1; }
      if (s0 == 1 && s1 % 8 == 0) { ld = s1; return 2; }
      return 0;
    };
    int lda = 0, ldb = 0, ldc = 0;
    const int ma = major(a.s0, a.s1, lda), mb = major(b.s0, b.s1, ldb), mc = major(c.s0, c.s1, ldc);
    if (k % 16 == 0 && ma != 0 && mb != 0 && mc != 0) {
      const bool cr = mc == 1;
      if (m % 16 == 0 && n % 16 == 0) {
        matmul_wmma_any<16, 16, TA>(m, n, k, ma, mb, a.p, lda, b.p, ldb, c.p, ldc, cr, accumulate);
        return;
      }
      if (m % 8 == 0 && n % 32 == 0) {
        matmul_wmma_any<8, 32, TA>(m, n, k, ma, mb, a.p, lda, b.p, ldb, c.p, ldc, cr, accumulate);
        return;
      }
      if (m % 32 == 0 && n % 8 == 0) {
        matmul_wmma_any<32, 8, TA>(m, n, k, ma, mb, a.p, lda, b.p, ldb, c.p, ldc, cr, accumulate);
        return;
      }
    }
  }
#endif
  matmul_simt<TA, TB>(m, n, k, a, b, c, accumulate);
}

}  // namespace mg
