#include "search/task_pool.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace mugraph::search {

TaskPoolResult run_tasks(int count, const std::function<void(int, const StopCheck&)>& run_task,
                         const StopPolicy& policy, const TaskPoolOptions& options) {
  auto flag = [](const std::vector<bool>& v, int i) {
    return static_cast<size_t>(i) < v.size() && v[static_cast<size_t>(i)];
  };
  std::vector<int> order;  // relaxed tasks first, then the others in task order
  for (int i = 0; i < count; ++i)
    if (flag(options.relaxed, i) && !flag(options.skip, i)) order.push_back(i);
  for (int i = 0; i < count; ++i)
    if (!flag(options.relaxed, i) && !flag(options.skip, i)) order.push_back(i);

  std::atomic<size_t> next{0};
  std::atomic<uint64_t> states{0};
  std::atomic<bool> stop{false};
  std::atomic<int> stop_code{static_cast<int>(StopReason::kExhausted)};
  auto stop_for = [&](StopReason why) {
    int expected = static_cast<int>(StopReason::kExhausted);
    stop_code.compare_exchange_strong(expected, static_cast<int>(why));
    stop = true;
    return true;
  };
  // The policy's check; `relaxed` tasks ignore the state limit (and a stop that came from it).
  auto check = [&](uint64_t n, bool relaxed) -> bool {
    const uint64_t s = states.fetch_add(n) + n;
    if (stop.load() && !(relaxed && stop_code == static_cast<int>(StopReason::kStateLimit)))
      return true;
    if (policy.cancel && policy.cancel->load()) return stop_for(StopReason::kCancelled);
    if (policy.deadline.passed()) return stop_for(StopReason::kTimeLimit);
    if (!relaxed && policy.max_states > 0 && s > policy.max_states)
      return stop_for(StopReason::kStateLimit);
    if (policy.over_memory && policy.over_memory()) return stop_for(StopReason::kMemoryLimit);
    return false;
  };
  std::mutex mu;
  std::condition_variable cv;
  int running = 0;
  auto worker = [&] {
    for (;;) {
      const size_t slot = next.fetch_add(1);
      if (slot >= order.size()) break;
      const int i = order[slot];
      const bool relaxed = flag(options.relaxed, i);
      if (stop.load() && !(relaxed && stop_code == static_cast<int>(StopReason::kStateLimit)))
        continue;
      const StopCheck stop_check = [&check, relaxed](uint64_t n) { return check(n, relaxed); };
      run_task(i, stop_check);
    }
    std::lock_guard<std::mutex> lock(mu);
    --running;
    cv.notify_all();
  };
  int nthreads = options.threads > 0
                     ? options.threads
                     : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  nthreads = std::max(1, std::min(nthreads, std::max(static_cast<int>(order.size()), 1)));
  running = nthreads;
  std::vector<std::thread> threads;
  for (int t = 0; t < nthreads; ++t) threads.emplace_back(worker);
  {
    std::unique_lock<std::mutex> lock(mu);
    while (running > 0) {
      cv.wait_for(lock, std::chrono::seconds(1));
      if (options.tick && running > 0) {
        lock.unlock();
        options.tick(states.load());
        lock.lock();
      }
    }
  }
  for (std::thread& t : threads) t.join();
  return {static_cast<StopReason>(stop_code.load()), states.load()};
}

}  // namespace mugraph::search
