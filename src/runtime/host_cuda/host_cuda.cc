#include "runtime/host_cuda/host_cuda.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstring>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "runtime/cuda_jit.h"

namespace mugraph::runtime {

// Defined in the CMake-generated source that embeds runtime/host_cuda/*.h.
extern const char* const kHostCudaPreludeText;
extern const char* const kHostCudaRuntimeText;
extern const char* const kHostCudaMainText;

namespace {

namespace fs = std::filesystem;

// The CUDA headers the generated code and the device library include: empty, since the prelude
// (force-included first) provides everything they would declare.
constexpr const char* kStubHeaders[] = {"cuda_runtime.h", "cublas_v2.h", "cuda_fp16.h",
                                        "cuda_bf16.h", "mma.h"};

Status write_file(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
  if (!f)
    return error(p.string(), ": cannot write");
  return {};
}

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Runs a shell command with stdout+stderr into `log`; the exit status.
int run_command(const std::string& cmd, const fs::path& log) {
  const int rc = std::system((cmd + " > '" + log.string() + "' 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

std::string tail(const std::string& s, size_t n) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> v;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep))
    v.push_back(cur);
  if (!s.empty() && s.back() == sep)
    v.emplace_back();
  return v;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

// A shared buffer declared by a generated kernel:
//   T* const s_x = reinterpret_cast<T*>(smem + OFF);  // [d0, d1], 2 buffers
struct SharedDecl {
  std::string name;
  int64_t begin = 0, end = 0;
};

std::vector<SharedDecl> shared_decls(const std::vector<std::string>& lines,
                                     const std::string& kernel) {
  std::vector<SharedDecl> v;
  bool in = false;
  for (const std::string& l : lines) {
    if (l.find("__global__") != std::string::npos)
      in = l.find(" " + kernel + "(") != std::string::npos;
    if (!in)
      continue;
    const size_t p = l.find("(smem + ");
    const size_t c = l.find("* const ");
    if (p == std::string::npos || c == std::string::npos)
      continue;
    SharedDecl d;
    const size_t n0 = c + 8, n1 = l.find(' ', n0);
    d.name = l.substr(n0, n1 - n0);
    d.begin = std::stoll(l.substr(p + 8));
    const std::string type = trim(l.substr(0, c));
    const int64_t elem = type == "float" ? 4 : 2;
    int64_t numel = 1;
    const size_t s0 = l.find("// ["), s1 = l.find(']', s0 == std::string::npos ? 0 : s0);
    if (s0 != std::string::npos && s1 != std::string::npos)
      for (const std::string& dim : split(l.substr(s0 + 4, s1 - s0 - 4), ','))
        numel *= std::max<int64_t>(1, std::atoll(trim(dim).c_str()));
    d.end = d.begin + numel * elem * (l.find("2 buffers") != std::string::npos ? 2 : 1);
    v.push_back(d);
  }
  return v;
}

// The runtime TU's object (cuda_host_runtime.h and cuda_host_main.h), compiled once per compiler
// and header text into <temp>/mugraph-host-cuda-cache/runtime-<hash>.o (written under a
// temporary name and renamed, so concurrent test processes never link a half-written file).
Result<std::string> runtime_object(const std::string& compiler, const std::string& cc,
                                   const fs::path& dir) {
  const size_t key = std::hash<std::string>{}(compiler + '\0' + kHostCudaPreludeText + '\0' +
                                              kHostCudaRuntimeText + '\0' + kHostCudaMainText);
  const fs::path cache = fs::temp_directory_path() / "mugraph-host-cuda-cache";
  const fs::path obj = cache / ("runtime-" + std::to_string(key) + ".o");
  if (fs::exists(obj))
    return obj.string();
  std::error_code ec;
  fs::create_directories(cache, ec);
  MG_RETURN_IF_ERROR(write_file(dir / "runtime.cc", "#include \"cuda_host_main.h\"\n"));
  const fs::path tmp = dir / "runtime.o";
  const int rc = run_command("cd '" + dir.string() + "' && " + cc + "-c runtime.cc -o runtime.o",
                             dir / "runtime.log");
  if (rc != 0)
    return error("compiling the host CUDA runtime failed (", compiler, ", exit ", rc, "):\n",
                 tail(read_text(dir / "runtime.log"), 4000));
  const fs::path staged =
      cache / ("runtime-" + std::to_string(key) + "." + std::to_string(getpid()) + ".tmp");
  fs::copy_file(tmp, staged, fs::copy_options::overwrite_existing, ec);
  if (!ec)
    fs::rename(staged, obj, ec);
  return ec ? tmp.string() : obj.string();
}

}  // namespace

int64_t max_dynamic_shared_memory(int arch) { return arch >= 90 ? 227 * 1024 : 163 * 1024; }

std::string rewrite_launches(const std::string& src) {
  std::string out;
  size_t pos = 0;
  for (size_t at; (at = src.find("<<<", pos)) != std::string::npos;) {
    size_t b = at;
    while (b > pos && (std::isalnum(static_cast<unsigned char>(src[b - 1])) || src[b - 1] == '_'))
      --b;
    const size_t close = src.find(">>>", at);
    if (b == at || close == std::string::npos) {  // not a launch: copy through
      out += src.substr(pos, at + 3 - pos);
      pos = at + 3;
      continue;
    }
    const std::string name = src.substr(b, at - b);
    out += src.substr(pos, b - pos);
    out += "::mg_host::launch_config(" + name + ", \"" + name + "\", " +
           src.substr(at + 3, close - at - 3) + ")";
    pos = close + 3;
  }
  return out + src.substr(pos);
}

std::string HostCudaFinding::to_string() const {
  std::ostringstream s;
  s << kind << " in " << kernel << " block (" << block << ") thread " << thread;
  if (other_thread >= 0)
    s << " vs thread " << other_thread;
  if (!space.empty())
    s << ", " << space << " " << (buffer.empty() ? "?" : buffer) << " +" << offset;
  if (!op.empty())
    s << ", op '" << op << "'";
  if (line > 0)
    s << " (generated line " << line << ")";
  if (!detail.empty())
    s << ": " << detail;
  if (count > 1)
    s << " [" << count << " times]";
  return s.str();
}

std::string HostCudaRun::report() const {
  std::string r;
  for (const HostCudaFinding& f : findings)
    r += f.to_string() + "\n";
  if (dropped > 0)
    r += std::to_string(dropped) + " more findings not listed\n";
  return r;
}

HostCudaModule::~HostCudaModule() {
  if (remove_dir_) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

Result<std::unique_ptr<HostCudaModule>> compile_host_cuda(const codegen::Module& m,
                                                          const HostCudaOptions& o) {
  std::unique_ptr<HostCudaModule> mod(new HostCudaModule());
  mod->module_ = m;
  mod->options_ = o;
  fs::path dir = o.work_dir;
  if (dir.empty()) {
    std::random_device rd;
    dir = fs::temp_directory_path() /
          ("mugraph-host-cuda-" + std::to_string(getpid()) + "-" + std::to_string(rd()));
    mod->remove_dir_ = !o.keep_files;
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return error(dir.string(), ": cannot create: ", ec.message());
  mod->dir_ = dir.string();
  for (const auto& [name, text] : device_library_files())
    MG_RETURN_IF_ERROR(write_file(dir / name, text));
  for (const char* h : kStubHeaders)
    MG_RETURN_IF_ERROR(write_file(dir / h, "// provided by cuda_host.h (runtime/host_cuda)\n"));
  MG_RETURN_IF_ERROR(write_file(dir / "cuda_host.h", kHostCudaPreludeText));
  MG_RETURN_IF_ERROR(write_file(dir / "cuda_host_runtime.h", kHostCudaRuntimeText));
  MG_RETURN_IF_ERROR(write_file(dir / "cuda_host_main.h", kHostCudaMainText));
  const std::string source = rewrite_launches(m.source);
  mod->source_path_ = (dir / "kernel.cu").string();
  MG_RETURN_IF_ERROR(write_file(dir / "kernel.cu", source));
  mod->source_lines_ = split(source, '\n');
  // The entry table: a small TU per module. The runtime TU is the same for every module: built
  // once per compiler and prelude into a cache next to the work dirs.
  std::string entries = "using EntryFn = int (*)(void* const*, void* const*, void*, void*);\n";
  std::string table;
  for (const codegen::Module::Entry& e : m.entries) {
    entries += "extern \"C\" int " + e.symbol + "(void* const*, void* const*, void*, void*);\n";
    table += e.symbol + ", ";
  }
  entries += "extern \"C\" const EntryFn mg_host_entries[] = {" + table + "nullptr};\n";
  entries +=
      "extern \"C\" const int mg_host_entry_count = " + std::to_string(m.entries.size()) + ";\n";
  MG_RETURN_IF_ERROR(write_file(dir / "entries.cc", entries));
  const std::string q = "'" + dir.string() + "'";
  const std::string cc = "'" + o.compiler + "' -std=c++17 -O1 -g -I" + q + " ";
  const auto t0 = std::chrono::steady_clock::now();
  MG_ASSIGN_OR_RETURN(const std::string runtime_o, runtime_object(o.compiler, cc, dir));
  // -O1: the instrumentation needs an optimizing build to be cheap, and -O1 keeps the line
  // table precise enough to name the op; -fsanitize=thread only instruments (no runtime is
  // linked: cuda_host_runtime.h defines the hooks); -no-pie makes backtrace addresses the
  // ones addr2line reads.
  const std::string cmd = "cd " + q + " && " + cc +
                          "-DMG_HOST_CUDA_ARCH=" + std::to_string(o.arch * 10) +
                          " -fsanitize=thread -include cuda_host.h -x c++ -c kernel.cu -o kernel.o"
                          " && " +
                          cc + "-c entries.cc -o entries.o && '" + o.compiler +
                          "' -no-pie kernel.o entries.o '" + runtime_o + "' -o harness";
  const int rc = run_command(cmd, dir / "compile.log");
  mod->compile_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rc != 0)
    return error("compiling generated CUDA for the host harness failed (", o.compiler, ", exit ",
                 rc, "); source ", mod->source_path_, ":\n",
                 tail(read_text(dir / "compile.log"), 4000));
  mod->exe_ = (dir / "harness").string();
  return mod;
}

namespace {

// file:line of each address (the outermost inline frame in kernel.cu first), via addr2line.
std::map<std::string, int>
kernel_lines(const std::string& exe, const std::vector<std::string>& addrs, const fs::path& dir) {
  std::map<std::string, int> lines;
  if (addrs.empty())
    return lines;
  std::string cmd = "addr2line -a -i -e '" + exe + "'";
  for (const std::string& a : addrs)
    cmd += " " + a;
  run_command(cmd, dir / "addr2line.log");
  // Each address is followed by its inline chain, innermost first: the last location is the
  // function the address is in, which must be in kernel.cu (the generated code itself).
  std::string cur, last;
  auto flush = [&] {
    const size_t k = last.find("kernel.cu:");
    if (!cur.empty() && k != std::string::npos)
      lines[cur] = std::atoi(last.c_str() + k + 10);
  };
  for (const std::string& l : split(read_text(dir / "addr2line.log"), '\n')) {
    if (l.rfind("0x", 0) == 0) {
      flush();
      cur = l;
      last.clear();
    } else if (!l.empty()) {
      last = l;
    }
  }
  flush();
  return lines;
}

std::string hex(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%016llx", static_cast<unsigned long long>(v));
  return b;
}

}  // namespace

Result<HostCudaRun> HostCudaModule::run(size_t index, const ir::KernelGraph& g,
                                        const std::vector<Buffer>& in,
                                        std::vector<Buffer>& out) const {
  if (index >= module_.entries.size())
    return error("module has no entry #", index);
  const codegen::Module::Entry& e = module_.entries[index];
  MG_RETURN_IF_ERROR(codegen::check_entry_args(e, in.size(), out.size()));
  const fs::path dir = dir_;
  std::ostringstream spec;
  spec << "entry " << index << "\nmax_smem " << max_dynamic_shared_memory(options_.arch) << "\n";
  for (size_t i = 0; i < in.size(); ++i) {
    const fs::path p = dir / ("in" + std::to_string(i) + ".bin");
    MG_RETURN_IF_ERROR(
        write_file(p, std::string(static_cast<const char*>(in[i].data()), in[i].bytes())));
    spec << "in " << codegen::identifier(g.tensor(g.inputs[i]).name) << " " << in[i].bytes() << " "
         << p.string() << "\n";
  }
  for (size_t i = 0; i < out.size(); ++i)
    spec << "out " << codegen::identifier(g.tensor(g.outputs[i]).name) << " " << out[i].bytes()
         << " " << (dir / ("out" + std::to_string(i) + ".bin")).string() << "\n";
  spec << "ws " << e.workspace_bytes << "\n";
  const codegen::EntryBinding b = codegen::bind_entry(g);
  for (size_t t = 0; t < b.tensors.size(); ++t)
    if (b.tensors[t].from == codegen::EntryBinding::From::kWorkspace) {
      const ir::Tensor& tt = g.tensors[t];
      const int64_t bytes = tt.type.shape.numel() * ir::dtype_bytes(tt.type.dtype);
      spec << "wsname " << codegen::identifier(tt.name) << " " << b.tensors[t].index << " " << bytes
           << "\n";
    }
  MG_RETURN_IF_ERROR(write_file(dir / "spec.txt", spec.str()));
  const int rc =
      run_command("'" + exe_ + "' '" + (dir / "spec.txt").string() + "'", dir / "run.log");
  const std::string log = read_text(dir / "run.log");
  if (rc != 0)
    return error("the host harness failed (exit ", rc, "):\n", tail(log, 4000));
  HostCudaRun r;
  bool done = false;
  std::vector<std::vector<std::string>> raw;
  for (const std::string& l : split(log, '\n')) {
    const std::vector<std::string> f = split(l, '\t');
    if (f.empty())
      continue;
    if (f[0] == "entry_rc" && f.size() >= 2) {
      r.entry_rc = std::atoi(f[1].c_str());
      done = true;
    } else if (f[0] == "stats" && f.size() >= 8) {
      r.barriers = std::atoll(f[1].c_str());
      r.cp_async_copies = std::atoll(f[2].c_str());
      r.wmma_mmas = std::atoll(f[3].c_str());
      r.shuffles = std::atoll(f[4].c_str());
      r.wmma_fragment_loads = std::atoll(f[5].c_str());
      r.wmma_bank_conflicts = std::atoll(f[6].c_str());
      r.wmma_accumulator_transfers = std::atoll(f[7].c_str());
    } else if (f[0] == "dropped" && f.size() >= 2) {
      r.dropped = std::atoll(f[1].c_str());
    } else if (f[0] == "finding" && f.size() >= 13) {
      raw.push_back(f);
    }
  }
  if (!done)
    return error("the host harness printed no result:\n", tail(log, 4000));
  // Return addresses -> the call instruction (address - 1) -> kernel.cu line.
  std::vector<std::string> addrs;
  for (const auto& f : raw)
    for (const std::string& a : split(f[12], ','))
      if (!a.empty())
        addrs.push_back(hex(std::stoull(a, nullptr, 16) - 1));
  const std::map<std::string, int> lines = kernel_lines(exe_, addrs, dir);
  for (const auto& f : raw) {
    HostCudaFinding x;
    x.kind = f[1];
    x.kernel = f[2];
    x.block = f[3];
    x.thread = std::atoi(f[4].c_str());
    x.other_thread = std::atoi(f[5].c_str());
    x.space = f[6];
    x.buffer = f[7];
    x.offset = std::atoll(f[8].c_str());
    x.count = std::atoll(f[10].c_str());
    x.detail = f[11];
    for (const std::string& a : split(f[12], ',')) {
      if (a.empty())
        continue;
      auto it = lines.find(hex(std::stoull(a, nullptr, 16) - 1));
      if (it != lines.end()) {
        x.line = it->second;
        break;
      }
    }
    for (int l = x.line - 1; l >= 1 && l <= static_cast<int>(source_lines_.size()); --l) {
      const std::string t = trim(source_lines_[static_cast<size_t>(l - 1)]);
      if (t.rfind("__global__", 0) == 0)
        break;
      if (t.rfind("// ", 0) == 0 && t.find("prefetch") == std::string::npos &&
          t.find("first tiles") == std::string::npos) {
        x.op = t.substr(3);
        break;
      }
    }
    if (x.space == "shared") {
      std::string names;
      for (const SharedDecl& d : shared_decls(source_lines_, x.kernel))
        if (x.offset >= d.begin && x.offset < d.end)
          names += (names.empty() ? "" : " / ") + d.name;
      x.buffer = names.empty() ? "smem" : names;
    }
    r.findings.push_back(std::move(x));
  }
  for (size_t i = 0; i < out.size(); ++i) {
    const std::string bytes = read_text(dir / ("out" + std::to_string(i) + ".bin"));
    if (bytes.size() != out[i].bytes())
      return error("the host harness wrote no output #", i);
    std::memcpy(out[i].data(), bytes.data(), bytes.size());
  }
  return r;
}

}  // namespace mugraph::runtime
