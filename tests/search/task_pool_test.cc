// The search's task pool (search/task_pool.h): every task once, results by slot whatever the
// thread count, and each stop rule of the policy.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "search/task_pool.h"

namespace mugraph::search {
namespace {

// Task i generates 10 * (i + 1) states, one stop check each; finished tasks record i * i.
struct Recorder {
  std::vector<int> result, finished_order;
  std::vector<bool> cut;
  std::mutex mu;
  explicit Recorder(int n) : result(static_cast<size_t>(n), -1), cut(static_cast<size_t>(n), false) {}
  void run(int i, const StopCheck& stop) {
    for (int s = 0; s < 10 * (i + 1); ++s)
      if (stop(1)) {
        std::lock_guard<std::mutex> lock(mu);
        cut[static_cast<size_t>(i)] = true;
        return;
      }
    std::lock_guard<std::mutex> lock(mu);
    result[static_cast<size_t>(i)] = i * i;
    finished_order.push_back(i);
  }
};

TEST(TaskPool, EveryTaskOnceWhateverTheThreads) {
  for (int threads : {1, 2, 3, 8}) {
    Recorder r(20);
    TaskPoolOptions po;
    po.threads = threads;
    const TaskPoolResult res =
        run_tasks(20, [&](int i, const StopCheck& s) { r.run(i, s); }, StopPolicy{}, po);
    EXPECT_EQ(res.stop, StopReason::kExhausted);
    EXPECT_EQ(res.states, 10u * 20 * 21 / 2);
    for (int i = 0; i < 20; ++i) EXPECT_EQ(r.result[static_cast<size_t>(i)], i * i) << threads;
    EXPECT_EQ(r.finished_order.size(), 20u);
  }
}

TEST(TaskPool, SkippedTasksDoNotRunAndRelaxedOnesGoFirst) {
  Recorder r(6);
  TaskPoolOptions po;
  po.threads = 1;
  po.skip = {true, false, false, true, false, false};
  po.relaxed = {false, false, false, false, false, true};
  run_tasks(6, [&](int i, const StopCheck& s) { r.run(i, s); }, StopPolicy{}, po);
  EXPECT_EQ(r.finished_order, (std::vector<int>{5, 1, 2, 4}));
}

TEST(TaskPool, StateLimitStopsAllButRelaxedTasks) {
  Recorder r(5);
  StopPolicy p;
  p.max_states = 25;  // task 0 (10) and 1 (20) cross it
  TaskPoolOptions po;
  po.threads = 1;
  po.relaxed = {false, false, false, false, true};  // task 4 (50 states) runs first, to its end
  const TaskPoolResult res = run_tasks(5, [&](int i, const StopCheck& s) { r.run(i, s); }, p, po);
  EXPECT_EQ(res.stop, StopReason::kStateLimit);
  EXPECT_EQ(r.result[4], 16);  // relaxed: finished although it alone passes the limit
  EXPECT_TRUE(r.cut[0]);       // 50 states already: the first non-relaxed check stops
  EXPECT_EQ(r.result[1], -1);
  EXPECT_EQ(r.result[3], -1);
}

TEST(TaskPool, CancelDeadlineAndMemoryStopEveryTask) {
  std::atomic<bool> cancel{true};
  StopPolicy c;
  c.cancel = &cancel;
  StopPolicy d;
  d.deadline = Deadline::at(Deadline::Clock::now());
  StopPolicy m;
  m.over_memory = [] { return true; };
  TaskPoolOptions po;
  po.relaxed = {true, false, false};  // relaxed tasks stop too: only the state limit spares them
  for (const auto& [policy, why] : {std::pair{c, StopReason::kCancelled},
                                    std::pair{d, StopReason::kTimeLimit},
                                    std::pair{m, StopReason::kMemoryLimit}}) {
    Recorder r(3);
    const TaskPoolResult res = run_tasks(3, [&](int i, const StopCheck& s) { r.run(i, s); }, policy, po);
    EXPECT_EQ(res.stop, why);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(r.result[static_cast<size_t>(i)], -1);
  }
}

// Spare threads: a task that splits off pieces gets each one run once (by a thread with no task
// left, or by itself when none took it), a piece's exception reaches the task that posted it,
// and a waiting task runs only its own queued pieces.
TEST(SpareThreads, PiecesRunOnceOnSpareThreadsOrTheirTask) {
  for (int threads : {1, 2, 3}) {
    SpareThreads spare;
    TaskPoolOptions po;
    po.threads = threads;
    po.spare = &spare;
    std::mutex mu;
    std::vector<int> runs(4 * 10, 0);
    std::vector<std::thread::id> ran_on(4 * 10);
    run_tasks(
        4,
        [&](int i, const StopCheck&) {
          std::vector<std::shared_ptr<SpareThreads::Piece>> pieces;
          for (int k = 0; k < 10; ++k)
            pieces.push_back(spare.post(&pieces, [&, i, k] {
              std::this_thread::sleep_for(std::chrono::milliseconds(2));
              std::lock_guard<std::mutex> lock(mu);
              ++runs[static_cast<size_t>(i * 10 + k)];
            }));
          for (const auto& p : pieces) spare.finish(p);
        },
        StopPolicy{}, po);
    for (int n : runs) EXPECT_EQ(n, 1) << threads << " threads";
  }
  SpareThreads forced(1);
  EXPECT_TRUE(forced.wanted());
  auto bad = forced.post(nullptr, [] { throw std::runtime_error("piece failed"); });
  EXPECT_FALSE(forced.wanted());  // the forced piece was posted; no thread waits
  EXPECT_THROW(forced.finish(bad), std::runtime_error);
}

// finish_all: every piece is finished though some throw, then the first exception is thrown;
// pieces posted while it runs (by a piece) are read and finished too; a null piece is skipped.
TEST(SpareThreads, FinishAllFinishesEveryPieceAndThrowsTheFirstError) {
  SpareThreads spare;  // no pool: finish() runs each piece here
  std::vector<std::shared_ptr<SpareThreads::Piece>> pieces;
  std::vector<int> ran(5, 0);
  pieces.push_back(spare.post(&pieces, [&] {
    ++ran[0];
    pieces.push_back(spare.post(&pieces, [&] { ++ran[4]; }));  // read by finish_all later
  }));
  pieces.push_back(spare.post(&pieces, [&] { ++ran[1], throw std::runtime_error("first"); }));
  pieces.push_back(nullptr);
  pieces.push_back(spare.post(&pieces, [&] { ++ran[3], throw std::logic_error("second"); }));
  pieces.reserve(16);  // no reallocation while a piece appends
  auto at = [&](size_t i, std::shared_ptr<SpareThreads::Piece>& p) {
    if (i >= pieces.size()) return false;
    p = pieces[i];
    return true;
  };
  try {
    spare.finish_all(at);
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "first");
  }
  EXPECT_EQ(ran, (std::vector<int>{1, 1, 0, 1, 1}));
}

}  // namespace
}  // namespace mugraph::search
