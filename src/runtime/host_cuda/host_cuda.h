// Generated CUDA on the CPU: compiles a module of codegen/cuda with the host compiler against the
// CPU implementation of the CUDA subset it uses (cuda_host.h: fibers as CUDA threads, real
// barriers, warp lockstep, cp.async groups, WMMA, a reference cuBLAS GEMM) into an executable
// that runs one entry on given buffers and reports the race and barrier checker's findings
// (cuda_host_runtime.h), each mapped back to the generated source: kernel, op comment, line.
//
// The generated text is compiled as nvcc gets it, except for the launch syntax
// (`k<<<g, b, s, st>>>(args)` -> `::mg_host::launch_config(k, "k", g, b, s, st)(args)`), which
// C++ cannot spell. Needs only a C++ compiler and addr2line (binutils); no GPU, no CUDA toolkit.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codegen/emitter.h"
#include "runtime/buffer.h"

namespace mugraph::runtime {

struct HostCudaOptions {
  std::string compiler = "g++";
  // The emulated architecture (__CUDA_ARCH__ / 10): 80 or 90. It selects the device library's
  // code paths (both take the sm_80 ones today) and the opt-in shared-memory limit below.
  int arch = 80;
  // Where the sources and the executable go; empty: a fresh directory under the system temp dir
  // (removed with the module unless keep_files).
  std::string work_dir;
  bool keep_files = false;
};

// The opt-in dynamic shared memory per block of a compute capability (CUDA programming guide,
// "Technical Specifications per Compute Capability"): 163 KiB on sm_80, 227 KiB on sm_90.
int64_t max_dynamic_shared_memory(int arch);

// `source` with every kernel launch `k<<<...>>>(` rewritten for the host (see above).
std::string rewrite_launches(const std::string& source);

// One finding of the checker, located in the generated source.
struct HostCudaFinding {
  std::string kind;    // race-raw, race-war, race-waw, cp.async-early, oob-shared, ...
  std::string kernel;  // the __global__ function (or cublasGemmStridedBatchedEx)
  std::string block;   // "x,y,z"
  int thread = -1, other_thread = -1;  // threadIdx.x; the thread of the conflicting access
  std::string space;                   // "shared" / "global" / "" (barrier findings)
  std::string buffer;    // shared: the block tensors planned at that offset; global: tensor name
  long long offset = 0;  // bytes from the buffer's start (shared: from smem)
  long long count = 1;   // occurrences at this source location
  std::string detail;
  int line = 0;    // line of the generated source (0: unknown)
  std::string op;  // the nearest op comment above that line ("qk = matmul(q, k)")
  std::string to_string() const;
};

struct HostCudaRun {
  int entry_rc = 0;  // the entry's return code (0, a cudaError_t, 1000 + cublasStatus_t)
  std::vector<HostCudaFinding> findings;
  long long dropped = 0;  // findings beyond the distinct ones reported
  // What ran: block barriers released, cp.async copies, WMMA mma_sync calls (per warp), warp
  // shuffles (per warp), WMMA matrix_a/matrix_b fragment loads (per warp) and the extra
  // shared-memory wavefronts their bank conflicts cost (16-bit loads, as ldmatrix issues them),
  // WMMA accumulator fragments loaded from or stored to memory (per warp); tests use them to
  // see that a code path was taken.
  long long barriers = 0, cp_async_copies = 0, wmma_mmas = 0, shuffles = 0;
  long long wmma_fragment_loads = 0, wmma_bank_conflicts = 0, wmma_accumulator_transfers = 0;
  std::string report() const;  // every finding, one per line
};

class HostCudaModule {
public:
  HostCudaModule(const HostCudaModule&) = delete;
  HostCudaModule& operator=(const HostCudaModule&) = delete;
  ~HostCudaModule();

  // Runs entry `index` of the module on `in` (read) and `out` (written), buffers in the storage
  // type and layout of the graph's tensors; `g` is the graph of that entry (names the device
  // buffers in findings).
  Result<HostCudaRun> run(size_t index, const ir::KernelGraph& g, const std::vector<Buffer>& in,
                          std::vector<Buffer>& out) const;

  const codegen::Module& module() const { return module_; }
  const std::string& source_path() const { return source_path_; }
  double compile_seconds() const { return compile_seconds_; }

private:
  friend Result<std::unique_ptr<HostCudaModule>> compile_host_cuda(const codegen::Module&,
                                                                   const HostCudaOptions&);
  HostCudaModule() = default;
  codegen::Module module_;
  HostCudaOptions options_;
  std::string dir_, exe_, source_path_;
  std::vector<std::string> source_lines_;
  double compile_seconds_ = 0;
  bool remove_dir_ = false;
};

// Writes the module, the device library and the host prelude to a directory and builds the
// harness executable. Errors: no compiler, a compile failure (with the compiler's output).
Result<std::unique_ptr<HostCudaModule>> compile_host_cuda(const codegen::Module& m,
                                                          const HostCudaOptions& o);

}  // namespace mugraph::runtime
