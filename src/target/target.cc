#include "target/target.h"

#include <unistd.h>

#include <thread>

namespace mugraph::target {
namespace {

constexpr int64_t kKiB = 1024, kGiB = 1024 * 1024 * 1024;
// A kernel launch on a stream, including the dependency on the previous kernel: a few
// microseconds (CUDA graphs shave it to about one); 2 us here. An OpenMP parallel region's
// fork and join on a few cores: about a microsecond.
constexpr double kLaunchGpu = 2e-6, kLaunchCpu = 1e-6;

}  // namespace

const Target& a100() {
  // NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), SXM4 80GB:
  // 108 SMs; 164 KB shared memory per SM, of which one block may opt in to at most 163 KB
  // (CUDA C Programming Guide, compute capability 8.0 table: 1 KB per SM is reserved for the
  // system; cudaFuncSetAttribute fails above 166912 bytes); 256 KB register file per SM and at
  // most 255 registers per thread (same table);
  // 2,039 GB/s HBM2e (A100 80GB datasheet); 312 TFLOP/s dense FP16/BF16 tensor core,
  // 19.5 TFLOP/s FP32.
  static const Target t{"a100", Kind::kGpu, 108, 80 * kGiB, 163 * kKiB, 256 * kKiB, 255,
                        2039e9, 312e12, 312e12, 19.5e12, 80, kLaunchGpu};
  return t;
}

const Target& h100() {
  // NVIDIA H100 Tensor Core GPU datasheet / Hopper whitepaper (2022), SXM5 80GB:
  // 132 SMs; up to 227 KB shared memory per block (CUDA guide, compute capability 9.0);
  // 256 KB register file per SM, 255 registers per thread; 3.35 TB/s HBM3;
  // 989.4 TFLOP/s dense FP16/BF16 tensor core, 66.9 TFLOP/s FP32.
  static const Target t{"h100", Kind::kGpu, 132, 80 * kGiB, 227 * kKiB, 256 * kKiB, 255,
                        3.35e12, 989.4e12, 989.4e12, 66.9e12, 90, kLaunchGpu};
  return t;
}

const Target& h200() {
  // NVIDIA H200 Tensor Core GPU datasheet (2024), SXM 141GB: same GH100 die as H100 SXM (132
  // SMs, 227 KB shared memory per block, 256 KB registers per SM, same peak FLOP/s) with 141 GB
  // of HBM3e at 4.8 TB/s.
  static const Target t{"h200", Kind::kGpu, 132, 141LL * 1000 * 1000 * 1000, 227 * kKiB,
                        256 * kKiB, 255, 4.8e12, 989.4e12, 989.4e12, 66.9e12, 90, kLaunchGpu};
  return t;
}

Target local_cpu() {
  Target t;
  t.name = "cpu";
  t.kind = Kind::kCpu;
  // Cores and RAM from the OS (sysconf / std::thread).
  t.sm_count = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  t.device_memory_bytes = pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : 8 * kGiB;
  // A block's "shared memory" on a CPU is the per-core L2 cache (sysconf where glibc knows it,
  // else 1 MiB, common on current x86 server cores).
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  t.shared_memory_per_block = l2 > 0 ? l2 : 1024 * kKiB;
  // "Registers": 16 AVX2 registers of 8 floats per core = 512 B; thread graphs on the CPU are
  // fused loops, so allow the same per-thread budget as a GPU.
  t.register_file_bytes_per_sm = 512;
  t.max_registers_per_thread = 255;
  // Nominal, not measured: ~10 GB/s of DRAM bandwidth per core and 2 AVX2 FMA units at ~2.5 GHz
  // (2 units x 8 lanes x 2 FLOP x 2.5e9 = 80 GFLOP/s f32 per core). f16/bf16 are converted to
  // f32 for compute, so they share the f32 peak.
  t.memory_bandwidth = 10e9 * t.sm_count;
  t.peak_flops_f32 = 80e9 * t.sm_count;
  t.peak_flops_f16 = t.peak_flops_bf16 = t.peak_flops_f32;
  t.kernel_launch_s = kLaunchCpu;
  // The micro-kernel: 8 x 32 with AVX-512, else 4 x 16 (AVX2+FMA, or plain loops).
#if defined(__x86_64__)
  const bool avx512 = __builtin_cpu_supports("avx512f");
#else
  const bool avx512 = false;
#endif
  t.cpu_matmul_rows = avx512 ? 8 : 4;
  t.cpu_matmul_cols = avx512 ? 32 : 16;
  return t;
}

std::vector<std::string> target_names() { return {"a100", "h100", "h200", "cpu"}; }

Result<Target> find_target(std::string_view name) {
  if (name == "a100") return a100();
  if (name == "h100") return h100();
  if (name == "h200") return h200();
  if (name == "cpu") return local_cpu();
  return error("unknown target '", name, "' (known: a100, h100, h200, cpu)");
}

}  // namespace mugraph::target
