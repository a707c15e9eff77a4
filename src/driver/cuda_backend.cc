#include "driver/cuda_backend.h"

#include <cstdlib>
#include <filesystem>

namespace mugraph::driver {

runtime::CudaJitOptions default_cuda_jit_options() {
  namespace fs = std::filesystem;
  runtime::CudaJitOptions o;
  o.cache_dir = default_cache_dir("cuda");
  // /usr/local/cuda/bin/nvcc, else $CUDA_HOME/bin/nvcc, else the first nvcc on $PATH (an
  // absolute path: the toolkit's lib64 beside it provides cuBLAS).
  std::vector<fs::path> tries{"/usr/local/cuda/bin/nvcc"};
  if (const char* h = std::getenv("CUDA_HOME"); h != nullptr && *h != '\0')
    tries.push_back(fs::path(h) / "bin" / "nvcc");
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::string p = path;
    for (size_t a = 0, b; a <= p.size(); a = b + 1) {
      b = p.find(':', a);
      if (b == std::string::npos) b = p.size();
      if (b > a) tries.push_back(fs::path(p.substr(a, b - a)) / "nvcc");
    }
  }
  for (const fs::path& t : tries) {
    std::error_code ec;
    if (fs::exists(t, ec)) {
      o.nvcc = fs::canonical(t, ec).string();
      break;
    }
  }
  return o;
}

Result<codegen::Module> generate_cuda(const std::vector<codegen::NamedGraph>& graphs,
                                      const target::Target& t) {
  if (t.kind != target::Kind::kGpu)
    return error("CUDA code generation needs a GPU target (a100, h100, h200), not '", t.name, "'");
  for (const codegen::NamedGraph& ng : graphs)
    if (Status s = validate(*ng.graph, t); !s.ok())
      return error("graph '", ng.name, "': ", s.message());
  return codegen::cuda::generate_cuda(graphs, codegen::cuda::options_for(t));
}

Result<std::string> compile_cuda(const std::vector<codegen::NamedGraph>& graphs,
                                 const target::Target& t, const runtime::CudaJitOptions& jit) {
  MG_ASSIGN_OR_RETURN(const codegen::Module m, generate_cuda(graphs, t));
  return runtime::compile_cuda(m, jit);
}

Result<std::unique_ptr<runtime::CudaModule>> load_cuda(
    const std::vector<codegen::NamedGraph>& graphs, const target::Target& t,
    const runtime::CudaJitOptions& jit, std::shared_ptr<runtime::CudaDevice> device) {
  MG_ASSIGN_OR_RETURN(const codegen::Module m, generate_cuda(graphs, t));
  return runtime::load_cuda_module(m, jit, std::move(device));
}

Status cuda_generates(const ir::KernelGraph& g, const target::Target& t) {
  return generate_cuda({codegen::NamedGraph{"graph", &g}}, t).status();
}

std::function<Status(const ir::KernelGraph&)> backend_accepts(const target::Target& t) {
  if (t.kind == target::Kind::kCpu) return {};
  return [t](const ir::KernelGraph& g) { return cuda_generates(g, t); };
}

Result<std::vector<std::unique_ptr<runtime::CudaModule>>> load_cuda_each(
    const std::vector<codegen::NamedGraph>& graphs, const target::Target& t,
    const runtime::CudaJitOptions& jit, std::shared_ptr<runtime::CudaDevice> device) {
  std::vector<codegen::Module> ms;
  for (const codegen::NamedGraph& g : graphs) {
    MG_ASSIGN_OR_RETURN(codegen::Module m, generate_cuda({g}, t));
    ms.push_back(std::move(m));
  }
  runtime::CudaJitOptions own = jit;
  own.archs.clear();  // load_cuda_module adds the device's: the same flags, so a cache hit
  runtime::CudaJitOptions with_device = own;
  with_device.archs.push_back(device->sm_arch());
  MG_RETURN_IF_ERROR(runtime::compile_cuda_each(ms, with_device).status());
  std::vector<std::unique_ptr<runtime::CudaModule>> mods;
  for (const codegen::Module& m : ms) {
    MG_ASSIGN_OR_RETURN(auto mod, runtime::load_cuda_module(m, own, device));
    mods.push_back(std::move(mod));
  }
  return mods;
}

std::vector<const void*> GpuBuffers::in() const {
  std::vector<const void*> v;
  for (const runtime::DeviceBuffer& b : inputs) v.push_back(b.data());
  return v;
}

std::vector<void*> GpuBuffers::out() const {
  std::vector<void*> v;
  for (const runtime::DeviceBuffer& b : outputs) v.push_back(b.data());
  return v;
}

Status GpuBuffers::download(runtime::CudaDevice& dev) {
  for (size_t i = 0; i < outputs.size(); ++i)
    MG_RETURN_IF_ERROR(dev.download(host.outputs[i].data(), outputs[i].ptr(), host.outputs[i].bytes()));
  return {};
}

Result<GpuBuffers> make_gpu_buffers(const ir::KernelGraph& g, uint64_t seed,
                                    std::shared_ptr<runtime::CudaDevice> dev,
                                    const ir::KernelGraph* inputs_as) {
  GpuBuffers b;
  b.host = make_buffers(g, seed, inputs_as);
  for (const runtime::Buffer& h : b.host.inputs) {
    MG_ASSIGN_OR_RETURN(runtime::DeviceBuffer d, runtime::DeviceBuffer::make(dev, h.bytes()));
    MG_RETURN_IF_ERROR(dev->upload(d.ptr(), h.data(), h.bytes()));
    b.inputs.push_back(std::move(d));
  }
  for (const runtime::Buffer& h : b.host.outputs) {
    MG_ASSIGN_OR_RETURN(runtime::DeviceBuffer d, runtime::DeviceBuffer::make(dev, h.bytes()));
    MG_RETURN_IF_ERROR(dev->fill_bytes(d.ptr(), 0xFF, h.bytes()));
    b.outputs.push_back(std::move(d));
  }
  return b;
}

double gpu_tolerance(const ir::KernelGraph& g) { return std::max(cpu_tolerance(g), 1e-3); }

Result<std::vector<OutputDiff>> check_gpu(runtime::CudaModule& m, size_t index,
                                          const ir::KernelGraph& g, uint64_t seed,
                                          std::shared_ptr<runtime::CudaDevice> dev) {
  MG_RETURN_IF_ERROR(check_interpretable(g));
  MG_ASSIGN_OR_RETURN(GpuBuffers b, make_gpu_buffers(g, seed, dev));
  MG_RETURN_IF_ERROR(m.run(index, b.in(), b.out()));
  MG_RETURN_IF_ERROR(b.download(*dev));
  return diff_against_interpreter(g, b.host.inputs, b.host.outputs);
}

}  // namespace mugraph::driver
