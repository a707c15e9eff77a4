#include "runtime/cuda_driver.h"

#include <dlfcn.h>

#include <algorithm>

namespace mugraph::runtime {
namespace {

// The driver API's ABI types (cuda.h), declared here so that mugraph needs no CUDA header to
// build: results are ints, handles opaque pointers, device pointers 64-bit integers.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using Handle = void*;
constexpr int kAttrSmCount = 16;          // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
constexpr int kAttrCcMajor = 75;          // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrCcMinor = 76;          // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
constexpr unsigned kStreamNonBlocking = 1;  // CU_STREAM_NON_BLOCKING
constexpr int kCaptureRelaxed = 2;        // CU_STREAM_CAPTURE_MODE_RELAXED

}  // namespace

struct CudaDevice::Api {
  void* lib = nullptr;
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDeviceGetCount)(int*) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(Handle*, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice) = nullptr;
  CUresult (*cuCtxSetCurrent)(Handle) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t) = nullptr;
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t) = nullptr;
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t) = nullptr;
  CUresult (*cuStreamCreate)(Handle*, unsigned) = nullptr;
  CUresult (*cuStreamDestroy)(Handle) = nullptr;
  CUresult (*cuStreamSynchronize)(Handle) = nullptr;
  CUresult (*cuEventCreate)(Handle*, unsigned) = nullptr;
  CUresult (*cuEventDestroy)(Handle) = nullptr;
  CUresult (*cuEventRecord)(Handle, Handle) = nullptr;
  CUresult (*cuEventSynchronize)(Handle) = nullptr;
  CUresult (*cuEventElapsedTime)(float*, Handle, Handle) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char**) = nullptr;
  CUresult (*cuStreamBeginCapture)(Handle, int) = nullptr;
  CUresult (*cuStreamEndCapture)(Handle, Handle*) = nullptr;
  CUresult (*cuGraphInstantiateWithFlags)(Handle*, Handle, unsigned long long) = nullptr;
  CUresult (*cuGraphLaunch)(Handle, Handle) = nullptr;
  CUresult (*cuGraphExecDestroy)(Handle) = nullptr;
  CUresult (*cuGraphDestroy)(Handle) = nullptr;

  // Resolves `name` (or, if absent, `fallback`) into `fn`; false if neither exists.
  template <class F>
  bool bind(F& fn, const char* name, const char* fallback = nullptr) {
    void* p = dlsym(lib, name);
    if (p == nullptr && fallback != nullptr) p = dlsym(lib, fallback);
    fn = reinterpret_cast<F>(p);
    return p != nullptr;
  }
  Status load() {
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr)
      return error("no NVIDIA driver: libcuda.so.1 not found (", dlerror(),
                   "); GPU execution needs an NVIDIA GPU and its driver");
    bool ok = true;
    ok &= bind(cuInit, "cuInit");
    ok &= bind(cuDeviceGetCount, "cuDeviceGetCount");
    ok &= bind(cuDeviceGet, "cuDeviceGet");
    ok &= bind(cuDeviceGetName, "cuDeviceGetName");
    ok &= bind(cuDeviceGetAttribute, "cuDeviceGetAttribute");
    ok &= bind(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    ok &= bind(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease");
    ok &= bind(cuCtxSetCurrent, "cuCtxSetCurrent");
    ok &= bind(cuCtxSynchronize, "cuCtxSynchronize");
    ok &= bind(cuMemAlloc, "cuMemAlloc_v2");
    ok &= bind(cuMemFree, "cuMemFree_v2");
    ok &= bind(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
    ok &= bind(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
    ok &= bind(cuMemsetD8, "cuMemsetD8_v2");
    ok &= bind(cuStreamCreate, "cuStreamCreate");
    ok &= bind(cuStreamDestroy, "cuStreamDestroy_v2", "cuStreamDestroy");
    ok &= bind(cuStreamSynchronize, "cuStreamSynchronize");
    ok &= bind(cuEventCreate, "cuEventCreate");
    ok &= bind(cuEventDestroy, "cuEventDestroy_v2", "cuEventDestroy");
    ok &= bind(cuEventRecord, "cuEventRecord");
    ok &= bind(cuEventSynchronize, "cuEventSynchronize");
    ok &= bind(cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime");
    ok &= bind(cuGetErrorString, "cuGetErrorString");
    ok &= bind(cuStreamBeginCapture, "cuStreamBeginCapture_v2");
    ok &= bind(cuStreamEndCapture, "cuStreamEndCapture");
    ok &= bind(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
    ok &= bind(cuGraphLaunch, "cuGraphLaunch");
    ok &= bind(cuGraphExecDestroy, "cuGraphExecDestroy");
    ok &= bind(cuGraphDestroy, "cuGraphDestroy");
    if (!ok) return error("the NVIDIA driver (libcuda.so.1) is too old: a driver API entry is missing");
    return {};
  }
};

Status CudaDevice::check(int result, const char* what) const {
  if (result == 0) return {};
  const char* msg = nullptr;
  if (api_ && api_->cuGetErrorString != nullptr) api_->cuGetErrorString(result, &msg);
  return error("CUDA driver: ", what, " failed: ", msg != nullptr ? msg : "error ", result);
}

Result<std::shared_ptr<CudaDevice>> open_cuda_device(int ordinal) {
  std::shared_ptr<CudaDevice> d(new CudaDevice());
  d->api_ = std::make_unique<CudaDevice::Api>();
  MG_RETURN_IF_ERROR(d->api_->load());
  CudaDevice::Api& a = *d->api_;
  MG_RETURN_IF_ERROR(d->check(a.cuInit(0), "cuInit (is a GPU visible to this process?)"));
  int count = 0;
  MG_RETURN_IF_ERROR(d->check(a.cuDeviceGetCount(&count), "cuDeviceGetCount"));
  if (ordinal < 0 || ordinal >= count)
    return error("no CUDA device #", ordinal, ": ", count, " device(s) present");
  MG_RETURN_IF_ERROR(d->check(a.cuDeviceGet(&d->device_, ordinal), "cuDeviceGet"));
  char name[256] = {};
  MG_RETURN_IF_ERROR(d->check(a.cuDeviceGetName(name, sizeof name, d->device_), "cuDeviceGetName"));
  d->name_ = name;
  int major = 0, minor = 0;
  MG_RETURN_IF_ERROR(d->check(a.cuDeviceGetAttribute(&major, kAttrCcMajor, d->device_), "attribute"));
  MG_RETURN_IF_ERROR(d->check(a.cuDeviceGetAttribute(&minor, kAttrCcMinor, d->device_), "attribute"));
  MG_RETURN_IF_ERROR(d->check(a.cuDeviceGetAttribute(&d->sm_count_, kAttrSmCount, d->device_), "attribute"));
  d->sm_arch_ = major * 10 + minor;
  MG_RETURN_IF_ERROR(d->check(a.cuDevicePrimaryCtxRetain(&d->context_, d->device_), "cuDevicePrimaryCtxRetain"));
  MG_RETURN_IF_ERROR(d->check(a.cuCtxSetCurrent(d->context_), "cuCtxSetCurrent"));
  MG_RETURN_IF_ERROR(d->check(a.cuStreamCreate(&d->stream_, kStreamNonBlocking), "cuStreamCreate"));
  return d;
}

CudaDevice::~CudaDevice() {
  if (!api_ || api_->lib == nullptr) return;
  if (stream_ != nullptr) api_->cuStreamDestroy(stream_);
  if (context_ != nullptr) api_->cuDevicePrimaryCtxRelease(device_);
  // libcuda stays loaded: the generated modules' runtime still refers to it.
}

Result<uint64_t> CudaDevice::alloc(size_t bytes) {
  CUdeviceptr p = 0;
  MG_RETURN_IF_ERROR(check(api_->cuMemAlloc(&p, std::max<size_t>(bytes, 1)), "cuMemAlloc"));
  return static_cast<uint64_t>(p);
}

void CudaDevice::free(uint64_t ptr) {
  if (ptr != 0) api_->cuMemFree(ptr);
}

Status CudaDevice::upload(uint64_t dst, const void* src, size_t bytes) {
  return check(api_->cuMemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD");
}

Status CudaDevice::download(void* dst, uint64_t src, size_t bytes) {
  MG_RETURN_IF_ERROR(synchronize());
  return check(api_->cuMemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH");
}

Status CudaDevice::fill_bytes(uint64_t dst, unsigned char value, size_t bytes) {
  return check(api_->cuMemsetD8(dst, value, bytes), "cuMemsetD8");
}

Status CudaDevice::synchronize() {
  MG_RETURN_IF_ERROR(check(api_->cuStreamSynchronize(stream_), "cuStreamSynchronize"));
  return check(api_->cuCtxSynchronize(), "cuCtxSynchronize");
}

Result<double> CudaDevice::time(const Launch& launch, int runs, int batch, bool use_graph) {
  MG_RETURN_IF_ERROR(launch());  // warm-up: first-call setup (cuBLAS handle, attributes)
  MG_RETURN_IF_ERROR(synchronize());
  batch = std::max(1, batch);
  Handle graph = nullptr, exec = nullptr;
  if (use_graph) {
    MG_RETURN_IF_ERROR(check(api_->cuStreamBeginCapture(stream_, kCaptureRelaxed), "cuStreamBeginCapture"));
    Status s;
    for (int i = 0; i < batch && s.ok(); ++i) s = launch();
    const Status end = check(api_->cuStreamEndCapture(stream_, &graph), "cuStreamEndCapture");
    MG_RETURN_IF_ERROR(s);
    MG_RETURN_IF_ERROR(end);
    MG_RETURN_IF_ERROR(check(api_->cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiate"));
  }
  Handle start = nullptr, stop = nullptr;
  MG_RETURN_IF_ERROR(check(api_->cuEventCreate(&start, 0), "cuEventCreate"));
  MG_RETURN_IF_ERROR(check(api_->cuEventCreate(&stop, 0), "cuEventCreate"));
  std::vector<double> samples;
  Status s;
  for (int r = 0; r < std::max(1, runs) && s.ok(); ++r) {
    s = check(api_->cuEventRecord(start, stream_), "cuEventRecord");
    if (use_graph)
      s = s.ok() ? check(api_->cuGraphLaunch(exec, stream_), "cuGraphLaunch") : s;
    else
      for (int i = 0; i < batch && s.ok(); ++i) s = launch();
    if (s.ok()) s = check(api_->cuEventRecord(stop, stream_), "cuEventRecord");
    if (s.ok()) s = check(api_->cuEventSynchronize(stop), "cuEventSynchronize");
    float ms = 0;
    if (s.ok()) s = check(api_->cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
    samples.push_back(static_cast<double>(ms) * 1e-3 / batch);
  }
  api_->cuEventDestroy(start);
  api_->cuEventDestroy(stop);
  if (exec != nullptr) api_->cuGraphExecDestroy(exec);
  if (graph != nullptr) api_->cuGraphDestroy(graph);
  MG_RETURN_IF_ERROR(s);
  std::nth_element(samples.begin(), samples.begin() + static_cast<long>(samples.size() / 2),
                   samples.end());
  return samples[samples.size() / 2];
}

Result<DeviceBuffer> DeviceBuffer::make(std::shared_ptr<CudaDevice> dev, size_t bytes) {
  DeviceBuffer b;
  MG_ASSIGN_OR_RETURN(b.ptr_, dev->alloc(bytes));
  b.bytes_ = bytes;
  b.dev_ = std::move(dev);
  return b;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (dev_) dev_->free(ptr_);
    dev_ = std::move(o.dev_);
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = 0;
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (dev_) dev_->free(ptr_);
}

}  // namespace mugraph::runtime
