// The CUDA code generator (Mirage §7): every uGraph becomes one .cu source.
//
//   kernel graph     one host function per kernel op, called in order by an extern "C" entry
//                      int mg_entry_<name>(void* const* in, void* const* out, void* workspace,
//                                          void* stream)
//                    returning 0, a cudaError_t, or 1000 + a cublasStatus_t (the module's
//                    extern "C" const char* mg_error_string(int) names it)
//   predefined op    matmul / concat_matmul through cuBLAS (GemmStridedBatchedEx, f32 compute)
//                    when the operands are plain strided matrices; any other predefined op, or
//                    a matmul cuBLAS cannot take, a small grid-stride kernel of our own
//   graph-defined    one __global__ kernel, straight-line: grid = the block graph's grid,
//                    4 or 8 warps by tile size (CudaOptions::threads); block tensors in
//                    dynamic shared memory at the offsets of opt::plan_memory, in the layouts
//                    of opt::select_layouts; the ops in the stages of opt::schedule_block with
//                    __syncthreads() only between stages; streaming input tiles fetched with
//                    cp.async, double-buffered across for-loop iterations when the doubled plan
//                    fits; matmuls through mg::matmul_tile (tensor cores for f16/bf16 tiles,
//                    each warp a register-blocked group of fragments), a loop accumulator's
//                    matmul through mg::RegisterAccumulator (the sum in fragments across the
//                    loop, up to 8 a warp); output tiles stored in 16-byte chunks
//                    (mg::store_rows) where the device rows allow; the entry refuses tensors
//                    these 16-byte paths touch that are not 16-byte aligned
//   thread graph     one fused loop per output keeping the chain in registers
//
// Block tensors: an iterator's tile keeps the device tensor's storage type (tensor cores read
// it directly); every other block tensor is f32 (accumulators, products, reductions).
#pragma once

#include <string>
#include <vector>

#include "codegen/emitter.h"
#include "target/target.h"

namespace mugraph::codegen::cuda {

struct CudaOptions {
  int threads = 0;                        // threads per block of graph-defined kernels (0: 128,
                                          // or 256 for blocks with tiles of 4096+ elements)
  int64_t shared_limit = 163 * 1024;      // bytes per block (default: A100's opt-in maximum,
                                          // also fits H100)
  bool double_buffer = true;              // streaming tiles double-buffered when they fit
};

// Options for a GPU target: its opt-in shared memory per block.
CudaOptions options_for(const target::Target& t);

// One module with an entry per graph. Precondition: every graph is valid (ir validator).
// Errors: names that collide after identifier(), graphs without outputs, a block graph whose
// planned shared memory exceeds options.shared_limit (named by op and bytes).
Result<Module> generate_cuda(const std::vector<NamedGraph>& graphs,
                             const CudaOptions& options = {});

// The header the generated source includes (runtime/device/mugraph_device.cuh).
inline constexpr const char* kDeviceLibraryHeader = "mugraph_device.cuh";

}  // namespace mugraph::codegen::cuda
