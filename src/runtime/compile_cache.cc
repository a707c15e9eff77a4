#include "runtime/compile_cache.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "support/hash.h"

namespace mugraph::runtime {
namespace fs = std::filesystem;
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

// A temporary file name's suffix unique to this process and call: threads of one process may
// compile (and write the shared headers) at the same time.
std::string tmp_suffix() {
  static std::atomic<uint64_t> next{0};
  return ".tmp" + std::to_string(getpid()) + "." + std::to_string(next++);
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

// Writes `text` to `p` through a temporary name (readers never see half a file).
Status write_atomically(const fs::path& p, const std::string& text) {
  const fs::path tmp = p.string() + tmp_suffix();
  MG_RETURN_IF_ERROR(write_file(tmp, text));
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec) return error("cannot move ", tmp.string(), " to ", p.string(), ": ", ec.message());
  return {};
}

// Writes `text` to `p` unless it is there.
Status write_once(const fs::path& p, const std::string& text) {
  return fs::exists(p) ? Status{} : write_atomically(p, text);
}

}  // namespace

Result<Compiled> compile_cached(const CompileRequest& r) {
  if (r.cache_dir.empty()) return error(r.what, " JIT: no cache directory given");
  const auto [vrc, version] = shell(quote(r.compiler) + " --version");
  if (vrc != 0)
    return error(r.what, " compiler '", r.compiler, "' not found or not working (",
                 r.install_hint, "): ", tail(version, 300));
  std::string flags, link;
  for (const std::string& f : r.flags) flags += " " + quote(f);
  for (const std::string& f : r.link_flags) link += " " + quote(f);
  // The version's last non-empty line names the release for both g++ and nvcc.
  std::string v = version;
  while (!v.empty() && v.back() == '\n') v.pop_back();
  const std::string version_line = v.substr(v.find_last_of('\n') + 1);
  uint64_t lib_hash = fnv1a64("headers");
  for (const auto& [name, text] : r.headers) lib_hash = fnv1a64(text, fnv1a64(name, lib_hash));
  const uint64_t key =
      fnv1a64(link, fnv1a64(flags, fnv1a64(version_line, fnv1a64(r.source, lib_hash))));
  std::error_code ec;
  const fs::path dir(r.cache_dir), inc = dir / ("include-" + hex(lib_hash));
  fs::create_directories(inc, ec);
  if (ec) return error("cannot create cache directory ", inc.string(), ": ", ec.message());
  Compiled c;
  c.path = (dir / (hex(key) + ".so")).string();
  if (fs::exists(c.path)) {
    c.from_cache = true;
    return c;
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& [name, text] : r.headers) MG_RETURN_IF_ERROR(write_once(inc / name, text));
  const fs::path src = dir / (hex(key) + r.extension);
  MG_RETURN_IF_ERROR(write_atomically(src, r.source));
  const std::string tmp = c.path + tmp_suffix();
  // Under a time limit the compiler runs under coreutils' timeout (TERM, then KILL 2 s later).
  const std::string limit =
      r.time_limit_s > 0 ? "timeout -k 2 " + std::to_string(std::max(0.1, r.time_limit_s)) + " " : "";
  const auto [rc, log] = shell(limit + quote(r.compiler) + flags + " -I" + quote(inc.string()) + " " +
                               quote(src.string()) + " -o " + quote(tmp) + link);
  if (rc != 0) fs::remove(tmp, ec);  // a killed or failed compiler's partial output
  if (rc != 0 && !limit.empty() && (rc == 124 || rc == 137 || rc == -1))
    return error("compiling generated ", r.what, " code was stopped by its time limit (",
                 r.time_limit_s, " s; the time budget)");
  if (rc != 0)
    return error("compiling generated ", r.what, " code failed (", src.string(), "):\n",
                 tail(log, 2000));
  fs::rename(tmp, c.path, ec);
  if (ec) return error("cannot move ", tmp, " into the cache: ", ec.message());
  c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return c;
}

}  // namespace mugraph::runtime
