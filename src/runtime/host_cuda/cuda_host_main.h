// The main() of a host CUDA harness executable (the runtime is cuda_host_runtime.h): loads the
// spec file's buffers, calls one of the module's entries, and prints its return code, the
// checker's findings and counters, then writes the outputs. Included after cuda_host_runtime.h
// by the runtime TU that the harness (host_cuda.cc) compiles once per compiler.
//
// Spec file (argv[1]), one directive per line:
//   entry <index>            which of the module's entries to call
//   max_smem <bytes>         the device's opt-in dynamic shared memory limit
//   in|out <name> <bytes> <path>   a device buffer (inputs are read from path, outputs written)
//   ws <bytes>               the workspace; `wsname <name> <offset> <bytes>` names parts of it
#pragma once

#include "cuda_host_runtime.h"

namespace mg_host::rt {

using EntryFn = int (*)(void* const*, void* const*, void*, void*);
}  // namespace mg_host::rt
extern "C" unsigned char* mg_host_kernel_smem(size_t* bytes);  // cuda_host.h, kernel TU
// The module's entries, in Module::entries order (a small TU the harness writes per module).
extern "C" const mg_host::rt::EntryFn mg_host_entries[];
extern "C" const int mg_host_entry_count;
namespace mg_host::rt {

MG_HOST_NOINSTR inline unsigned char* alloc_buffer(const std::string& name, size_t bytes,
                                                   bool input) {
  const size_t rounded = (bytes + 255) / 256 * 256;
  auto* raw = static_cast<unsigned char*>(std::aligned_alloc(256, rounded + 2 * kRedZone));
  unsigned char* data = raw + kRedZone;
  const uintptr_t d = reinterpret_cast<uintptr_t>(data);
  g.regions.push_back({d - kRedZone, d, name, true, d, input, {}});
  g.regions.push_back({d, d + bytes, name, false, d, input, {}});
  g.regions.back().tag.assign(bytes, 0);
  g.regions.push_back({d + bytes, d + rounded + kRedZone, name, true, d, input, {}});
  g.glob_lo = std::min(g.glob_lo, d - kRedZone);
  g.glob_hi = std::max(g.glob_hi, d + rounded + kRedZone);
  std::memset(raw, 0xFF, rounded + 2 * kRedZone);
  return data;
}

MG_HOST_NOINSTR inline std::string clean(std::string s) {
  for (char& c : s)
    if (c == '\t' || c == '\n')
      c = ' ';
  return s;
}

MG_HOST_NOINSTR inline int main(int argc, char** argv, const EntryFn* entries, int count) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s SPEC\n", argv[0]);
    return 2;
  }
  std::ifstream spec(argv[1]);
  std::string line;
  int entry = -1;
  struct Buf {
    bool out;
    std::string name, path;
    size_t bytes;
    unsigned char* data;
  };
  std::vector<Buf> bufs;
  void* ws = nullptr;
  while (std::getline(spec, line)) {
    std::istringstream in(line);
    std::string key;
    in >> key;
    if (key == "entry") {
      in >> entry;
    } else if (key == "max_smem") {
      in >> g.max_smem;
    } else if (key == "in" || key == "out") {
      Buf b{key == "out", "", "", 0, nullptr};
      in >> b.name >> b.bytes >> b.path;
      b.data = alloc_buffer(b.name, b.bytes, !b.out);
      if (!b.out) {
        std::ifstream f(b.path, std::ios::binary);
        f.read(reinterpret_cast<char*>(b.data), static_cast<std::streamsize>(b.bytes));
        if (!f) {
          std::fprintf(stderr, "cannot read %s\n", b.path.c_str());
          return 2;
        }
      }
      bufs.push_back(b);
    } else if (key == "ws") {
      size_t bytes = 0;
      in >> bytes;
      if (bytes > 0) {
        ws = alloc_buffer("workspace", bytes, false);
        g.ws_data = reinterpret_cast<uintptr_t>(ws);
      }
    } else if (key == "wsname") {
      std::string name;
      uint64_t off = 0, bytes = 0;
      in >> name >> off >> bytes;
      g.ws_names.push_back({{off, bytes}, name});
    }
  }
  if (entry < 0 || entry >= count) {
    std::fprintf(stderr, "bad entry %d (module has %d)\n", entry, count);
    return 2;
  }
  std::sort(g.regions.begin(), g.regions.end(),
            [](const Region& a, const Region& b) { return a.begin < b.begin; });
  g.smem = mg_host_kernel_smem(&g.smem_capacity);
  g.cells.assign(g.smem_capacity, Cell{});
  std::vector<void*> in, out;
  for (const Buf& b : bufs)
    (b.out ? out : in).push_back(b.data);
  const int rc = entries[entry](in.data(), out.data(), ws, nullptr);
  std::printf("entry_rc\t%d\n", rc);
  for (const Finding& f : g.findings) {
    std::printf("finding\t%s\t%s\t%u,%u,%u\t%d\t%d\t%s\t%s\t%lld\t%zu\t%lld\t%s\t", f.kind.c_str(),
                f.kernel.c_str(), f.block.x, f.block.y, f.block.z, f.tid, f.other, f.space.c_str(),
                f.buffer.c_str(), f.offset, f.size, f.count, clean(f.detail).c_str());
    for (size_t i = 0; i < f.frames.size(); ++i)
      std::printf("%s%p", i ? "," : "", f.frames[i]);
    std::printf("\n");
  }
  if (g.dropped > 0)
    std::printf("dropped\t%lld\n", g.dropped);
  std::printf("stats\t%lld\t%lld\t%lld\t%lld\t%lld\t%lld\t%lld\n", g.barriers, g.copies,
              g.mmas, g.shuffles, g.fragment_loads, g.bank_conflicts, g.accumulator_transfers);
  for (const Buf& b : bufs)
    if (b.out) {
      std::ofstream f(b.path, std::ios::binary);
      f.write(reinterpret_cast<const char*>(b.data), static_cast<std::streamsize>(b.bytes));
    }
  std::fflush(stdout);
  return 0;
}

}  // namespace mg_host::rt

int main(int argc, char** argv) {
  return mg_host::rt::main(argc, argv, mg_host_entries, mg_host_entry_count);
}
