#include "support/memory.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

namespace mugraph {
namespace {

struct State {
  std::mutex mu;
  std::condition_variable cv;
  int64_t budget = 0;  // 0: the default
  int64_t reserved = 0;
  MemoryStats stats;
  std::vector<std::pair<std::function<int64_t()>, std::function<void()>>> caches;
};

State& state() {
  static State s;
  return s;
}

int64_t default_budget() { return machine_memory_bytes() / 2; }

// A cgroup v2 (or v1) memory limit, when one is set.
int64_t cgroup_limit() {
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream f(path);
    std::string s;
    if (f >> s && !s.empty() && std::isdigit(static_cast<unsigned char>(s[0]))) {
      const long long v = std::stoll(s);
      if (v > 0 && v < (int64_t{1} << 60)) return v;
    }
  }
  return 0;
}

int64_t status_field(const char* name) {  // /proc/self/status "Name:   123 kB"
  std::ifstream f("/proc/self/status");
  std::string line;
  const std::string key = std::string(name) + ":";
  while (std::getline(f, line))
    if (line.rfind(key, 0) == 0) return std::stoll(line.substr(key.size())) * 1024;
  return 0;
}

}  // namespace

int64_t machine_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  int64_t m = pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : int64_t{8} << 30;
  if (const int64_t c = cgroup_limit(); c > 0) m = std::min(m, c);
  return m;
}

int64_t resident_bytes() {
  std::ifstream f("/proc/self/statm");
  int64_t size = 0, rss = 0;
  f >> size >> rss;
  return rss * sysconf(_SC_PAGESIZE);
}

int64_t peak_resident_bytes() { return status_field("VmHWM"); }

int64_t parse_bytes(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) return -1;
  double v = 0;
  try {
    v = std::stod(text.substr(0, i));
  } catch (...) {
    return -1;
  }
  std::string unit = text.substr(i);
  if (unit.size() >= 2 && unit.compare(unit.size() - 2, 2, "iB") == 0) unit.erase(unit.size() - 2);
  else if (!unit.empty() && unit.back() == 'B') unit.pop_back();
  double mult = 1;
  if (unit.empty()) mult = 1;
  else if (unit == "k" || unit == "K") mult = 1024.0;
  else if (unit == "M" || unit == "m") mult = 1024.0 * 1024;
  else if (unit == "G" || unit == "g") mult = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "t") mult = 1024.0 * 1024 * 1024 * 1024;
  else return -1;
  const double b = v * mult;
  if (!(b >= 0) || b > 9e18) return -1;
  return static_cast<int64_t>(b);
}

std::string bytes_text(int64_t b) {
  char buf[64];
  const double x = static_cast<double>(b);
  if (x >= 1024.0 * 1024 * 1024) std::snprintf(buf, sizeof buf, "%.1f GiB", x / (1024.0 * 1024 * 1024));
  else if (x >= 1024.0 * 1024) std::snprintf(buf, sizeof buf, "%.0f MiB", x / (1024.0 * 1024));
  else std::snprintf(buf, sizeof buf, "%.0f KiB", x / 1024.0);
  return buf;
}

int64_t memory_budget() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.budget > 0 ? s.budget : default_budget();
}

void set_memory_budget(int64_t bytes) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.budget = std::max<int64_t>(0, bytes);
  s.cv.notify_all();
}

int64_t reserved_memory_bytes() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.reserved;
}

MemoryStats memory_stats() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.stats;
}

MemoryReservation::~MemoryReservation() {
  if (bytes_ == 0) return;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.reserved -= bytes_;
  s.cv.notify_all();
}

MemoryReservation& MemoryReservation::operator=(MemoryReservation&& o) noexcept {
  if (this != &o) {
    MemoryReservation old(std::move(*this));
    bytes_ = o.bytes_;
    o.bytes_ = 0;
  }
  return *this;
}

bool reserve_memory(int64_t bytes, MemoryReservation& out, std::string* why, bool wait) {
  out = MemoryReservation();
  bytes = std::max<int64_t>(0, bytes);
  State& s = state();
  std::unique_lock<std::mutex> lock(s.mu);
  const int64_t budget = s.budget > 0 ? s.budget : default_budget();
  if (bytes > budget) {
    ++s.stats.refused;
    if (why)
      *why = "needs about " + bytes_text(bytes) + ", over the memory budget of " +
             bytes_text(budget) + " (--memory-budget)";
    return false;
  }
  const auto caches = s.caches;
  auto cached = [&] {  // called unlocked: a cache takes its own lock
    int64_t n = 0;
    for (const auto& c : caches) n += c.first();
    return n;
  };
  bool dropped = false, waited = false;
  lock.unlock();
  int64_t held = cached();
  lock.lock();
  while (s.reserved + held + bytes > budget) {
    if (held > 0) {  // the caches are in the way: drop them (again, when others refilled them)
      if (!dropped) ++s.stats.drops;
      dropped = true;
      lock.unlock();
      for (const auto& c : caches) c.second();
      held = cached();
      lock.lock();
      if (s.reserved + held + bytes <= budget) break;
    }
    if (!wait) {
      if (why)
        *why = "needs about " + bytes_text(bytes) + ", more than the memory budget of " +
               bytes_text(budget) + " leaves beside " + bytes_text(s.reserved + held) +
               " in use (--memory-budget)";
      return false;
    }
    waited = true;
    s.cv.wait_for(lock, std::chrono::milliseconds(50));
    lock.unlock();
    check_deadline();  // throws past the deadline (the reservation is not taken)
    held = cached();
    lock.lock();
  }
  if (waited) ++s.stats.waits;
  s.reserved += bytes;
  s.stats.peak_reserved = std::max(s.stats.peak_reserved, s.reserved);
  out.bytes_ = bytes;
  return true;
}

void register_cache(std::function<int64_t()> held, std::function<void()> drop) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.caches.emplace_back(std::move(held), std::move(drop));
}

}  // namespace mugraph
