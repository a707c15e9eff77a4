// The GPU as the runtime sees it, through the CUDA driver API. libcuda.so.1 is opened at run
// time (dlopen), so mugraph builds, runs and passes its tests on machines without an NVIDIA
// driver: there, open_cuda_device() returns a clear error instead of failing to start.
//
// The generated modules use the CUDA runtime API (kernel launches, cuBLAS), which attaches to
// the device's primary context: CudaDevice retains that same context and makes it current.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "support/status.h"

namespace mugraph::runtime {

class CudaDevice {
 public:
  ~CudaDevice();
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  const std::string& name() const { return name_; }
  int sm_arch() const { return sm_arch_; }    // compute capability * 10, e.g. 90
  int sm_count() const { return sm_count_; }
  void* stream() const { return stream_; }    // a non-blocking stream (CUstream)

  // Device memory: allocation, copies (synchronous), fill with a byte.
  Result<uint64_t> alloc(size_t bytes);
  void free(uint64_t ptr);
  Status upload(uint64_t dst, const void* src, size_t bytes);
  Status download(void* dst, uint64_t src, size_t bytes);
  Status fill_bytes(uint64_t dst, unsigned char value, size_t bytes);
  Status synchronize();

  // Times `launch` (which enqueues work on stream()) with CUDA events: one warm-up call, then
  // `runs` samples of `batch` calls each; returns the median per-call seconds. With
  // `use_graph`, the batch is captured once into a CUDA graph and the graph is launched.
  using Launch = std::function<Status()>;
  Result<double> time(const Launch& launch, int runs, int batch, bool use_graph);

 private:
  friend Result<std::shared_ptr<CudaDevice>> open_cuda_device(int ordinal);
  CudaDevice() = default;
  Status check(int result, const char* what) const;
  struct Api;
  std::unique_ptr<Api> api_;
  std::string name_;
  int sm_arch_ = 0, sm_count_ = 0;
  int device_ = 0;
  void* context_ = nullptr;
  void* stream_ = nullptr;
};

// Opens GPU `ordinal`. Errors: no driver ("no NVIDIA driver: libcuda.so.1 not found"), driver
// initialization failure, no such device.
Result<std::shared_ptr<CudaDevice>> open_cuda_device(int ordinal = 0);

// A device allocation owned by RAII.
class DeviceBuffer {
 public:
  static Result<DeviceBuffer> make(std::shared_ptr<CudaDevice> dev, size_t bytes);
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  ~DeviceBuffer();
  uint64_t ptr() const { return ptr_; }
  void* data() const { return reinterpret_cast<void*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  DeviceBuffer() = default;
  std::shared_ptr<CudaDevice> dev_;
  uint64_t ptr_ = 0;
  size_t bytes_ = 0;
};

}  // namespace mugraph::runtime
