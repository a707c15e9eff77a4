// Hardware descriptions as plain data: what the validator, the cost model and the code
// generators need to know about a GPU or the local CPU. Every number names its source.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/status.h"

namespace mugraph::target {

enum class Kind { kGpu, kCpu };

struct Target {
  std::string name;  // "h100", "cpu", ...
  Kind kind = Kind::kGpu;
  int sm_count = 0;                      // SMs (GPU) or cores (CPU)
  int64_t device_memory_bytes = 0;       // HBM (GPU) or RAM (CPU)
  int64_t shared_memory_per_block = 0;   // max opt-in shared memory per block (CPU: L2 per core)
  int64_t register_file_bytes_per_sm = 0;
  int max_registers_per_thread = 0;      // 32-bit registers
  double memory_bandwidth = 0;           // bytes/s
  double peak_flops_f16 = 0;             // dense FLOP/s with f32 accumulation
  double peak_flops_bf16 = 0;
  double peak_flops_f32 = 0;             // plain FP32 (no TF32)
  int sm_arch = 0;                       // compute capability * 10 (GPU only)
  // What each kernel costs before any work: the launch and the wait for the one before it on
  // the stream (GPU), or an OpenMP parallel region's fork and join (CPU).
  double kernel_launch_s = 0;
  // CPU only: the block of C the device library's matmul micro-kernel keeps in registers
  // (runtime/cpu/mugraph_cpu.h, chosen by the host's ISA as the JIT's -march=native sees it).
  int cpu_matmul_rows = 0, cpu_matmul_cols = 0;
};

const Target& a100();
const Target& h100();
const Target& h200();
// The machine this process runs on: core count and caches read from the OS, bandwidth and
// FLOP/s nominal (documented in target.cc) until the CPU backend measures them.
Target local_cpu();

std::vector<std::string> target_names();
// "a100", "h100", "h200" or "cpu"; the error lists the known names.
Result<Target> find_target(std::string_view name);

}  // namespace mugraph::target
