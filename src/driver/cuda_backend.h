// The CUDA backend as the driver uses it: validate for a GPU target, generate one module for
// several uGraphs (codegen/cuda), compile it with nvcc (no GPU needed), and, when a GPU is
// present, load it, run an entry on seeded random inputs, compare with the interpreter, time.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codegen/cuda/generate_cuda.h"
#include "driver/cpu_backend.h"
#include "runtime/cuda_jit.h"

namespace mugraph::driver {

// nvcc from /usr/local/cuda, $CUDA_HOME or $PATH; sm_80 + sm_90; cache default_cache_dir("cuda").
runtime::CudaJitOptions default_cuda_jit_options();

// Validates every graph against `t` (a GPU target) and generates one CUDA module.
Result<codegen::Module> generate_cuda(const std::vector<codegen::NamedGraph>& graphs,
                                      const target::Target& t);

// Whether the CUDA generator takes `g` for `t`: its plan of shared memory (f32 for intermediates
// no matmul reads in 16 bits) can need more than the IR's estimate (ir::check_memory) allows.
// The generator's error, or ok.
Status cuda_generates(const ir::KernelGraph& g, const target::Target& t);

// The check search::TuneOptions::accepts wants for target `t`: cuda_generates for a GPU target,
// none (empty) for the CPU.
std::function<Status(const ir::KernelGraph&)> backend_accepts(const target::Target& t);

// generate_cuda + nvcc for jit.archs: the shared object's path. Needs no GPU.
Result<std::string> compile_cuda(const std::vector<codegen::NamedGraph>& graphs,
                                 const target::Target& t, const runtime::CudaJitOptions& jit);

// generate_cuda + compile + load on `device`.
Result<std::unique_ptr<runtime::CudaModule>> load_cuda(
    const std::vector<codegen::NamedGraph>& graphs, const target::Target& t,
    const runtime::CudaJitOptions& jit, std::shared_ptr<runtime::CudaDevice> device);

// Each graph in a module of its own, compiled at once (one nvcc per graph, as many as the cores)
// for `device`'s architecture alone, then loaded: entry 0 of module i computes graphs[i]. What
// the optimizer measures: one module of many graphs is one long serial nvcc run.
Result<std::vector<std::unique_ptr<runtime::CudaModule>>> load_cuda_each(
    const std::vector<codegen::NamedGraph>& graphs, const target::Target& t,
    const runtime::CudaJitOptions& jit, std::shared_ptr<runtime::CudaDevice> device);

// A graph's buffers on the GPU: inputs from make_buffers(g, seed, inputs_as) uploaded, outputs
// filled with 0xFF bytes (NaN in f16, bf16 and f32) so that unwritten elements are caught.
struct GpuBuffers {
  CpuBuffers host;  // inputs as uploaded; outputs receive download()
  std::vector<runtime::DeviceBuffer> inputs, outputs;
  std::vector<const void*> in() const;
  std::vector<void*> out() const;
  Status download(runtime::CudaDevice& dev);
};
Result<GpuBuffers> make_gpu_buffers(const ir::KernelGraph& g, uint64_t seed,
                                    std::shared_ptr<runtime::CudaDevice> dev,
                                    const ir::KernelGraph* inputs_as = nullptr);

// The normwise relative error a GPU run may show against the float64 interpreter: that of the
// CPU backend (cpu_tolerance), except that f32 programs get 1e-3 (tensor-core-free f32 paths
// still reassociate sums across warps, and cuBLAS may use split-K).
double gpu_tolerance(const ir::KernelGraph& g);

// Runs entry `index` (which computes `g`) on make_gpu_buffers(g, seed) and compares every output
// with the float64 interpreter.
Result<std::vector<OutputDiff>> check_gpu(runtime::CudaModule& m, size_t index,
                                          const ir::KernelGraph& g, uint64_t seed,
                                          std::shared_ptr<runtime::CudaDevice> dev);

}  // namespace mugraph::driver
