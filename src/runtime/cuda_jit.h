// The CUDA runtime: compiles a generated module (codegen/cuda) with nvcc into a shared object
// (kernels for the requested architectures + host entries linked against cuBLAS), caches it on
// disk (runtime/compile_cache.h: key = source, device library, nvcc version, flags and
// architectures), loads it with dlopen and runs or times its entries on a CudaDevice.
//
// Compiling needs only nvcc (CI compiles every generated kernel this way, with no GPU);
// running needs a device (runtime/cuda_driver.h).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "codegen/emitter.h"
#include "runtime/cuda_driver.h"

namespace mugraph::runtime {

struct CudaJitOptions {
  std::string nvcc = "/usr/local/cuda/bin/nvcc";
  // Compute capabilities compiled for (SASS for each); load_cuda_module adds the device's own.
  std::vector<int> archs = {80, 90};
  std::vector<std::string> flags = {"-std=c++17", "-O3", "-shared", "-Xcompiler", "-fPIC",
                                    "-lineinfo"};
  std::string cache_dir;  // required; created if missing
  double time_limit_s = 0;  // > 0: a compile longer than this fails (the time budget)
};

// The device library (runtime/device/*.cuh) as the generated code includes it: file name, text.
const std::vector<std::pair<std::string, std::string>>& device_library_files();

// Compiles `m` (or finds it in the cache); returns the shared object's path.
Result<std::string> compile_cuda(const codegen::Module& m, const CudaJitOptions& o);

// A compiled module opened with dlopen: its entries, mg_error_string and mg_set_device. Needs
// no CudaDevice: the caller passes device pointers, a workspace of the entry's workspace_bytes
// and a stream (CudaModule's own, or PyTorch's current stream in the Python package).
class CudaLibrary {
 public:
  CudaLibrary(const CudaLibrary&) = delete;
  CudaLibrary& operator=(const CudaLibrary&) = delete;
  ~CudaLibrary();
  // Loads the shared object at `path`, compiled from `m`; errors name a missing symbol.
  static Result<std::unique_ptr<CudaLibrary>> open(const std::string& path, const codegen::Module& m);

  // Makes device `ordinal` current for the module's CUDA runtime (it keeps its own, per thread).
  Status set_device(int ordinal) const;
  // Enqueues entry `index` on `stream` (a cudaStream_t; nullptr: the legacy default stream).
  // Errors carry the module's message for the entry's return code (a CUDA or cuBLAS error).
  Status run(size_t index, const std::vector<const void*>& in, const std::vector<void*>& out,
             void* workspace, void* stream) const;

  const codegen::Module& module() const { return module_; }
  const std::string& path() const { return path_; }

 private:
  CudaLibrary() = default;
  using EntryFn = int (*)(void* const*, void* const*, void*, void*);
  using ErrorFn = const char* (*)(int);
  using SetDeviceFn = int (*)(int);
  codegen::Module module_;
  std::string path_;
  void* handle_ = nullptr;
  std::vector<EntryFn> fns_;
  ErrorFn error_string_ = nullptr;
  SetDeviceFn set_device_ = nullptr;
};

class CudaModule {
 public:
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;
  ~CudaModule();

  // Enqueues entry `index` on the device's stream with device pointers, one per graph input /
  // output (storage type and layout of the graph's tensors). Errors carry the module's message
  // for the entry's return code (a CUDA or cuBLAS error).
  Status run(size_t index, const std::vector<const void*>& in, const std::vector<void*>& out);
  // Median seconds per call (CudaDevice::time) of entry `index`.
  Result<double> time(size_t index, const std::vector<const void*>& in,
                      const std::vector<void*>& out, int runs, bool use_graph);

  const codegen::Module& module() const { return library_->module(); }
  const std::string& path() const { return library_->path(); }

 private:
  friend Result<std::unique_ptr<CudaModule>> load_cuda_module(const codegen::Module&,
                                                              const CudaJitOptions&,
                                                              std::shared_ptr<CudaDevice>);
  CudaModule() = default;
  std::unique_ptr<CudaLibrary> library_;
  std::vector<DeviceBuffer> workspaces_;  // after library_: freed while the module is loaded
  std::shared_ptr<CudaDevice> device_;
};

// compile_cuda for each module at once (up to `jobs` nvcc processes; 0: one per core): the
// shared objects' paths, in order; the first error stops the rest. o.time_limit_s (> 0) bounds
// the whole call: a compile that starts later gets what is left, none once it is spent.
Result<std::vector<std::string>> compile_cuda_each(const std::vector<codegen::Module>& ms,
                                                   const CudaJitOptions& o, int jobs = 0);

// Compiles `m` for o.archs plus the device's architecture and loads it on `device`.
Result<std::unique_ptr<CudaModule>> load_cuda_module(const codegen::Module& m,
                                                     const CudaJitOptions& o,
                                                     std::shared_ptr<CudaDevice> device);

}  // namespace mugraph::runtime
