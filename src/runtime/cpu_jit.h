// The CPU runtime: compiles a generated module (codegen/cpu) with the system C++ compiler into a
// shared object, caches it on disk, loads it with dlopen and runs or times its entries.
//
// Cache: <cache_dir>/<key>.so where key = FNV-1a of (source, device library, compiler version
// line, flags); a second compile of the same source is a dlopen. Objects are written to a
// temporary name and renamed, so concurrent processes never load a half-written file.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codegen/emitter.h"

namespace mugraph::runtime {

struct JitOptions {
  std::string compiler = "c++";
  // -O3 -march=native: the kernels are built for this machine and never shipped; -fopenmp: the
  // grid and kernel-level loops are OpenMP loops; -fno-math-errno: sqrt/exp never set errno,
  // so loops that call them vectorize (IEEE results are unchanged; no -ffast-math).
  std::vector<std::string> flags = {"-std=c++20", "-O3", "-march=native", "-fopenmp",
                                    "-fno-math-errno", "-fPIC", "-shared"};
  std::string cache_dir;  // required; created if missing
  double time_limit_s = 0;  // > 0: a compile longer than this fails (the time budget)
};

// The device library header text (runtime/cpu/mugraph_cpu.h), as the generated code includes it.
const std::string& cpu_library_source();

// Cores other processes leave idle now: the idle share of all cores in /proc/stat over
// `window_s` (this thread sleeps meanwhile) times the core count, rounded, at least 1 (the core
// count when /proc/stat cannot be read). A team of OpenMP threads larger than this waits at every
// barrier for a thread that shares its core with a busy neighbour (a 10x collapse on 2 cores).
int idle_cores(double window_s = 0.1);

// The OpenMP team size of the modules' parallel regions started from this thread (0: one per
// core, OpenMP's default). Applies to every CpuModule (libgomp is shared by all).
void set_cpu_threads(int n);

// Loads libgomp for the modules (once; the first module load does it too). Unless the user set
// OMP_WAIT_POLICY or GOMP_SPINCOUNT, idle OpenMP threads spin 1000 rounds before they sleep,
// not libgomp's 300000: a thread spinning at a barrier on a core another process also runs on
// steals the time its team waits for (measured on the unfused RMSNorm+MatMul, 2 threads, one
// core busy with `yes`: median 6.3 ms and p90 16 ms with libgomp's default, 4.9 / 5.1 ms with
// 1000; 2.35 vs 2.39 ms on a quiet machine; bench/cpu/busy_neighbour.py). It sets the variable
// in this process's environment, so call it before starting threads (the CLI's main and the
// Python module's import do).
void init_openmp();

class CpuModule {
 public:
  CpuModule(const CpuModule&) = delete;
  CpuModule& operator=(const CpuModule&) = delete;
  ~CpuModule();

  // Runs entry `index` (module().entries order) on device buffers: `in` and `out` hold one
  // pointer per graph input / output, in the storage type and layout of the graph's tensors.
  Status run(size_t index, const std::vector<const void*>& in, const std::vector<void*>& out);
  // Median wall time in seconds of `runs` calls after one warm-up call (which also sizes the
  // per-thread arenas and faults in the workspace).
  Result<double> time(size_t index, const std::vector<const void*>& in,
                      const std::vector<void*>& out, int runs);

  const codegen::Module& module() const { return module_; }
  const std::string& path() const { return path_; }
  bool from_cache() const { return from_cache_; }
  double compile_seconds() const { return compile_seconds_; }

 private:
  friend Result<std::unique_ptr<CpuModule>> load_cpu_module(const codegen::Module&,
                                                            const JitOptions&);
  CpuModule() = default;
  using EntryFn = void (*)(void* const*, void* const*, char*);
  codegen::Module module_;
  std::string path_;
  void* handle_ = nullptr;
  std::vector<EntryFn> fns_;
  std::vector<std::unique_ptr<char, void (*)(void*)>> workspaces_;
  bool from_cache_ = false;
  double compile_seconds_ = 0;
};

// Compiles (or finds in the cache) and loads `m`. Errors: no compiler ("C++ compiler 'c++' not
// found ..."), a compile failure (with the tail of the compiler's output and the source path),
// a load failure (dlerror), a missing entry symbol.
Result<std::unique_ptr<CpuModule>> load_cpu_module(const codegen::Module& m, const JitOptions& o);

}  // namespace mugraph::runtime
