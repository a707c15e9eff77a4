#include "search/task_pool.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <thread>

#include "support/memory.h"

namespace mugraph::search {

namespace {

using Clock = std::chrono::steady_clock;

// The pool's shared state: the task queue (relaxed tasks first, then the others in task
// order; tasks of dead peers go back to its front), the stop flag and the state count.
class Pool {
 public:
  Pool(int count, const StopPolicy& policy, const TaskPoolOptions& options)
      : policy_(policy), options_(options) {
    for (int i = 0; i < count; ++i)
      if (flag(options.relaxed, i) && !flag(options.skip, i)) order_.push_back(i);
    for (int i = 0; i < count; ++i)
      if (!flag(options.relaxed, i) && !flag(options.skip, i)) order_.push_back(i);
  }
  size_t size() const { return order_.size(); }
  bool relaxed(int i) const { return flag(options_.relaxed, i); }

  // The next task to run (skipping those a stop rules out), or nullopt.
  std::optional<std::pair<int, bool>> take() {
    std::lock_guard<std::mutex> lock(mu_);
    for (;;) {
      int i;
      if (!again_.empty()) {
        i = again_.front();
        again_.pop_front();
      } else if (next_ < order_.size()) {
        i = order_[next_++];
      } else {
        return std::nullopt;
      }
      if (!skipped_by_stop(relaxed(i))) return std::make_pair(i, relaxed(i));
    }
  }
  bool has_more() const {
    std::lock_guard<std::mutex> lock(mu_);
    return !again_.empty() || next_ < order_.size();
  }
  // Whether a task that is not relaxed is still queued (the peers' states then count against
  // the state limit; while only relaxed ones are, they run free of it, as here).
  bool unrelaxed_queued() const {
    std::lock_guard<std::mutex> lock(mu_);
    for (int i : again_)
      if (!relaxed(i)) return true;
    return next_ < order_.size() && !relaxed(order_.back());
  }
  void put_back(int i) {
    std::lock_guard<std::mutex> lock(mu_);
    again_.push_back(i);
  }

  // The policy's check; `relaxed` tasks ignore the state limit (and a stop that came from it).
  bool check(uint64_t n, bool relaxed) {
    const uint64_t s = states_.fetch_add(n) + n;
    if (skipped_by_stop(relaxed)) return true;
    if (policy_.cancel && policy_.cancel->load()) return stop_for(StopReason::kCancelled);
    if (policy_.deadline.passed()) return stop_for(StopReason::kTimeLimit);
    if (!relaxed && policy_.max_states > 0 && s > policy_.max_states)
      return stop_for(StopReason::kStateLimit);
    if (policy_.over_memory && policy_.over_memory()) return stop_for(StopReason::kMemoryLimit);
    return false;
  }
  bool stop_for(StopReason why) {
    int expected = static_cast<int>(StopReason::kExhausted);
    stop_code_.compare_exchange_strong(expected, static_cast<int>(why));
    if (why != StopReason::kStateLimit) {  // stops relaxed tasks too
      expected = static_cast<int>(StopReason::kExhausted);
      hard_code_.compare_exchange_strong(expected, static_cast<int>(why));
    }
    stop_ = true;
    return true;
  }
  StopReason stop_reason() const { return static_cast<StopReason>(stop_code_.load()); }
  // What the peers must be told: a stop that ends relaxed tasks too, else the state limit.
  StopReason peers_stop() const {
    const auto hard = static_cast<StopReason>(hard_code_.load());
    return hard != StopReason::kExhausted ? hard : stop_reason();
  }
  uint64_t states() const { return states_.load(); }

 private:
  static bool flag(const std::vector<bool>& v, int i) {
    return static_cast<size_t>(i) < v.size() && v[static_cast<size_t>(i)];
  }
  bool skipped_by_stop(bool relaxed) const {
    return stop_.load() && !(relaxed && stop_reason() == StopReason::kStateLimit);
  }

  const StopPolicy& policy_;
  const TaskPoolOptions& options_;
  std::vector<int> order_;
  mutable std::mutex mu_;
  size_t next_ = 0;        // guarded by mu_
  std::deque<int> again_;  // guarded by mu_: tasks of dead peers
  std::atomic<uint64_t> states_{0};
  std::atomic<bool> stop_{false};
  std::atomic<int> stop_code_{static_cast<int>(StopReason::kExhausted)};
  std::atomic<int> hard_code_{static_cast<int>(StopReason::kExhausted)};
};

}  // namespace

struct SpareThreads::Piece {
  const void* owner = nullptr;
  std::function<void()> fn;
  bool taken = false, done = false;  // guarded by SpareThreads::mu_
  std::exception_ptr error;          // what fn threw (set before done)
};

std::shared_ptr<SpareThreads::Piece> SpareThreads::post(const void* owner,
                                                        std::function<void()> fn) {
  auto p = std::make_shared<Piece>();
  p->owner = owner;
  p->fn = std::move(fn);
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(p);
    ++queued_;
    if (forced_.load() > 0) --forced_;
  }
  cv_.notify_all();
  return p;
}

void SpareThreads::run(std::unique_lock<std::mutex>& lock, Piece& p) {
  p.taken = true;
  lock.unlock();
  try {
    p.fn();
  } catch (...) {
    p.error = std::current_exception();
  }
  lock.lock();
  p.done = true;
  cv_.notify_all();
}

bool SpareThreads::run_one(std::unique_lock<std::mutex>& lock, const void* owner) {
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (owner && (*it)->owner != owner) continue;
    std::shared_ptr<Piece> p = std::move(*it);
    queue_.erase(it);
    --queued_;
    run(lock, *p);
    return true;
  }
  return false;
}

void SpareThreads::finish(const std::shared_ptr<Piece>& p) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!p->taken) {  // nobody took it: run it here
    queue_.erase(std::find(queue_.begin(), queue_.end(), p));
    --queued_;
    run(lock, *p);
  }
  // Only pieces of the same task meanwhile: another task's could hold this one up.
  while (!p->done) {
    if (run_one(lock, p->owner)) continue;
    ++idle_;
    cv_.wait(lock);
    --idle_;
  }
  if (p->error) std::rethrow_exception(p->error);
}

void SpareThreads::finish_all(const std::function<bool(size_t, std::shared_ptr<Piece>&)>& at) {
  std::exception_ptr error;
  for (size_t i = 0;; ++i) {
    std::shared_ptr<Piece> p;
    if (!at(i, p)) break;
    if (!p) continue;
    try {
      finish(p);
    } catch (...) {
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

bool SpareThreads::serve(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mu_);
  if (run_one(lock)) return true;
  ++idle_;
  cv_.wait_for(lock, wait);
  --idle_;
  return false;
}

void SpareThreads::wake() {
  { std::lock_guard<std::mutex> lock(mu_); }
  cv_.notify_all();
}

namespace {

// The threads of this process: each takes tasks until none is left. More can be added while
// the pool runs (a dead peer's tasks after every thread has finished).
class Threads {
 public:
  Threads(Pool& pool, const std::function<void(int, const StopCheck&)>& run_task,
          SpareThreads* spare)
      : pool_(pool), run_task_(run_task), spare_(spare) {}
  ~Threads() {
    for (std::thread& t : threads_) t.join();
  }
  void start(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    running_ += n;
    for (int t = 0; t < n; ++t) threads_.emplace_back([this] { work(); });
  }
  int running() const {
    std::lock_guard<std::mutex> lock(mu_);
    return running_;
  }
  // Waits until no thread runs or `timeout` passed; true when none runs.
  bool wait(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [this] { return running_ == 0; });
  }

 private:
  // Takes tasks until none is left, then (with spare threads) runs the pieces the tasks still
  // running split off, until no task runs.
  void work() {
    for (;;) {
      ++active_;  // before taking: a thread that finds the queue empty sees this one's task
      if (std::optional<std::pair<int, bool>> t = pool_.take()) {
        const bool relaxed = t->second;
        const StopCheck stop_check = [this, relaxed](uint64_t n) { return pool_.check(n, relaxed); };
        run_task_(t->first, stop_check);
        --active_;
        if (spare_) spare_->wake();
        continue;
      }
      if (--active_ == 0 || !spare_) break;  // no task left to split a piece off
      spare_->serve(std::chrono::milliseconds(5));
    }
    std::lock_guard<std::mutex> lock(mu_);
    --running_;
    cv_.notify_all();
  }

  Pool& pool_;
  const std::function<void(int, const StopCheck&)>& run_task_;
  SpareThreads* spare_;
  std::atomic<int> active_{0};  // threads running a task
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int running_ = 0;
  std::list<std::thread> threads_;
};

// The calling thread's loop with peers: hand them tasks, collect, re-queue a dead peer's
// tasks (with a thread to run them when every thread has finished), tick.
void drive_remote(Pool& pool, Threads& threads, RemoteRunner& remote,
                  const TaskPoolOptions& options) {
  auto last_tick = Clock::now();
  for (;;) {
    const RemoteRunner::Pumped p = remote.pump([&pool] { return pool.take(); },
                                               pool.peers_stop(), std::chrono::milliseconds(2));
    // The peers' states count; the policy is checked here too.
    pool.check(p.states, !pool.unrelaxed_queued());
    if (p.stop != StopReason::kExhausted) pool.stop_for(p.stop);
    for (int i : p.lost) pool.put_back(i);
    const bool idle = threads.running() == 0;
    if (idle && pool.has_more()) threads.start(1);
    if (idle && remote.in_flight() == 0 && !pool.has_more()) break;
    if (options.tick && Clock::now() - last_tick >= std::chrono::seconds(1)) {
      options.tick(pool.states());
      last_tick = Clock::now();
    }
  }
}

}  // namespace

std::function<bool()> search_memory_check() {
  auto next = std::make_shared<std::atomic<int64_t>>(0);
  return [next]() -> bool {
    const int64_t now = Clock::now().time_since_epoch().count();
    int64_t due = next->load();
    const int64_t period =
        std::chrono::duration_cast<Clock::duration>(std::chrono::milliseconds(200)).count();
    if (now < due || !next->compare_exchange_strong(due, now + period)) return false;
    return resident_bytes() - reserved_memory_bytes() > memory_budget() / 2;
  };
}

int thread_count(int threads) {
  return threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

TaskPoolResult run_tasks(int count, const std::function<void(int, const StopCheck&)>& run_task,
                         const StopPolicy& policy, const TaskPoolOptions& options) {
  Pool pool(count, policy, options);
  int nthreads = thread_count(options.threads);
  nthreads = std::max(1, std::min(nthreads, std::max(static_cast<int>(pool.size()), 1)));
  {
    Threads threads(pool, run_task, options.spare);
    threads.start(nthreads);
    if (options.remote) {
      drive_remote(pool, threads, *options.remote, options);
    } else {
      while (!threads.wait(std::chrono::seconds(1)))
        if (options.tick) options.tick(pool.states());
    }
  }  // joins the threads
  return {pool.stop_reason(), pool.states()};
}

}  // namespace mugraph::search
