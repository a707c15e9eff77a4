// Frees large objects on a background thread while the caller goes on: a search's worker
// caches hold millions of hash-map nodes (freeing them took 0.66 s of Table 5's 10 s cell),
// and nothing after the tasks needs them. A Reaper joins its threads when it is destroyed,
// so nothing it was given outlives it (declare it after what those objects refer to).
#pragma once

#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace mugraph {

class Reaper {
 public:
  Reaper() = default;
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;
  ~Reaper() { join(); }

  // Waits until everything dropped so far is freed.
  void join() {
    std::lock_guard<std::mutex> lock(mu_);
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

  // Destroys `p` on a thread of its own (here, if no thread can be started).
  template <class T>
  void drop(std::unique_ptr<T> p) {
    std::lock_guard<std::mutex> lock(mu_);
    try {
      threads_.emplace_back([q = std::move(p)]() mutable { q.reset(); });
    } catch (const std::system_error&) {
      // No thread: the lambda holding the object was destroyed while unwinding (it is freed
      // here).
    }
  }

 private:
  std::mutex mu_;
  std::vector<std::thread> threads_;
};

}  // namespace mugraph
