#include "runtime/cuda_jit.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <thread>

#include "runtime/compile_cache.h"

namespace mugraph::runtime {

// Defined in the CMake-generated source that embeds runtime/device/*.cuh.
extern const char* const kDeviceArchText;
extern const char* const kDeviceFragmentText;
extern const char* const kDeviceTileText;
extern const char* const kDeviceTopText;

const std::vector<std::pair<std::string, std::string>>& device_library_files() {
  static const std::vector<std::pair<std::string, std::string>> files = {
      {"mg_arch.cuh", kDeviceArchText},
      {"mg_fragment.cuh", kDeviceFragmentText},
      {"mg_tile.cuh", kDeviceTileText},
      {"mugraph_device.cuh", kDeviceTopText}};
  return files;
}

Result<std::string> compile_cuda(const codegen::Module& m, const CudaJitOptions& o) {
  if (o.archs.empty()) return error("CUDA JIT: no architecture to compile for");
  CompileRequest req;
  req.what = "CUDA";
  req.compiler = o.nvcc;
  req.install_hint =
      "generated kernels are compiled with nvcc from the CUDA toolkit, expected at "
      "/usr/local/cuda";
  req.flags = o.flags;
  req.time_limit_s = o.time_limit_s;
  std::vector<int> archs = o.archs;
  std::sort(archs.begin(), archs.end());
  archs.erase(std::unique(archs.begin(), archs.end()), archs.end());
  for (int a : archs) {
    req.flags.push_back("-gencode");
    req.flags.push_back("arch=compute_" + std::to_string(a) + ",code=sm_" + std::to_string(a));
  }
  // cuBLAS is found next to nvcc (<toolkit>/lib64) at load time too.
  const std::string lib = std::filesystem::path(o.nvcc).parent_path().parent_path() / "lib64";
  req.link_flags = {"-L" + lib, "-Xlinker", "-rpath," + lib, "-lcublas"};
  req.headers = device_library_files();
  req.source = m.source;
  req.extension = ".cu";
  req.cache_dir = o.cache_dir;
  MG_ASSIGN_OR_RETURN(const Compiled c, compile_cached(req));
  return c.path;
}

Result<std::vector<std::string>> compile_cuda_each(const std::vector<codegen::Module>& ms,
                                                   const CudaJitOptions& o, int jobs) {
  std::vector<std::string> paths(ms.size());
  std::mutex mu;
  Status first_error;  // of the lowest-numbered module that failed
  size_t error_at = ms.size();
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  using Clock = std::chrono::steady_clock;
  const Clock::time_point end =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(std::max(0.0, o.time_limit_s)));
  auto work = [&] {
    for (size_t i; !failed && (i = next++) < ms.size();) {
      CudaJitOptions mine = o;
      if (o.time_limit_s > 0) {
        mine.time_limit_s = std::chrono::duration<double>(end - Clock::now()).count();
        if (mine.time_limit_s <= 0) mine.time_limit_s = 1e-3;  // stopped at once: the usual error
      }
      Result<std::string> p = compile_cuda(ms[i], mine);
      if (p.ok()) {
        paths[i] = std::move(p).value();
        continue;
      }
      failed = true;
      std::lock_guard<std::mutex> lock(mu);
      if (i < error_at) error_at = i, first_error = p.status();
    }
  };
  if (jobs <= 0) jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> threads;
  for (int t = 1; t < std::min<int>(jobs, static_cast<int>(ms.size())); ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  if (failed) return first_error;
  return paths;
}

CudaLibrary::~CudaLibrary() {
  if (handle_ == nullptr) return;
  if (auto release = reinterpret_cast<void (*)()>(dlsym(handle_, "mg_release"))) release();
  dlclose(handle_);
}

Result<std::unique_ptr<CudaLibrary>> CudaLibrary::open(const std::string& path,
                                                       const codegen::Module& m) {
  std::unique_ptr<CudaLibrary> lib(new CudaLibrary());
  lib->module_ = m;
  lib->path_ = path;
  lib->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib->handle_ == nullptr) return error("cannot load ", path, ": ", dlerror());
  lib->error_string_ = reinterpret_cast<ErrorFn>(dlsym(lib->handle_, "mg_error_string"));
  if (lib->error_string_ == nullptr) return error(path, " has no mg_error_string");
  lib->set_device_ = reinterpret_cast<SetDeviceFn>(dlsym(lib->handle_, "mg_set_device"));
  if (lib->set_device_ == nullptr) return error(path, " has no mg_set_device");
  for (const codegen::Module::Entry& e : m.entries) {
    void* f = dlsym(lib->handle_, e.symbol.c_str());
    if (f == nullptr) return error(path, " has no entry '", e.symbol, "'");
    lib->fns_.push_back(reinterpret_cast<EntryFn>(f));
  }
  return lib;
}

Status CudaLibrary::set_device(int ordinal) const {
  const int rc = set_device_(ordinal);
  if (rc != 0) return error("cudaSetDevice(", ordinal, "): ", error_string_(rc), " (code ", rc, ")");
  return {};
}

Status CudaLibrary::run(size_t index, const std::vector<const void*>& in,
                        const std::vector<void*>& out, void* workspace, void* stream) const {
  if (index >= fns_.size()) return error("module has no entry #", index);
  const codegen::Module::Entry& e = module_.entries[index];
  MG_RETURN_IF_ERROR(codegen::check_entry_args(e, in.size(), out.size()));
  const int rc = fns_[index](const_cast<void* const*>(in.data()), out.data(), workspace, stream);
  if (rc != 0) return error(e.symbol, ": ", error_string_(rc), " (code ", rc, ")");
  return {};
}

CudaModule::~CudaModule() = default;

Status CudaModule::run(size_t index, const std::vector<const void*>& in,
                       const std::vector<void*>& out) {
  if (index >= workspaces_.size()) return error("module has no entry #", index);
  return library_->run(index, in, out, workspaces_[index].data(), device_->stream());
}

Result<double> CudaModule::time(size_t index, const std::vector<const void*>& in,
                                const std::vector<void*>& out, int runs, bool use_graph) {
  return device_->time([&] { return run(index, in, out); }, runs, 20, use_graph);
}

Result<std::unique_ptr<CudaModule>> load_cuda_module(const codegen::Module& m,
                                                     const CudaJitOptions& o,
                                                     std::shared_ptr<CudaDevice> device) {
  CudaJitOptions with_device = o;
  with_device.archs.push_back(device->sm_arch());
  MG_ASSIGN_OR_RETURN(const std::string path, compile_cuda(m, with_device));
  std::unique_ptr<CudaModule> mod(new CudaModule());
  mod->device_ = device;
  MG_ASSIGN_OR_RETURN(mod->library_, CudaLibrary::open(path, m));
  for (const codegen::Module::Entry& e : m.entries) {
    MG_ASSIGN_OR_RETURN(DeviceBuffer ws, DeviceBuffer::make(device, static_cast<size_t>(e.workspace_bytes)));
    mod->workspaces_.push_back(std::move(ws));
  }
  return mod;
}

}  // namespace mugraph::runtime
