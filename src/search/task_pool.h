// The task pool of the search: independent, deterministic tasks run by threads until all are
// done or a stop policy says stop (Ctrl-C, the time budget, a state limit, the memory budget).
//
//   run_tasks(count, run_task, policy)   runs tasks 0..count-1, the `relaxed` ones first (tasks a
//                                         previous run cut short), then the others in order, each
//                                         at most once. run_task(i, stop) runs task i and calls
//                                         stop(n) after every n states it generates: true means
//                                         stop now (the task then reports itself unfinished).
//
// Results are the caller's: run_task writes task i's result into slot i, so merging in task
// order gives the same candidates for any thread count (and, later, any number of MPI ranks).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "search/options.h"
#include "support/deadline.h"

namespace mugraph::search {

struct StopPolicy {
  const std::atomic<bool>* cancel = nullptr;  // Ctrl-C
  Deadline deadline;                          // the time budget
  uint64_t max_states = 0;                    // 0: none; relaxed tasks ignore it
  std::function<bool()> over_memory;          // the memory budget (may be empty)
};

struct TaskPoolOptions {
  int threads = 0;               // 0: all cores (never more than tasks)
  std::vector<bool> relaxed;     // per task (empty: none): first, and free of the state limit
  std::vector<bool> skip;        // per task (empty: none): already done (a checkpoint)
  // Called about once a second from the calling thread while tasks run, with the states so far.
  std::function<void(uint64_t states)> tick;
};

struct TaskPoolResult {
  StopReason stop = StopReason::kExhausted;  // the first reason that stopped the pool
  uint64_t states = 0;                       // every stop(n) summed, cut tasks included
};

using StopCheck = std::function<bool(uint64_t)>;

TaskPoolResult run_tasks(int count, const std::function<void(int, const StopCheck&)>& run_task,
                         const StopPolicy& policy, const TaskPoolOptions& options = {});

}  // namespace mugraph::search
