// The memory budget: how much the search and the verifier may hold at once (--memory-budget).
//
// Work that needs much memory at once (a verification of model-size tensors) first reserves
// its estimate: reservations wait while others hold the budget (two screens of a search then
// run one after the other instead of side by side), and one that could never fit is refused at
// once, so the caller degrades (a verdict that says so, a search that stops) instead of being
// killed by the kernel. Caches that can be rebuilt register a dropper, called when a
// reservation does not fit. The default budget is half of the machine's memory (the smaller
// of physical memory and a cgroup limit).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "support/deadline.h"

namespace mugraph {

int64_t machine_memory_bytes();  // physical memory, or the cgroup's limit when lower
int64_t resident_bytes();        // this process's resident set now (/proc/self/statm)
int64_t peak_resident_bytes();   // its high-water mark (VmHWM)

// "8G", "512M", "100k", "123456" (bytes; suffixes k, M, G, T, powers of 1024, optionally with
// "iB"/"B"); -1 when malformed.
int64_t parse_bytes(const std::string& s);
std::string bytes_text(int64_t bytes);  // "1.5 GiB", "300 MiB"

// The process-wide budget (bytes); set_memory_budget(0) restores the default.
int64_t memory_budget();
void set_memory_budget(int64_t bytes);

// Counters of how the budget degraded work (for reports).
struct MemoryStats {
  int64_t waits = 0;     // reservations that waited for others to finish
  int64_t refused = 0;   // reservations larger than the whole budget
  int64_t drops = 0;     // times the caches were dropped to make room
  int64_t peak_reserved = 0;
};
MemoryStats memory_stats();
int64_t reserved_memory_bytes();  // held by reservations now

// A held share of the budget; released when destroyed.
class MemoryReservation {
 public:
  MemoryReservation() = default;
  ~MemoryReservation();
  MemoryReservation(MemoryReservation&& o) noexcept : bytes_(o.bytes_) { o.bytes_ = 0; }
  MemoryReservation& operator=(MemoryReservation&& o) noexcept;
  int64_t bytes() const { return bytes_; }

 private:
  friend bool reserve_memory(int64_t, MemoryReservation&, std::string*, bool);
  int64_t bytes_ = 0;
};

// Reserves `bytes`, waiting (this thread's deadline still applies: DeadlinePassed) while other
// reservations hold the budget; false with `why` set when `bytes` exceeds the whole budget, or,
// with wait = false (a second reservation of a holder: waiting could deadlock), when it does
// not fit now.
bool reserve_memory(int64_t bytes, MemoryReservation& out, std::string* why, bool wait = true);

// Registers a cache: `held` says how many bytes it holds now (counted against the budget beside
// the reservations), `drop` empties it; called when a reservation does not fit.
void register_cache(std::function<int64_t()> held, std::function<void()> drop);

}  // namespace mugraph
