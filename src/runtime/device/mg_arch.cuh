// mugraph device library, layer 1: storage types, conversions and instruction wrappers.
// Every wrapper that needs a newer architecture is guarded by __CUDA_ARCH__ and falls back to
// plain loads and stores, so the library compiles for any target nvcc accepts.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdint>

namespace mg {

// ---- storage types: compute is always f32 ---------------------------------------------------
using f16 = __half;
using bf16 = __nv_bfloat16;

__device__ __forceinline__ float ld(float x) { return x; }
__device__ __forceinline__ float ld(f16 x) { return __half2float(x); }
__device__ __forceinline__ float ld(bf16 x) { return __bfloat162float(x); }

template <class T>
__device__ __forceinline__ T st(float x);
template <>
__device__ __forceinline__ float st<float>(float x) { return x; }
template <>
__device__ __forceinline__ f16 st<f16>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ bf16 st<bf16>(float x) { return __float2bfloat16_rn(x); }

// The bits of a stored value (16-bit types in the low half).
__device__ __forceinline__ unsigned bits(float x) { return __float_as_uint(x); }
__device__ __forceinline__ unsigned bits(f16 x) { return __half_as_ushort(x); }
__device__ __forceinline__ unsigned bits(bf16 x) { return __bfloat16_as_ushort(x); }

// ---- asynchronous global -> shared copies (sm_80 cp.async) ------------------------------------
// 16 bytes from global `src` to shared `dst`, both 16-byte aligned.
__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src) : "memory");
#else
  *static_cast<int4*>(dst) = *static_cast<const int4*>(src);
#endif
}

// Closes the group of copies issued so far by this thread.
__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// ---- warp primitives ------------------------------------------------------------------------
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// The sum of v over the block's threads (blockDim.x a multiple of 32, at most 1024), returned
// to every thread. `scratch`: 32 floats of shared memory, free on entry and again on return.
// Every thread adds the warps' partial sums in the same order: the same value everywhere.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  v = warp_sum(v);
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  float total = 0.f;
  for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) total += scratch[w];
  __syncthreads();
  return total;
}

}  // namespace mg
