// mugraph device library, layer 1 (plain C++, no CUDA types): which WMMA fragment shape a tile
// matmul uses and where each fragment lies, shared by mg_tile.cuh (device) and host tests that
// check every pointer it leads to. WMMA's load_matrix_sync / store_matrix_sync need a 256-bit
// (32-byte) aligned pointer and a leading dim that is a multiple of 16 bytes (CUDA C
// Programming Guide, "Warp Matrix Functions"); a misaligned pointer is undefined behaviour that
// no compile catches.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define MG_HOST_DEVICE __host__ __device__
#else
#define MG_HOST_DEVICE
#endif

namespace mg {

// How a matrix lies in memory: element (i, j) at p[i * s0 + j * s1], with leading dim `ld`.
enum Major : int { kNeitherMajor = 0, kRowMajor = 1, kColMajor = 2 };
struct Layout {
  int major = kNeitherMajor;
  int ld = 0;
};

// Row-major (s1 == 1) or column-major (s0 == 1) with a leading dim of whole 16 bytes (what
// WMMA's ldm needs: a multiple of 8 elements of a 16-bit type, 4 of f32).
MG_HOST_DEVICE constexpr Layout layout_of(int s0, int s1, int elem_bytes = 2) {
  const int chunk = 16 / elem_bytes;
  if (s1 == 1 && s0 % chunk == 0) return {kRowMajor, s0};
  if (s0 == 1 && s1 % chunk == 0) return {kColMajor, s1};
  return {};
}

// Offset (elements) of element (row, col) in layout `l`: where a fragment starting there loads.
MG_HOST_DEVICE constexpr long long fragment_offset(Layout l, int row, int col) {
  return l.major == kRowMajor ? static_cast<long long>(row) * l.ld + col
                              : row + static_cast<long long>(col) * l.ld;
}

// The fragment shape of a tile matmul C[m, n] (+)= A[m, k] B[k, n]: fm x fn x 16, or fm == 0
// for SIMT.
struct WmmaPlan {
  int fm = 0, fn = 0;
  Layout a, b, c;
};

// True if every fragment of a `rows` x `cols` matrix at byte address `base`, cut into tiles of
// `fr` x `fc` elements of `bytes` each, starts 32-byte aligned. Offsets are linear in the tile
// indices, so checking the base and one step per dim that has more than one tile is exact.
MG_HOST_DEVICE constexpr bool fragments_aligned(unsigned long long base, Layout l, int rows,
                                                int cols, int fr, int fc, int bytes) {
  if (base % 32 != 0) return false;
  if (rows > fr && fragment_offset(l, fr, 0) * bytes % 32 != 0) return false;
  if (cols > fc && fragment_offset(l, 0, fc) * bytes % 32 != 0) return false;
  return true;
}

// Tensor cores when A and B are 16-bit (`tc_types`), k is a multiple of 16, every operand is
// row- or column-major, and one of the shapes WMMA has for 16-bit inputs (16x16, 8x32, 32x8,
// tried in that order) tiles m x n with every fragment pointer of A, B and C (`c_bytes` per
// element: 4 for f32, 2 for an f16 C) 32-byte aligned. With an odd number of 8-row (8-column)
// tiles, an 8x32 (32x8) fragment of a
// column-major A (row-major B) would start 16 bytes off: those fall back to SIMT.
MG_HOST_DEVICE constexpr WmmaPlan plan_wmma(bool tc_types, int m, int n, int k, int a_s0,
                                            int a_s1, int b_s0, int b_s1, int c_s0, int c_s1,
                                            unsigned long long a, unsigned long long b,
                                            unsigned long long c, int c_bytes = 4) {
  WmmaPlan p;
  p.a = layout_of(a_s0, a_s1);
  p.b = layout_of(b_s0, b_s1);
  p.c = layout_of(c_s0, c_s1, c_bytes);
  if (!tc_types || k % 16 != 0 || p.a.major == kNeitherMajor || p.b.major == kNeitherMajor ||
      p.c.major == kNeitherMajor)
    return p;
  constexpr int kShapes[3][2] = {{16, 16}, {8, 32}, {32, 8}};
  for (const auto& s : kShapes) {
    const int fm = s[0], fn = s[1];
    if (m % fm != 0 || n % fn != 0) continue;
    if (fragments_aligned(a, p.a, m, k, fm, 16, 2) && fragments_aligned(b, p.b, k, n, 16, fn, 2) &&
        fragments_aligned(c, p.c, m, n, fm, fn, c_bytes)) {
      p.fm = fm;
      p.fn = fn;
      return p;
    }
  }
  return p;
}

// The register-blocking group of a WMMA tile matmul: RM x RN fragments per warp, the largest
// of 2x4, 2x2, 1x2 and 1x1 that tiles the fragment grid (tm x tn fragments) and still gives
// every warp a group (fewer groups than warps would leave warps idle).
struct WmmaGroup {
  int rm = 1, rn = 1;
};
MG_HOST_DEVICE constexpr WmmaGroup wmma_group(int tm, int tn, int warps) {
  constexpr int kGroups[3][2] = {{2, 4}, {2, 2}, {1, 2}};
  for (const auto& g : kGroups)
    if (tm % g[0] == 0 && tn % g[1] == 0 && (tm / g[0]) * (tn / g[1]) >= warps) return {g[0], g[1]};
  return {};
}

}  // namespace mg
