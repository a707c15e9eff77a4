// The CUDA subset that generated kernels (codegen/cuda) and the device library (runtime/device)
// use, implemented on the CPU: the prelude force-included (g++ -include cuda_host.h) into the
// *unchanged* generated .cu text, so that the host compiler builds what nvcc gets. The one
// textual change the harness makes is the launch syntax (k<<<grid, block, smem, stream>>>(args)
// becomes ::mg_host::launch_config(k, "k", grid, block, smem, stream)(args)): C++ has no
// spelling for it. Semantics, as the CUDA programming guide states them:
//   threads        every CUDA thread of a block is a fiber (runtime/host_cuda/cuda_host_runtime.h);
//                  blocks run one after another; threadIdx/blockIdx/blockDim/gridDim per fiber
//   __syncthreads  a real barrier over the block's fibers; one not reached by every thread, or
//                  reached at different call sites, is reported (and the run stops)
//   warps          32 consecutive threads; __shfl_xor_sync and the WMMA calls are warp-collective
//                  (all 32 lanes meet before any proceeds: warp lockstep)
//   shared memory  one dynamic `extern __shared__` buffer per block, poisoned, bounds-checked
//   cp.async       mg::cp_async16 queues a 16-byte copy in the thread's open group; commit closes
//                  the group; wait<N> lands every group but the newest N (the copy happens then)
//   WMMA           nvcuda::wmma fragments of the documented shapes (16x16x16, 8x32x16, 32x8x16,
//                  f16/bf16 in, f32 accumulate); load/store need 256-bit aligned pointers and ldm a
//                  multiple of 16 bytes, else a finding
//   cuBLAS         cublasGemmStridedBatchedEx through a reference GEMM (f32 accumulation)
// Every shared and global access of the generated code is checked: the kernel TU is compiled
// with -fsanitize=thread, whose instrumentation calls __tsan_read*/__tsan_write* before each
// load and store; cuda_host_runtime.h defines those hooks (no TSan runtime is linked) and keeps
// the shadow state of the race and barrier checker.
#pragma once

#include <math.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

// Runtime functions are never instrumented themselves.
#define MG_HOST_NOINSTR __attribute__((no_sanitize_thread))

// ---- keywords and qualifiers ----------------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct int4 {
  int x, y, z, w;
};
inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
struct float4 {
  float x, y, z, w;
};

namespace mg_host {

// The coordinates of the running CUDA thread (set by the scheduler at every switch).
struct Coords {
  dim3 thread, block, block_dim, grid_dim;
};
inline Coords* g_coords = nullptr;

// Implemented in cuda_host_runtime.h.
void syncthreads(void* site);
void warp_sync();
float shfl_xor(float v, int lane_mask, unsigned mask);
void cp_async(void* dst, const void* src, int bytes);
void cp_async_commit();
void cp_async_wait(int n);
// An access performed on behalf of the running thread by a collective emulation (WMMA).
void check_access(const void* p, size_t bytes, bool write);
// A finding that is not a memory access (misaligned WMMA pointer, bad ldm, ...).
void report(const char* kind, const char* detail);
int lane();
void launch(const char* name, const void* fn, dim3 grid, dim3 block, size_t smem,
            void (*body)(void*), void* ctx);
int set_func_attribute(const void* fn, int attr, int value);
int take_last_error();
void count_mma();
void count_fragment_load();
void count_accumulator_transfer();
void count_bank_conflicts(long long extra_wavefronts);
const char* error_string(int code);

}  // namespace mg_host

// A 16-byte global store (the hardware faults on an address not 16-byte aligned).
inline void __stwb(int4* p, int4 v) {
  if (reinterpret_cast<uintptr_t>(p) % 16 != 0)
    ::mg_host::report("misaligned-store", "__stwb: a 16-byte store to an address not 16-byte aligned");
  *p = v;
}

#define threadIdx (::mg_host::g_coords->thread)
#define blockIdx (::mg_host::g_coords->block)
#define blockDim (::mg_host::g_coords->block_dim)
#define gridDim (::mg_host::g_coords->grid_dim)

__attribute__((noinline)) inline void __syncthreads() {
  ::mg_host::syncthreads(__builtin_return_address(0));
}
inline float __shfl_xor_sync(unsigned mask, float v, int lane_mask, int = 32) {
  return ::mg_host::shfl_xor(v, lane_mask, mask);
}

// ---- CUDA runtime API (cuda_runtime.h) ------------------------------------------------------
using cudaStream_t = struct CUstream_st*;
enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMisalignedAddress = 716,
  cudaErrorLaunchFailure = 719
};
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
inline cudaError_t cudaGetLastError() {
  return static_cast<cudaError_t>(::mg_host::take_last_error());
}
inline const char* cudaGetErrorString(cudaError_t e) { return ::mg_host::error_string(e); }
// One host "device": ordinal 0.
inline cudaError_t cudaSetDevice(int ordinal) {
  return ordinal == 0 ? cudaSuccess : cudaErrorInvalidValue;
}
template <class F> cudaError_t cudaFuncSetAttribute(F* fn, cudaFuncAttribute a, int value) {
  return static_cast<cudaError_t>(
      ::mg_host::set_func_attribute(reinterpret_cast<const void*>(fn), a, value));
}

namespace mg_host {

// A pending launch: `k<<<grid, block, smem, stream>>>(args...)` after the harness's rewrite.
template <class F> struct Launch {
  F* fn;
  const char* name;
  dim3 grid, block;
  size_t smem;
  template <class... A> void operator()(A... a) const {
    auto call = [&]() { fn(a...); };
    using Call = decltype(call);
    launch(
        name, reinterpret_cast<const void*>(fn), grid, block, smem,
        [](void* c) { (*static_cast<Call*>(c))(); }, &call);
  }
};
template <class F>
Launch<F> launch_config(F* fn, const char* name, dim3 grid, dim3 block, size_t smem = 0,
                        cudaStream_t = nullptr) {
  return Launch<F>{fn, name, grid, block, smem};
}

}  // namespace mg_host

// ---- 16-bit floating-point types (cuda_fp16.h, cuda_bf16.h) ---------------------------------
struct __half {
  uint16_t bits;
};
struct __nv_bfloat16 {
  uint16_t bits;
};

inline unsigned short __half_as_ushort(__half h) { return h.bits; }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) { return b.bits; }
inline unsigned __float_as_uint(float f) {
  unsigned u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float __half2float(__half h) {
  const uint32_t s = (h.bits & 0x8000u) << 16, e = (h.bits >> 10) & 0x1f, m = h.bits & 0x3ff;
  uint32_t u;
  if (e == 0x1f) {
    u = s | 0x7f800000u | (m << 13);
  } else if (e != 0) {
    u = s | ((e + 112) << 23) | (m << 13);
  } else if (m == 0) {
    u = s;
  } else {  // subnormal: m * 2^-24
    const float f = static_cast<float>(m) * 5.9604644775390625e-8f;
    std::memcpy(&u, &f, 4);
    u |= s;
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round to nearest, ties to even (what __float2half_rn does), overflow to infinity.
inline __half __float2half_rn(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint16_t s = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a >= 0x7f800000u)
    return {static_cast<uint16_t>(s | (a > 0x7f800000u ? 0x7e00u : 0x7c00u))};
  if (a >= 0x477ff000u)
    return {static_cast<uint16_t>(s | 0x7c00u)};  // rounds past 65504
  if (a < 0x38800000u) {  // below 2^-14: subnormal half, exact multiple of 2^-24 after rounding
    float x;
    std::memcpy(&x, &a, 4);
    const float q = nearbyintf(x * 16777216.f);  // ties to even in the default rounding mode
    return {static_cast<uint16_t>(s | static_cast<uint16_t>(q))};
  }
  const uint32_t mant = a & 0x7fffffu, exp = (a >> 23) - 112;
  uint32_t h = (exp << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
    ++h;
  return {static_cast<uint16_t>(s | h)};
}

inline float __bfloat162float(__nv_bfloat16 b) {
  const uint32_t u = static_cast<uint32_t>(b.bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return {static_cast<uint16_t>((u >> 16) | 0x40u)};
  u += 0x7fffu + ((u >> 16) & 1u);
  return {static_cast<uint16_t>(u >> 16)};
}

// ---- cuBLAS (cublas_v2.h): the strided batched GEMM through a reference implementation -----
using cublasHandle_t = struct cublasContext*;
enum cublasStatus_t {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_NOT_INITIALIZED = 1,
  CUBLAS_STATUS_INVALID_VALUE = 7
};
enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };
enum cudaDataType { CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14 };
enum cublasComputeType_t { CUBLAS_COMPUTE_32F = 68 };
enum cublasGemmAlgo_t { CUBLAS_GEMM_DEFAULT = -1 };
inline cublasStatus_t cublasCreate(cublasHandle_t* h) {
  static int handle;
  *h = reinterpret_cast<cublasHandle_t>(&handle);
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cublasDestroy(cublasHandle_t) { return CUBLAS_STATUS_SUCCESS; }
inline cublasStatus_t cublasSetStream(cublasHandle_t, cudaStream_t) {
  return CUBLAS_STATUS_SUCCESS;
}
inline const char* cublasGetStatusString(cublasStatus_t s) {
  return s == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS" : "CUBLAS_STATUS_INVALID_VALUE";
}
namespace mg_host {
cublasStatus_t gemm_strided_batched(int op_a, int op_b, int m, int n, int k, float alpha,
                                    const void* a, int ta, long long lda, long long sa,
                                    const void* b, int tb, long long ldb, long long sb, float beta,
                                    void* c, int tc, long long ldc, long long sc, int batch);
}
// Column-major, as cuBLAS: C[i + j ldc] = alpha sum_p op(A)[i, p] op(B)[p, j] + beta C.
inline cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t, cublasOperation_t op_a, cublasOperation_t op_b, int m, int n, int k,
    const float* alpha, const void* a, cudaDataType ta, long long lda, long long sa, const void* b,
    cudaDataType tb, long long ldb, long long sb, const float* beta, void* c, cudaDataType tc,
    long long ldc, long long sc, int batch, cublasComputeType_t, cublasGemmAlgo_t) {
  return ::mg_host::gemm_strided_batched(op_a, op_b, m, n, k, *alpha, a, ta, lda, sa, b, tb, ldb,
                                         sb, *beta, c, tc, ldc, sc, batch);
}

// ---- WMMA (mma.h) ---------------------------------------------------------------------------
// A fragment holds the whole tile in every lane (the hardware's element-to-lane mapping is
// unspecified, so no program can observe the difference); each collective call meets the warp
// first, and element e of a load or store is checked as an access of lane e % 32, which is also
// the lane that performs element e of a store.
namespace nvcuda::wmma {

struct row_major {};
struct col_major {};
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
enum layout_t { mem_row_major, mem_col_major };

template <class Use, int M, int N, int K> struct frag_dims;
template <int M, int N, int K> struct frag_dims<matrix_a, M, N, K> {
  static constexpr int rows = M, cols = K;
};
template <int M, int N, int K> struct frag_dims<matrix_b, M, N, K> {
  static constexpr int rows = K, cols = N;
};
template <int M, int N, int K> struct frag_dims<accumulator, M, N, K> {
  static constexpr int rows = M, cols = N;
};

template <class Use, int M, int N, int K, class T, class Layout = void> struct fragment {
  static_assert((M == 16 && N == 16 && K == 16) || (M == 8 && N == 32 && K == 16) ||
                    (M == 32 && N == 8 && K == 16),
                "WMMA supports the shapes 16x16x16, 8x32x16 and 32x8x16 for 16-bit inputs");
  static constexpr int rows = frag_dims<Use, M, N, K>::rows, cols = frag_dims<Use, M, N, K>::cols;
  static constexpr int num_elements = rows * cols;
  // Row-major values: f32, except an f16 accumulator (what a kernel rounds its f32 result into
  // element by element before storing it to an f16 tile).
  using element_type = std::conditional_t<
      std::is_same<Use, accumulator>::value && std::is_same<T, __half>::value, __half, float>;
  // Uninitialized accumulator registers hold garbage: NaN here, so that a kernel adding to an
  // accumulator it never loaded or filled shows in its results (matrix_a/b fragments are only
  // ever loaded: left alone, they cost nothing to declare).
  element_type x[rows * cols];
  fragment() {
    if constexpr (std::is_same<Use, accumulator>::value)
      for (auto& e : x) {
        if constexpr (std::is_same<element_type, float>::value)
          e = std::numeric_limits<float>::quiet_NaN();
        else
          e.bits = 0x7e00;  // an f16 NaN
      }
  }
};

namespace detail {
inline float to_float(float v) { return v; }
inline float to_float(__half v) { return __half2float(v); }
inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

// The documented preconditions of load/store_matrix_sync: a 256-bit aligned pointer, ldm a
// multiple of 8 elements for 16-bit types and 4 for float (16 bytes either way).
template <class T>
MG_HOST_NOINSTR inline void check_pointer(const char* what, const T* p, unsigned ldm) {
  if (reinterpret_cast<uintptr_t>(p) % 32 != 0)
    ::mg_host::report("wmma-misaligned", what);
  if ((ldm * sizeof(T)) % 16 != 0)
    ::mg_host::report("wmma-bad-ldm", what);
}

// Loads the rows x cols tile at p (element (i, j) at p[i ldm + j] if row-major, else
// p[i + j ldm]) into x; this lane checks its share.
template <class T>
MG_HOST_NOINSTR inline void load(float* x, int rows, int cols, const T* p, unsigned ldm, bool row) {
  ::mg_host::warp_sync();
  const int lane = ::mg_host::lane();
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) {
      const T* q = row ? p + i * ldm + j : p + i + j * ldm;
      const int e = i * cols + j;
      if (e % 32 == lane)
        ::mg_host::check_access(q, sizeof(T), false);
      x[e] = to_float(*q);
    }
}

// Shared-memory bank conflicts of one 16-bit fragment load as the hardware issues it
// (ldmatrix): 8x8 blocks, each 8 memory rows of 16 bytes read in one wavefront; 16-byte chunks
// whose addresses agree modulo 128 bytes fall in the same 4 of the 32 banks and take a
// wavefront each. Returns the extra wavefronts (0 when conflict-free).
template <class T>
MG_HOST_NOINSTR inline long long bank_conflicts(const T* p, int rows, int cols, unsigned ldm,
                                                bool row) {
  if (sizeof(T) != 2) return 0;
  const int mem_rows = row ? rows : cols, mem_cols = row ? cols : rows;  // memory order
  long long extra = 0;
  for (int r0 = 0; r0 < mem_rows; r0 += 8)
    for (int c0 = 0; c0 < mem_cols; c0 += 8) {
      int per_group[8] = {};
      int ways = 0;
      for (int r = r0; r < r0 + 8 && r < mem_rows; ++r) {
        const auto a = reinterpret_cast<uintptr_t>(p + static_cast<long long>(r) * ldm + c0);
        ways = std::max(ways, ++per_group[(a / 16) % 8]);
      }
      extra += ways - 1;
    }
  return extra;
}
}  // namespace detail

template <class Use, int M, int N, int K, class T, class L>
MG_HOST_NOINSTR inline void load_matrix_sync(fragment<Use, M, N, K, T, L>& f, const T* p,
                                             unsigned ldm) {
  detail::check_pointer("load_matrix_sync", p, ldm);
  detail::load(f.x, f.rows, f.cols, p, ldm, std::is_same<L, row_major>::value);
  if (::mg_host::lane() == 0) {
    ::mg_host::count_fragment_load();
    ::mg_host::count_bank_conflicts(
        detail::bank_conflicts(p, f.rows, f.cols, ldm, std::is_same<L, row_major>::value));
  }
}
template <int M, int N, int K>
MG_HOST_NOINSTR inline void load_matrix_sync(fragment<accumulator, M, N, K, float>& f,
                                             const float* p, unsigned ldm, layout_t l) {
  detail::check_pointer("load_matrix_sync (accumulator)", p, ldm);
  detail::load(f.x, f.rows, f.cols, p, ldm, l == mem_row_major);
  if (::mg_host::lane() == 0)
    ::mg_host::count_accumulator_transfer();
}
template <int M, int N, int K, class T>
MG_HOST_NOINSTR inline void store_matrix_sync(T* p, const fragment<accumulator, M, N, K, T>& f,
                                              unsigned ldm, layout_t l) {
  static_assert(std::is_same<T, float>::value || std::is_same<T, __half>::value,
                "WMMA accumulators are f32 or f16");
  detail::check_pointer("store_matrix_sync", p, ldm);
  ::mg_host::warp_sync();
  const int lane = ::mg_host::lane();
  if (lane == 0)
    ::mg_host::count_accumulator_transfer();
  for (int i = 0; i < f.rows; ++i)
    for (int j = 0; j < f.cols; ++j) {
      const int e = i * f.cols + j;
      if (e % 32 != lane)
        continue;
      T* q = l == mem_row_major ? p + i * ldm + j : p + i + j * ldm;
      ::mg_host::check_access(q, sizeof(T), true);
      *q = f.x[e];
    }
}
template <class Use, int M, int N, int K, class T, class L>
inline void fill_fragment(fragment<Use, M, N, K, T, L>& f, float v) {
  for (auto& x : f.x) {
    if constexpr (std::is_same<std::decay_t<decltype(x)>, __half>::value)
      x = __float2half_rn(v);
    else
      x = v;
  }
}
// d = a b + c, f32 accumulation in k order.
template <int M, int N, int K, class T, class LA, class LB>
MG_HOST_NOINSTR inline void mma_sync(fragment<accumulator, M, N, K, float>& d,
                                     const fragment<matrix_a, M, N, K, T, LA>& a,
                                     const fragment<matrix_b, M, N, K, T, LB>& b,
                                     const fragment<accumulator, M, N, K, float>& c) {
  ::mg_host::warp_sync();
  if (::mg_host::lane() == 0)
    ::mg_host::count_mma();
  float out[M * N];
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float acc = c.x[i * N + j];
      for (int q = 0; q < K; ++q)
        acc += a.x[i * K + q] * b.x[q * N + j];
      out[i * N + j] = acc;
    }
  std::memcpy(d.x, out, sizeof out);
}

}  // namespace nvcuda::wmma

#ifndef MG_HOST_CUDA_RUNTIME  // the rest is for the kernel translation unit only

// ---- the device library (runtime/device), with host cp.async wrappers -----------------------
// mg_arch.cuh is read here with __CUDA_ARCH__ undefined (its plain fallbacks: no inline PTX),
// its three cp.async wrappers renamed out of the way; the host versions below take their
// names, and __CUDA_ARCH__ is then defined, so mg_tile.cuh (included by the generated code)
// takes its sm_80 paths: cp.async copies and WMMA tensor-core tiles.
#define cp_async16 mg_host_unused_cp_async16
#define cp_async_commit mg_host_unused_cp_async_commit
#define cp_async_wait mg_host_unused_cp_async_wait
#include "mg_arch.cuh"
#undef cp_async16
#undef cp_async_commit
#undef cp_async_wait

namespace mg {
inline void cp_async16(void* dst, const void* src) { ::mg_host::cp_async(dst, src, 16); }
inline void cp_async_commit() { ::mg_host::cp_async_commit(); }
template <int N> inline void cp_async_wait() { ::mg_host::cp_async_wait(N); }
}  // namespace mg

#ifndef MG_HOST_CUDA_ARCH
#define MG_HOST_CUDA_ARCH 800
#endif
#define __CUDA_ARCH__ MG_HOST_CUDA_ARCH

// The generated module's shared memory: blocks run one at a time, so one buffer serves every
// block of every kernel. A kernel's `extern __shared__ unsigned char smem[]` (declared inside
// the generated code's unnamed namespace) names it. Its size covers sm_90's 227 KiB plus a
// red zone that the checker watches for out-of-bounds accesses.
namespace {
alignas(128) unsigned char smem[(227 + 16) * 1024];
}  // namespace
// The runtime's handle on it (called by the harness's main before the entry).
extern "C" MG_HOST_NOINSTR unsigned char* mg_host_kernel_smem(size_t* bytes) {
  *bytes = sizeof smem;
  return smem;
}

#endif  // MG_HOST_CUDA_RUNTIME
