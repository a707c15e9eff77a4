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

#include "support/hash.h"

namespace mugraph::runtime {
namespace fs = std::filesystem;

// Defined in the CMake-generated source that embeds runtime/cpu/mugraph_cpu.h.
extern const char* const kCpuLibraryText;

namespace {

// Single-quotes `s` for /bin/sh.
std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs a shell command; returns its exit status and its combined output.
std::pair<int, std::string> shell(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return {-1, "popen failed"};
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string tail(const std::string& s, size_t n) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

Status write_file(const fs::path& p, const std::string& text) {
  std::ofstream f(p);
  f << text;
  f.close();
  if (!f) return error("cannot write ", p.string());
  return {};
}

}  // namespace

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
  if (static_cast<int>(in.size()) != e.num_inputs || static_cast<int>(out.size()) != e.num_outputs)
    return error(e.symbol, " takes ", e.num_inputs, " inputs and ", e.num_outputs, " outputs, ",
                 in.size(), " and ", out.size(), " given");
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
  if (o.cache_dir.empty()) return error("CPU JIT: no cache directory given");
  const auto [vrc, version] = shell(quote(o.compiler) + " --version");
  if (vrc != 0)
    return error("C++ compiler '", o.compiler, "' not found or not working (the CPU backend ",
                 "compiles generated kernels with it; on Debian: apt-get install g++): ",
                 tail(version, 300));
  std::string flags;
  for (const std::string& f : o.flags) flags += " " + quote(f);
  const std::string first_line = version.substr(0, version.find('\n'));
  const uint64_t lib_hash = fnv1a64(cpu_library_source());
  const uint64_t key = fnv1a64(flags, fnv1a64(first_line, fnv1a64(m.source, lib_hash)));
  std::error_code ec;
  const fs::path dir(o.cache_dir), inc = dir / ("include-" + hex(lib_hash));
  fs::create_directories(inc, ec);
  if (ec) return error("cannot create cache directory ", inc.string(), ": ", ec.message());

  std::unique_ptr<CpuModule> mod(new CpuModule());
  mod->module_ = m;
  mod->path_ = (dir / (hex(key) + ".so")).string();
  const auto t0 = std::chrono::steady_clock::now();
  if (fs::exists(mod->path_)) {
    mod->from_cache_ = true;
  } else {
    const fs::path src = dir / (hex(key) + ".cc");
    const fs::path header = inc / "mugraph_cpu.h";
    if (!fs::exists(header)) {
      const fs::path tmp = inc / ("mugraph_cpu.h.tmp" + std::to_string(getpid()));
      if (Status s = write_file(tmp, cpu_library_source()); !s.ok()) return s;
      fs::rename(tmp, header, ec);
    }
    if (Status s = write_file(src, m.source); !s.ok()) return s;
    const std::string tmp = mod->path_ + ".tmp" + std::to_string(getpid());
    const auto [rc, log] = shell(quote(o.compiler) + flags + " -I" + quote(inc.string()) + " " +
                                 quote(src.string()) + " -o " + quote(tmp));
    if (rc != 0)
      return error("compiling generated CPU code failed (", src.string(), "):\n", tail(log, 2000));
    fs::rename(tmp, mod->path_, ec);
    if (ec) return error("cannot move ", tmp, " into the cache: ", ec.message());
  }
  mod->compile_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // OpenMP's worker threads outlive a module: unloading the last module would unmap libgomp
  // under them (a crash when they wake). Pin it once; modules themselves may be unloaded.
  static void* const gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
  (void)gomp;
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
