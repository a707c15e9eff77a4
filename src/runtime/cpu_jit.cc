#include "runtime/cpu_jit.h"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <cmath>

#include "runtime/compile_cache.h"

namespace mugraph::runtime {
namespace {

// OpenMP's worker threads outlive a module: unloading the last module would unmap libgomp
// under them (a crash when they wake). Pinned once; modules themselves may be unloaded.
void* libgomp() {
  static void* const gomp = [] {
    // libgomp reads its wait policy once, when it loads (see init_openmp in the header).
    if (std::getenv("OMP_WAIT_POLICY") == nullptr && std::getenv("GOMP_SPINCOUNT") == nullptr)
      setenv("GOMP_SPINCOUNT", "1000", 0);
    return dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
  }();
  return gomp;
}

// /proc/stat's first line: idle (idle + iowait) and total jiffies of all cores.
bool cpu_jiffies(uint64_t& idle, uint64_t& total) {
  std::ifstream f("/proc/stat");
  std::string cpu;
  uint64_t v[8] = {};
  if (!(f >> cpu) || cpu != "cpu") return false;
  for (uint64_t& x : v)
    if (!(f >> x)) return false;
  idle = v[3] + v[4];
  total = 0;
  for (uint64_t x : v) total += x;
  return true;
}

}  // namespace

int idle_cores(double window_s) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  uint64_t i0 = 0, t0 = 0, i1 = 0, t1 = 0;
  if (!cpu_jiffies(i0, t0)) return cores;
  std::this_thread::sleep_for(std::chrono::duration<double>(window_s));
  if (!cpu_jiffies(i1, t1) || t1 <= t0) return cores;
  const double idle = static_cast<double>(i1 - i0) / static_cast<double>(t1 - t0) * cores;
  return std::clamp(static_cast<int>(std::lround(idle)), 1, cores);
}

void init_openmp() { (void)libgomp(); }

void set_cpu_threads(int n) {
  using SetFn = void (*)(int);
  static const auto set = reinterpret_cast<SetFn>(libgomp() ? dlsym(libgomp(), "omp_set_num_threads") : nullptr);
  if (set == nullptr) return;
  set(n > 0 ? n : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

// Defined in the CMake-generated source that embeds runtime/cpu/mugraph_cpu.h.
extern const char* const kCpuLibraryText;

const std::string& cpu_library_source() {
  static const std::string s(kCpuLibraryText);
  return s;
}

CpuModule::~CpuModule() {
  if (handle_ != nullptr) dlclose(handle_);
}

Status CpuModule::run(size_t index, const std::vector<const void*>& in,
                      const std::vector<void*>& out) {
  if (index >= fns_.size()) return error("module has no entry #", index);
  const codegen::Module::Entry& e = module_.entries[index];
  MG_RETURN_IF_ERROR(codegen::check_entry_args(e, in.size(), out.size()));
  if (!workspaces_[index] && e.workspace_bytes > 0) {
    void* p = std::aligned_alloc(64, static_cast<size_t>((e.workspace_bytes + 63) / 64 * 64));
    if (p == nullptr) return error(e.symbol, ": cannot allocate ", e.workspace_bytes, " bytes");
    workspaces_[index].reset(static_cast<char*>(p));
  }
  fns_[index](const_cast<void* const*>(in.data()), out.data(), workspaces_[index].get());
  return {};
}

Result<double> CpuModule::time(size_t index, const std::vector<const void*>& in,
                               const std::vector<void*>& out, int runs) {
  if (Status s = run(index, in, out); !s.ok()) return s;
  std::vector<double> t;
  for (int r = 0; r < std::max(1, runs); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fns_[index](const_cast<void* const*>(in.data()), out.data(), workspaces_[index].get());
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(t.begin(), t.begin() + static_cast<long>(t.size() / 2), t.end());
  return t[t.size() / 2];
}

Result<std::unique_ptr<CpuModule>> load_cpu_module(const codegen::Module& m, const JitOptions& o) {
  CompileRequest req;
  req.what = "C++";
  req.compiler = o.compiler;
  req.install_hint = "the CPU backend compiles generated kernels with it; on Debian: apt-get install g++";
  req.flags = o.flags;
  req.headers = {{"mugraph_cpu.h", cpu_library_source()}};
  req.source = m.source;
  req.extension = ".cc";
  req.cache_dir = o.cache_dir;
  req.time_limit_s = o.time_limit_s;
  MG_ASSIGN_OR_RETURN(const Compiled c, compile_cached(req));
  std::unique_ptr<CpuModule> mod(new CpuModule());
  mod->module_ = m;
  mod->path_ = c.path;
  mod->from_cache_ = c.from_cache;
  mod->compile_seconds_ = c.seconds;
  (void)libgomp();
  mod->handle_ = dlopen(mod->path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (mod->handle_ == nullptr) return error("cannot load ", mod->path_, ": ", dlerror());
  for (const codegen::Module::Entry& e : m.entries) {
    void* f = dlsym(mod->handle_, e.symbol.c_str());
    if (f == nullptr) return error(mod->path_, " has no entry '", e.symbol, "'");
    mod->fns_.push_back(reinterpret_cast<CpuModule::EntryFn>(f));
    mod->workspaces_.emplace_back(nullptr, std::free);
  }
  return mod;
}

}  // namespace mugraph::runtime
