// One task of a search space, run and screened: enumerate its uGraphs (enumerate.h), fuse
// each complete one's element-wise chains (opt/fuse_threads.h), screen it with the verifier,
// and keep what passed with its verdict, outputs in the program's order. The task pool's
// threads run it on rank 0, and the other ranks of a distributed search run the same function
// (search/distributed.h), so a task's result does not depend on where it ran.
#pragma once

#include <functional>

#include "ir/graph.h"
#include "search/checkpoint.h"
#include "search/enumerate.h"
#include "search/options.h"
#include "search/task_pool.h"
#include "support/deadline.h"
#include "verify/verifier.h"

namespace mugraph::search {

struct TaskContext {
  const ir::KernelGraph& program;
  const SearchOptions& options;  // the space's (seed and screen samples are read here)
  const Enumerator& enumerator;
  Deadline deadline;                // a screen past it stops inside
  std::function<void()> on_found;  // a graph passed the screen (may be empty)
  SpareThreads* spare = nullptr;   // the pool's spare threads (Enumerator::run_task; may be null)
};

// Runs task `task` of c.enumerator; a spare thread of c.spare may screen some of its complete
// uGraphs (the result is the same). The result's `done` is false when `stop` or the deadline
// cut it (it is then run again, from its start, on resume); its stats (deepest prefix and
// its expression included) and times are set either way. A complete uGraph whose screen does
// not fit the memory budget is counted (stats.over_memory), not kept.
TaskResult run_screened_task(const TaskContext& c, int task, const StopCheck& stop);

// THE EVERY-ENTRY TEST. A task's screen is one field test on sampled output entries (cheap:
// milliseconds at paper shapes); what the search hands out must also pass one field test on
// every output entry (a full evaluation: about 2 s per candidate of RMSNorm+MatMul at paper
// shapes), so that a candidate wrong in a few entries (a permuted block, one wrong tile) cannot
// pass by being missed. It runs once the tasks are merged, on the distinct candidates only,
// best first (the cost model's order), on `threads` threads until `deadline`. Candidates that
// fail it are dropped (counted rejected); so are those it did not reach before the deadline
// (counted unconfirmed: what is handed out is only what passed). With o.confirm_limit, the
// candidates up to the limit's last counting one (o.confirm_counts) are decided as without it,
// whatever the threads; the test stops there and all after it is counted beyond_limit (left
// out, tested or not). Verdict texts become the every-entry test's.
struct ConfirmStats {
  int confirmed = 0, rejected = 0, over_memory = 0, unconfirmed = 0;
  int beyond_limit = 0;  // every candidate after o.confirm_limit's last counting one
  double seconds = 0;  // summed over threads
};
ConfirmStats confirm_every_entry(const ir::KernelGraph& program, const SearchOptions& o,
                                 const Deadline& deadline, int threads,
                                 std::vector<Candidate>& candidates);

// The tasks' screen (on sampled entries, the search's one draw) of `g` against the program,
// for uGraphs made outside a task (the planned split stage); `text` gets the verdict's text.
verify::Verdict screen_sampled(const ir::KernelGraph& program, const SearchOptions& o,
                               const Deadline& deadline, const ir::KernelGraph& g,
                               std::string& text);

// `g` with its outputs reordered so that output i computes the program's output i (the
// verifier matched program output i with g's output perm[i]; empty: as they are).
ir::KernelGraph in_program_order(ir::KernelGraph g, const std::vector<int>& perm);

}  // namespace mugraph::search
