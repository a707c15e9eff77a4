// The runtime behind cuda_host.h: fibers and barriers, warp lockstep, cp.async groups, the
// reference GEMM and the race and barrier checker (the harness executable's main() is
// cuda_host_main.h). It is included by exactly one translation unit, the harness's main
// (compiled without instrumentation); the kernel translation unit, compiled with
// -fsanitize=thread, calls the __tsan_* hooks defined here before every load and store (no TSan
// runtime is linked).
//
// Checker (shadow state per shared-memory byte, per barrier interval of the block):
//   race-raw / race-war / race-waw  an access to a byte that another thread wrote (or, for a
//        write, read) in the same barrier interval; two lanes of one warp are ordered by a
//        warp-collective call between the accesses
//   cp.async-early       an access to a cp.async destination before the issuing thread's wait
//        landed its group (the copy may land at any time until then)
//   uninitialized-shared a read of a shared byte no thread of the block wrote
//   oob-shared / oob-global  an access outside the launch's dynamic shared memory, or in the
//        red zone around a device buffer
//   barrier-divergent / barrier-not-reached / deadlock  __syncthreads at different call sites,
//        with some threads exited, or threads blocked forever (the launch stops there)
//   cp.async-never-waited, wmma-misaligned, wmma-bad-ldm, launch  as named
// Each finding carries the kernel, block, thread, the other thread, the buffer and offset, and a
// backtrace that the harness maps to the generated source line and its op comment.

#pragma once

#define MG_HOST_CUDA_RUNTIME
#include "cuda_host.h"

#include <execinfo.h>
#include <ucontext.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace mg_host::rt {

constexpr int kMaxDistinctFindings = 64;    // printed in full; later ones only counted
constexpr size_t kRedZone = 4096;           // bytes watched on each side of a device buffer
constexpr size_t kFiberStack = 256 * 1024;  // generous: WMMA fragments live on the stack
constexpr int kWarp = 32;

struct Region {
  uintptr_t begin = 0, end = 0;  // [begin, end)
  std::string name;
  bool red = false;    // a red zone of buffer `name`
  uintptr_t data = 0;  // the buffer's first byte
  bool input = false;
  // Data regions: per byte, the last kernel write as (launch << 32) | (block + 1), so that
  // blocks of one launch touching each other's writes are found (no order between blocks).
  std::vector<uint64_t> tag;
};

struct Cell {  // shadow of one shared-memory byte
  uint32_t interval = 0;
  int16_t writer = -1, r1 = -1, r2 = -1, pending_tid = -1;
  uint32_t wep = 0, r1ep = 0, r2ep = 0;
  bool written = false, pending = false;
};

struct Copy {
  unsigned char* dst;
  const unsigned char* src;
  int bytes, group;
};

enum class State { kRun, kBarrier, kWarp, kDone };
struct Fiber {
  ucontext_t ctx;
  char* stack = nullptr;
  Coords coords;
  State state = State::kRun;
  void* site = nullptr;
  int tid = 0;
  std::vector<Copy> copies;
  int open_group = 0;  // groups 0 .. open_group-1 are committed
};

struct Warp {
  int lanes = 0, arrived = 0;
  uint32_t epoch = 1;
  float slot[kWarp] = {};
};

struct Finding {
  std::string kind, kernel, space, buffer, detail;
  dim3 block;
  int tid = -1, other = -1;
  long long offset = 0;
  size_t size = 0;
  long long count = 0;
  std::vector<void*> frames;
};

struct State_ {
  // Memory.
  unsigned char* smem = nullptr;
  size_t smem_capacity = 0, smem_dynamic = 0;
  std::vector<Region> regions;  // sorted by begin
  std::vector<std::pair<std::pair<uint64_t, uint64_t>, std::string>> ws_names;
  uintptr_t glob_lo = ~uintptr_t{0}, glob_hi = 0, ws_data = 0;
  std::vector<Cell> cells;
  uint32_t interval = 1;
  long long max_smem = 232448;
  // Launch.
  const char* kernel = "";
  dim3 block;
  std::vector<Fiber> fibers;
  std::vector<Warp> warps;
  Fiber* cur = nullptr;
  ucontext_t sched;
  void (*body)(void*) = nullptr;
  void* body_ctx = nullptr;
  bool fatal = false;
  int last_error = 0;
  uint64_t launch_id = 0, block_linear = 0;
  long long barriers = 0, copies = 0, mmas = 0, shuffles = 0;  // what ran (stats line)
  long long fragment_loads = 0, bank_conflicts = 0, accumulator_transfers = 0;
  std::map<const void*, int> max_dynamic;                      // cudaFuncSetAttribute
  // Findings, distinct by (kind, access site).
  std::vector<Finding> findings;
  std::map<std::pair<std::string, void*>, size_t> seen;
  long long dropped = 0;
};
inline State_ g;

// ---- findings -------------------------------------------------------------------------------

MG_HOST_NOINSTR inline Finding* add_finding(const std::string& kind, void* site) {
  auto key = std::make_pair(kind, site);
  if (auto it = g.seen.find(key); it != g.seen.end()) {
    ++g.findings[it->second].count;
    return nullptr;
  }
  if (static_cast<int>(g.findings.size()) >= kMaxDistinctFindings) {
    ++g.dropped;
    return nullptr;
  }
  g.seen[key] = g.findings.size();
  Finding f;
  f.kind = kind;
  f.kernel = g.kernel;
  f.block = g.block;
  f.tid = g.cur ? g.cur->tid : -1;
  f.count = 1;
  void* frames[24];
  const int n = backtrace(frames, 24);
  f.frames.assign(frames, frames + n);
  g.findings.push_back(std::move(f));
  return &g.findings.back();
}

MG_HOST_NOINSTR inline void set_shared(Finding* f, size_t off, size_t n, int other) {
  if (f == nullptr)
    return;
  f->space = "shared";
  f->offset = static_cast<long long>(off);
  f->size = n;
  f->other = other;
}

// ---- memory map -----------------------------------------------------------------------------

MG_HOST_NOINSTR inline Region* find_region(uintptr_t a) {
  auto it = std::upper_bound(g.regions.begin(), g.regions.end(), a,
                             [](uintptr_t x, const Region& r) { return x < r.begin; });
  if (it == g.regions.begin())
    return nullptr;
  --it;
  return a < it->end ? &*it : nullptr;
}

MG_HOST_NOINSTR inline std::string buffer_name(const Region& r, uintptr_t a) {
  if (r.data == g.ws_data && !r.red)
    for (const auto& [range, name] : g.ws_names)
      if (a - r.data >= range.first && a - r.data < range.first + range.second)
        return name;
  return r.name;
}

MG_HOST_NOINSTR inline void global_access(uintptr_t a, size_t n, bool write, void* site) {
  Region* r = find_region(a);
  if (r == nullptr)
    return;
  const Region* last = find_region(a + n - 1);
  if (r->red || last == nullptr || last->red) {
    if (Finding* f = add_finding("oob-global", site)) {
      f->space = "global";
      f->buffer = r->name;
      f->offset = static_cast<long long>(a) - static_cast<long long>(r->data);
      f->size = n;
      f->detail = write ? "write" : "read";
    }
    return;
  }
  if (write && r->input)
    if (Finding* f = add_finding("write-to-input", site)) {
      f->space = "global";
      f->buffer = buffer_name(*r, a);
      f->offset = static_cast<long long>(a - r->data);
      f->size = n;
    }
  if (g.cur == nullptr || r->tag.empty())
    return;  // the reference GEMM runs alone
  const uint64_t mine = (g.launch_id << 32) | (g.block_linear + 1);
  for (size_t b = a - r->data; b < a - r->data + n; ++b) {
    const uint64_t t = r->tag[b];
    if (t >> 32 == g.launch_id && t != mine) {
      if (Finding* f = add_finding("race-global", site)) {
        f->space = "global";
        f->buffer = buffer_name(*r, a);
        f->offset = static_cast<long long>(b);
        f->size = 1;
        f->detail = std::string(write ? "write" : "read") + " of a byte that block #" +
                    std::to_string((t & 0xffffffffu) - 1) + " wrote in the same launch";
      }
      break;
    }
    if (write)
      r->tag[b] = mine;
  }
}

// Does an access recorded for thread `other` at warp epoch `ep` conflict with the running one?
MG_HOST_NOINSTR inline bool conflicts(int other, uint32_t ep, int tid) {
  if (other < 0 || other == tid)
    return false;
  if (other / kWarp != tid / kWarp)
    return true;
  return ep == g.warps[static_cast<size_t>(tid / kWarp)].epoch;
}

MG_HOST_NOINSTR inline void shared_access(size_t off, size_t n, bool write, void* site) {
  Fiber* f = g.cur;
  if (off + n > g.smem_dynamic) {
    Finding* x = add_finding("oob-shared", site);
    set_shared(x, off, n, -1);
    if (x)
      x->detail = (write ? "write, " : "read, ") + std::to_string(g.smem_dynamic) +
                  " bytes of dynamic shared memory";
    return;
  }
  const int tid = f->tid;
  const uint32_t ep = g.warps[static_cast<size_t>(tid / kWarp)].epoch;
  for (size_t b = off; b < off + n; ++b) {
    Cell& c = g.cells[b];
    if (c.pending) {
      set_shared(add_finding("cp.async-early", site), b, 1, c.pending_tid);
      continue;
    }
    if (c.interval != g.interval) {
      const bool w = c.written;
      c = Cell{};
      c.interval = g.interval;
      c.written = w;
    }
    if (!write) {
      if (!c.written)
        set_shared(add_finding("uninitialized-shared", site), b, 1, -1);
      if (conflicts(c.writer, c.wep, tid))
        set_shared(add_finding("race-raw", site), b, 1, c.writer);
      if (c.r1 < 0 || c.r1 == tid) {
        c.r1 = static_cast<int16_t>(tid);
        c.r1ep = ep;
      } else {
        c.r2 = static_cast<int16_t>(tid);
        c.r2ep = ep;
      }
    } else {
      if (conflicts(c.writer, c.wep, tid))
        set_shared(add_finding("race-waw", site), b, 1, c.writer);
      if (conflicts(c.r1, c.r1ep, tid))
        set_shared(add_finding("race-war", site), b, 1, c.r1);
      else if (conflicts(c.r2, c.r2ep, tid))
        set_shared(add_finding("race-war", site), b, 1, c.r2);
      c.writer = static_cast<int16_t>(tid);
      c.wep = ep;
      c.written = true;
    }
  }
}

MG_HOST_NOINSTR inline void on_access(const void* p, size_t n, bool write, void* site) {
  if (g.cur == nullptr)
    return;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const uintptr_t s = reinterpret_cast<uintptr_t>(g.smem);
  if (a - s < g.smem_capacity)
    shared_access(a - s, n, write, site);
  else if (a >= g.glob_lo && a < g.glob_hi)
    global_access(a, n, write, site);
}

// ---- fibers ---------------------------------------------------------------------------------

MG_HOST_NOINSTR inline void yield() { swapcontext(&g.cur->ctx, &g.sched); }

MG_HOST_NOINSTR inline void fiber_main() {
  g.body(g.body_ctx);
  g.cur->state = State::kDone;  // uc_link returns to the scheduler
}

MG_HOST_NOINSTR inline void fatal(const std::string& kind, const std::string& detail) {
  Fiber* keep = g.cur;
  g.cur = nullptr;
  if (Finding* f = add_finding(kind, nullptr)) {
    f->detail = detail;
    f->frames.clear();
  }
  g.cur = keep;
  g.fatal = true;
}

// Runs one block to completion (or to a fatal finding).
MG_HOST_NOINSTR inline void run_block(dim3 grid, dim3 blk, dim3 id) {
  const int n = static_cast<int>(blk.x * blk.y * blk.z);
  g.block = id;
  g.block_linear = id.x + grid.x * (id.y + static_cast<uint64_t>(grid.y) * id.z);
  g.interval = 1;
  std::fill(g.cells.begin(), g.cells.begin() + static_cast<long>(g.smem_dynamic), Cell{});
  std::memset(g.smem, 0xFF, g.smem_capacity);  // poison: NaN in every float type
  g.warps.assign(static_cast<size_t>((n + kWarp - 1) / kWarp), Warp{});
  for (int w = 0; w * kWarp < n; ++w)
    g.warps[static_cast<size_t>(w)].lanes = std::min(kWarp, n - w * kWarp);
  for (int t = 0; t < n; ++t) {
    Fiber& f = g.fibers[static_cast<size_t>(t)];
    f.tid = t;
    f.state = State::kRun;
    f.copies.clear();
    f.open_group = 0;
    f.coords =
        Coords{dim3(static_cast<unsigned>(t) % blk.x, (static_cast<unsigned>(t) / blk.x) % blk.y,
                    static_cast<unsigned>(t) / (blk.x * blk.y)),
               id, blk, grid};
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack;
    f.ctx.uc_stack.ss_size = kFiberStack;
    f.ctx.uc_link = &g.sched;
    makecontext(&f.ctx, fiber_main, 0);
  }
  for (;;) {
    bool ran = false;
    for (Fiber& f : g.fibers) {
      if (&f - g.fibers.data() >= n || f.state != State::kRun)
        continue;
      g.cur = &f;
      g_coords = &f.coords;
      swapcontext(&g.sched, &f.ctx);
      g.cur = nullptr;
      ran = true;
      if (g.fatal)
        return;
    }
    if (ran)
      continue;
    int done = 0, barrier = 0, warp = 0;
    for (int t = 0; t < n; ++t) {
      const State s = g.fibers[static_cast<size_t>(t)].state;
      done += s == State::kDone;
      barrier += s == State::kBarrier;
      warp += s == State::kWarp;
    }
    if (done == n)
      break;
    if (barrier + done == n && done > 0)
      return fatal("barrier-not-reached", std::to_string(barrier) +
                                              " threads wait at __syncthreads, " +
                                              std::to_string(done) + " have exited");
    if (barrier == n) {
      void* site = g.fibers[0].site;
      for (int t = 1; t < n; ++t)
        if (g.fibers[static_cast<size_t>(t)].site != site)
          return fatal("barrier-divergent", "thread 0 and thread " + std::to_string(t) +
                                                " wait at different __syncthreads calls");
      for (int t = 0; t < n; ++t)
        g.fibers[static_cast<size_t>(t)].state = State::kRun;
      ++g.interval;
      ++g.barriers;
      continue;
    }
    return fatal("deadlock", std::to_string(barrier) + " threads at __syncthreads, " +
                                 std::to_string(warp) + " at a warp-collective call, " +
                                 std::to_string(done) + " exited");
  }
  for (int t = 0; t < n; ++t)
    if (!g.fibers[static_cast<size_t>(t)].copies.empty()) {
      g.cur = &g.fibers[static_cast<size_t>(t)];
      if (Finding* f = add_finding("cp.async-never-waited", nullptr))
        f->detail = std::to_string(g.cur->copies.size()) + " copies still in flight at exit";
      g.cur = nullptr;
    }
}

}  // namespace mg_host::rt

// ---- the API of cuda_host.h -----------------------------------------------------------------

namespace mg_host {

using rt::g;

MG_HOST_NOINSTR void syncthreads(void* site) {
  g.cur->state = rt::State::kBarrier;
  g.cur->site = site;
  rt::yield();
}

MG_HOST_NOINSTR int lane() { return g.cur->tid % rt::kWarp; }

MG_HOST_NOINSTR void warp_sync() {
  rt::Fiber* f = g.cur;
  const size_t w = static_cast<size_t>(f->tid / rt::kWarp);
  rt::Warp& wp = g.warps[w];
  if (++wp.arrived == wp.lanes) {
    wp.arrived = 0;
    ++wp.epoch;
    for (int l = 0; l < wp.lanes; ++l) {
      rt::Fiber& o = g.fibers[w * rt::kWarp + static_cast<size_t>(l)];
      if (o.state == rt::State::kWarp)
        o.state = rt::State::kRun;
    }
    return;
  }
  f->state = rt::State::kWarp;
  rt::yield();
}

MG_HOST_NOINSTR float shfl_xor(float v, int lane_mask, unsigned mask) {
  rt::Warp& wp = g.warps[static_cast<size_t>(g.cur->tid / rt::kWarp)];
  if (mask != 0xffffffffu || wp.lanes != rt::kWarp)
    if (rt::Finding* f = rt::add_finding("shfl-partial-warp", __builtin_return_address(0)))
      f->detail = "the emulation supports full-warp shuffles only";
  ++g.shuffles;
  const int l = lane();
  wp.slot[l] = v;
  warp_sync();
  const float r = wp.slot[(l ^ lane_mask) % rt::kWarp];
  warp_sync();
  return r;
}

MG_HOST_NOINSTR void check_access(const void* p, size_t bytes, bool write) {
  rt::on_access(p, bytes, write, __builtin_return_address(0));
}

MG_HOST_NOINSTR void report(const char* kind, const char* detail) {
  if (rt::Finding* f = rt::add_finding(kind, __builtin_return_address(0)))
    f->detail = detail;
}

MG_HOST_NOINSTR void cp_async(void* dst, const void* src, int bytes) {
  void* site = __builtin_return_address(0);
  rt::Fiber* f = g.cur;
  const uintptr_t d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
  if (d % 16 != 0 || s % 16 != 0)
    if (rt::Finding* x = rt::add_finding("cp.async-misaligned", site))
      x->detail = "cp.async 16 needs 16-byte aligned source and destination";
  rt::global_access(s, static_cast<size_t>(bytes), false, site);
  const uintptr_t base = reinterpret_cast<uintptr_t>(g.smem);
  const size_t off = d - base;
  if (d < base || off + static_cast<size_t>(bytes) > g.smem_dynamic) {
    rt::set_shared(rt::add_finding("oob-shared", site), off, static_cast<size_t>(bytes), -1);
    return;
  }
  // The copy writes its destination at some time before the wait: a write for the checker now.
  rt::shared_access(off, static_cast<size_t>(bytes), true, site);
  for (size_t b = off; b < off + static_cast<size_t>(bytes); ++b) {
    g.cells[b].pending = true;
    g.cells[b].pending_tid = static_cast<int16_t>(f->tid);
  }
  ++g.copies;
  f->copies.push_back({static_cast<unsigned char*>(dst), static_cast<const unsigned char*>(src),
                       bytes, f->open_group});
}

MG_HOST_NOINSTR void cp_async_commit() { ++g.cur->open_group; }

MG_HOST_NOINSTR void cp_async_wait(int n) {
  rt::Fiber* f = g.cur;
  const int complete_below = f->open_group - n;
  std::vector<rt::Copy> keep;
  for (const rt::Copy& c : f->copies) {
    if (c.group >= complete_below) {
      keep.push_back(c);
      continue;
    }
    std::memcpy(c.dst, c.src, static_cast<size_t>(c.bytes));
    const size_t off = static_cast<size_t>(c.dst - g.smem);
    for (size_t b = off; b < off + static_cast<size_t>(c.bytes); ++b) {
      rt::Cell& cell = g.cells[b];
      cell.pending = false;
      cell.interval = g.interval;  // landed now: a write by this thread in this interval
      cell.r1 = cell.r2 = -1;
      cell.writer = static_cast<int16_t>(f->tid);
      cell.wep = g.warps[static_cast<size_t>(f->tid / rt::kWarp)].epoch;
      cell.written = true;
    }
  }
  f->copies.swap(keep);
}

MG_HOST_NOINSTR int set_func_attribute(const void* fn, int attr, int value) {
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize)
    return cudaErrorInvalidValue;
  if (value < 0 || value > g.max_smem) {
    if (rt::Finding* f = rt::add_finding("launch", __builtin_return_address(0)))
      f->detail = "cudaFuncSetAttribute(MaxDynamicSharedMemorySize, " + std::to_string(value) +
                  ") exceeds the device's opt-in limit of " + std::to_string(g.max_smem) + " bytes";
    return cudaErrorInvalidValue;
  }
  g.max_dynamic[fn] = value;
  return cudaSuccess;
}

MG_HOST_NOINSTR void count_mma() { ++g.mmas; }
MG_HOST_NOINSTR void count_fragment_load() { ++g.fragment_loads; }
MG_HOST_NOINSTR void count_accumulator_transfer() { ++g.accumulator_transfers; }
MG_HOST_NOINSTR void count_bank_conflicts(long long extra) { g.bank_conflicts += extra; }

MG_HOST_NOINSTR int take_last_error() {
  const int e = g.last_error;
  g.last_error = 0;
  return e;
}

MG_HOST_NOINSTR const char* error_string(int code) {
  switch (code) {
  case cudaSuccess:
    return "no error";
  case cudaErrorInvalidValue:
    return "invalid argument";
  case cudaErrorMisalignedAddress:
    return "misaligned address";
  default:
    return "unspecified launch failure";
  }
}

MG_HOST_NOINSTR void launch(const char* name, const void* fn, dim3 grid, dim3 block, size_t smem,
                            void (*body)(void*), void* ctx) {
  if (g.fatal)
    return;
  g.kernel = name;
  std::string bad;
  const long long threads = static_cast<long long>(block.x) * block.y * block.z;
  if (threads < 1 || threads > 1024)
    bad = "block of " + std::to_string(threads) + " threads";
  if (grid.x < 1 || grid.y < 1 || grid.z < 1 || grid.y > 65535 || grid.z > 65535)
    bad = "bad grid";
  const auto it = g.max_dynamic.find(fn);
  const long long allowed = it != g.max_dynamic.end() ? it->second : 48 * 1024;
  if (static_cast<long long>(smem) > allowed)
    bad = std::to_string(smem) + " bytes of dynamic shared memory, " + std::to_string(allowed) +
          " allowed (cudaFuncSetAttribute)";
  if (smem + 16 * 1024 > g.smem_capacity)
    bad = "dynamic shared memory beyond the harness's buffer";
  if (!bad.empty()) {
    if (rt::Finding* f = rt::add_finding("launch", __builtin_return_address(0)))
      f->detail = bad;
    g.last_error = cudaErrorInvalidValue;
    return;
  }
  g.smem_dynamic = smem;
  ++g.launch_id;
  g.body = body;
  g.body_ctx = ctx;
  while (g.fibers.size() < static_cast<size_t>(threads)) {
    g.fibers.emplace_back();
    g.fibers.back().stack = static_cast<char*>(std::malloc(rt::kFiberStack));
  }
  for (unsigned z = 0; z < grid.z && !g.fatal; ++z)
    for (unsigned y = 0; y < grid.y && !g.fatal; ++y)
      for (unsigned x = 0; x < grid.x && !g.fatal; ++x)
        rt::run_block(grid, block, dim3(x, y, z));
  if (g.fatal)
    g.last_error = cudaErrorLaunchFailure;
  g_coords = nullptr;
}

namespace rt {
MG_HOST_NOINSTR inline float load_elem(const void* p, int type, long long i) {
  if (type == CUDA_R_16F)
    return __half2float(static_cast<const __half*>(p)[i]);
  if (type == CUDA_R_16BF)
    return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  return static_cast<const float*>(p)[i];
}
MG_HOST_NOINSTR inline void store_elem(void* p, int type, long long i, float v) {
  if (type == CUDA_R_16F)
    static_cast<__half*>(p)[i] = __float2half_rn(v);
  else if (type == CUDA_R_16BF)
    static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
  else
    static_cast<float*>(p)[i] = v;
}
MG_HOST_NOINSTR inline size_t type_bytes(int type) { return type == CUDA_R_32F ? 4 : 2; }
}  // namespace rt

MG_HOST_NOINSTR cublasStatus_t gemm_strided_batched(int op_a, int op_b, int m, int n, int k,
                                                    float alpha, const void* a, int ta,
                                                    long long lda, long long sa, const void* b,
                                                    int tb, long long ldb, long long sb, float beta,
                                                    void* c, int tc, long long ldc, long long sc,
                                                    int batch) {
  if (g.fatal)
    return CUBLAS_STATUS_SUCCESS;
  g.kernel = "cublasGemmStridedBatchedEx";
  g.block = dim3(0, 0, 0);
  void* site = __builtin_return_address(0);
  auto at = [](const void* p, int t, long long i) {
    return reinterpret_cast<uintptr_t>(static_cast<const char*>(p) +
                                       i * static_cast<long long>(rt::type_bytes(t)));
  };
  for (int bt = 0; bt < batch; ++bt)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        float acc = 0.f;
        for (int p = 0; p < k; ++p) {
          const long long ia = bt * sa + (op_a == CUBLAS_OP_N ? i + p * lda : p + i * lda);
          const long long ib = bt * sb + (op_b == CUBLAS_OP_N ? p + j * ldb : j + p * ldb);
          rt::global_access(at(a, ta, ia), rt::type_bytes(ta), false, site);
          rt::global_access(at(b, tb, ib), rt::type_bytes(tb), false, site);
          acc += rt::load_elem(a, ta, ia) * rt::load_elem(b, tb, ib);
        }
        const long long ic = bt * sc + i + j * ldc;
        rt::global_access(at(c, tc, ic), rt::type_bytes(tc), true, site);
        const float old = beta != 0.f ? rt::load_elem(c, tc, ic) : 0.f;
        rt::store_elem(c, tc, ic, alpha * acc + beta * old);
      }
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace mg_host

// ---- the instrumentation hooks (GCC's -fsanitize=thread ABI) --------------------------------
#define MG_HOST_HOOK(name, n, w)                                                                   \
  extern "C" MG_HOST_NOINSTR void name(void* p) {                                                  \
    ::mg_host::rt::on_access(p, n, w, __builtin_return_address(0));                                \
  }
MG_HOST_HOOK(__tsan_read1, 1, false)
MG_HOST_HOOK(__tsan_read2, 2, false)
MG_HOST_HOOK(__tsan_read4, 4, false)
MG_HOST_HOOK(__tsan_read8, 8, false)
MG_HOST_HOOK(__tsan_read16, 16, false)
MG_HOST_HOOK(__tsan_write1, 1, true)
MG_HOST_HOOK(__tsan_write2, 2, true)
MG_HOST_HOOK(__tsan_write4, 4, true)
MG_HOST_HOOK(__tsan_write8, 8, true)
MG_HOST_HOOK(__tsan_write16, 16, true)
MG_HOST_HOOK(__tsan_unaligned_read2, 2, false)
MG_HOST_HOOK(__tsan_unaligned_read4, 4, false)
MG_HOST_HOOK(__tsan_unaligned_read8, 8, false)
MG_HOST_HOOK(__tsan_unaligned_read16, 16, false)
MG_HOST_HOOK(__tsan_unaligned_write2, 2, true)
MG_HOST_HOOK(__tsan_unaligned_write4, 4, true)
MG_HOST_HOOK(__tsan_unaligned_write8, 8, true)
MG_HOST_HOOK(__tsan_unaligned_write16, 16, true)
#undef MG_HOST_HOOK
extern "C" MG_HOST_NOINSTR void __tsan_read_range(void* p, unsigned long n) {
  ::mg_host::rt::on_access(p, n, false, __builtin_return_address(0));
}
extern "C" MG_HOST_NOINSTR void __tsan_write_range(void* p, unsigned long n) {
  ::mg_host::rt::on_access(p, n, true, __builtin_return_address(0));
}
extern "C" MG_HOST_NOINSTR void __tsan_func_entry(void*) {}
extern "C" MG_HOST_NOINSTR void __tsan_func_exit() {}
extern "C" MG_HOST_NOINSTR void __tsan_init() {}
extern "C" MG_HOST_NOINSTR void __tsan_vptr_update(void*, void*) {}
extern "C" MG_HOST_NOINSTR void __tsan_vptr_read(void*) {}
#define MG_HOST_ATOMIC(bits, T)                                                                    \
  extern "C" MG_HOST_NOINSTR T __tsan_atomic##bits##_load(const volatile T* a, int) {              \
    return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                                   \
  }                                                                                                \
  extern "C" MG_HOST_NOINSTR void __tsan_atomic##bits##_store(volatile T* a, T v, int) {           \
    __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                                      \
  }                                                                                                \
  extern "C" MG_HOST_NOINSTR int __tsan_atomic##bits##_compare_exchange_strong(                    \
      volatile T* a, T* c, T v, int, int) {                                                        \
    return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);        \
  }
MG_HOST_ATOMIC(8, unsigned char)
MG_HOST_ATOMIC(16, unsigned short)
MG_HOST_ATOMIC(32, unsigned int)
MG_HOST_ATOMIC(64, unsigned long)
#undef MG_HOST_ATOMIC
