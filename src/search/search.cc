#include "search/search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <filesystem>
#include <iomanip>
#include <map>
#include <optional>
#include <mutex>
#include <set>
#include <sstream>


#include "expr/abstract.h"
#include "ir/text.h"
#include "opt/cost_model.h"
#include "ir/canonical.h"
#include "search/candidate.h"
#include "search/checkpoint.h"
#include "search/distributed.h"
#include "search/enumerate.h"
#include "search/plan.h"
#include "search/screen_task.h"
#include "search/split_stage.h"
#include "search/task_pool.h"
#include "support/hash.h"
#include "support/memory.h"
#include "support/reaper.h"

namespace mugraph::search {

using ir::canonical_hash;
using ir::partition_lax;
using ir::stitch;

namespace {

using Clock = std::chrono::steady_clock;

// How often a running search rewrites its checkpoint (when it has one): what a process killed
// without warning loses at most. A write copies the finished tasks' graphs, a few ms.
constexpr double kCheckpointSeconds = 10;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// User errors in the program or the options, checked before any work; each message names the
// option's CLI flag too, since that is where most options come from.
Status check_search_input(const ir::KernelGraph& program, const SearchOptions& o) {
  for (const ir::KernelOp& op : program.ops) {
    if (!op.graph_defined) continue;
    std::string names;
    for (ir::TensorId t : op.outputs) names += (names.empty() ? "" : ", ") + program.tensor(t).name;
    return error("search: the program must consist of predefined ops; kernel op '", names,
                 "' is graph-defined");
  }
  if (o.max_kernel_ops < 1)
    return error("search options: max kernel ops ", o.max_kernel_ops,
                 " must be >= 1 (--max-kernel-ops)");
  if (o.max_block_ops < 0)
    return error("search options: max block ops ", o.max_block_ops,
                 " must be >= 0 (--max-block-ops)");
  if (o.max_block_outputs < 1)
    return error("search options: max block outputs ", o.max_block_outputs,
                 " must be >= 1 (--max-block-outputs)");
  if (o.max_kernel_op_inputs < 1 || o.max_kernel_op_inputs > 6)
    return error("search options: max kernel op inputs ", o.max_kernel_op_inputs,
                 " must be in 1..6 (--max-kernel-op-inputs)");
  if (o.max_graph_defined_ops < 0)
    return error("search options: max graph-defined ops ", o.max_graph_defined_ops,
                 " must be >= 0 (--max-graph-defined)");
  for (int64_t s : o.grid_sizes)
    if (s < 1) return error("search options: grid size ", s, " must be >= 1 (--grid-sizes)");
  if (o.min_blocks < 1)
    return error("search options: min blocks ", o.min_blocks, " must be >= 1 (--min-blocks)");
  if (o.max_blocks < o.min_blocks)
    return error("search options: max blocks ", o.max_blocks, " is below min blocks ",
                 o.min_blocks, " (--max-blocks, --min-blocks): no grid would be tried");
  if (o.max_grid_dims < 0 || o.max_grid_dims > 3)
    return error("search options: max grid dims ", o.max_grid_dims,
                 " must be in 0..3 (--max-grid-dims)");
  for (int64_t r : o.forloop_ranges)
    if (r < 1) return error("search options: for-loop range ", r, " must be >= 1");
  if (o.screen_samples < 1)
    return error("search options: screen samples ", o.screen_samples,
                 " must be >= 1 (--screen-samples)");
  if (!(o.time_budget_s >= 0))
    return error("search options: time budget ", o.time_budget_s,
                 " s must be >= 0 (--time-budget; 0: none, or 60 s for a planned space)");
  if (o.threads < 0)
    return error("search options: threads ", o.threads, " must be >= 0 (--threads; 0: all cores)");
  return ok_status();
}


// One space, the one `o` describes, with the program's oracle built: the tasks in a pool,
// screened, merged in task order. With `keep_checkpoint`, the checkpoint is written even when
// the space is exhausted (a planned search's stages, so a resumed one replays them).
Result<SearchResult> search_space(const ir::KernelGraph& program, const SearchOptions& o,
                                  expr::ExprPool& pool, expr::Oracle& oracle,
                                  const Deadline& deadline, Clock::time_point t0,
                                  bool keep_checkpoint, Reaper& reaper,
                                  std::vector<TaskResult>* finished = nullptr) {
  SearchResult result;
  auto enumerator = std::make_unique<Enumerator>(program, o, pool, oracle);
  const Enumerator& en = *enumerator;
  const int ntasks = en.task_count();
  std::vector<TaskResult> tasks(static_cast<size_t>(ntasks));
  const std::string fp = fingerprint(program, o);
  if (o.resume) MG_RETURN_IF_ERROR(read_checkpoint(o.checkpoint, fp, tasks));

  if (o.progress) {
    int retries = 0;
    for (const TaskResult& t : tasks) retries += t.retry && !t.done;
    if (retries > 0)
      o.progress("search: resuming; " + std::to_string(retries) +
                 " task(s) cut short last time run first, to their end unless the time budget "
                 "or Ctrl-C stops them again (the state limit does not)");
  }

  // The tasks run in a pool (task_pool.h), on this process's threads and on the other MPI
  // ranks (distributed.h); each result lands in its task's slot.
  std::mutex mu;
  std::atomic<int> found{0};
  double first_found = -1;  // guarded by mu
  int deepest = 0;          // guarded by mu: the deepest prefix kept, any task (the lowest
  int deepest_task = -1;    // task on a tie, whatever the thread or rank count)
  std::string deepest_prefix;
  // The progress line's best model time: the cost model's fastest candidate so far.
  double best_model_s = std::numeric_limits<double>::infinity();  // guarded by mu
  auto store = [&](int i, TaskResult tr) {
    std::lock_guard<std::mutex> lock(mu);
    const int d = tr.stats.deepest;
    if (d > deepest || (d == deepest && d > 0 && i < deepest_task))
      deepest = d, deepest_prefix = tr.stats.deepest_prefix, deepest_task = i;
    if (!tr.graphs.empty() && first_found < 0) first_found = since(t0);
    if (!tr.done) {  // stopped inside: run again (first) on resume
      tasks[static_cast<size_t>(i)].retry = true;
      return;
    }
    if (o.progress)
      for (const ir::KernelGraph& g : tr.graphs)
        best_model_s = std::min(best_model_s, opt::estimate(g, o.target).total_s);
    tasks[static_cast<size_t>(i)] = std::move(tr);
  };
  SpareThreads spare;  // threads with no task left run pieces of the long ones
  const TaskContext context{program, o, en, deadline, [&found] { ++found; }, &spare};
  auto run_task = [&](int i, const StopCheck& check) {
    store(i, run_screened_task(context, i, check));
  };
  StopPolicy policy;
  policy.cancel = o.cancel;
  policy.deadline = deadline;
  policy.max_states = o.max_states;
  policy.over_memory = search_memory_check();
  TaskPoolOptions po;
  po.threads = o.threads;
  po.spare = &spare;
  for (const TaskResult& t : tasks) {
    po.relaxed.push_back(t.retry && !t.done);
    po.skip.push_back(t.done);
  }
  // About once a second: the progress line, and every kCheckpointSeconds the checkpoint (a
  // process killed without warning, e.g. a whole MPI job when one rank dies, loses at most that).
  auto last_checkpoint = Clock::now();
  bool checkpointed = false;
  Status periodic;  // the first failed periodic write
  po.tick = [&](uint64_t s) {
    if (!o.checkpoint.empty() && since(last_checkpoint) >= kCheckpointSeconds) {
      std::vector<TaskResult> snapshot;
      {
        std::lock_guard<std::mutex> lock(mu);
        snapshot = tasks;
      }
      if (Status w = write_checkpoint(o.checkpoint, fp, snapshot); !w.ok() && periodic.ok())
        periodic = w;
      checkpointed = true;
      last_checkpoint = Clock::now();
    }
    if (!o.progress) return;
    int done = 0;
    double best = 0;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (const TaskResult& t : tasks) done += t.done;
      best = best_model_s;
    }
    const double el = since(t0);
    std::ostringstream os;
    os << std::fixed << std::setprecision(1) << "search: " << el << " s, ~" << s
       << " prefixes (" << static_cast<uint64_t>(static_cast<double>(s) / std::max(el, 1e-3))
       << "/s), tasks " << done << "/" << ntasks << ", " << found.load() << " candidates";
    if (std::isfinite(best)) os << ", best model " << best * 1e6 << " us";  // as model-us
    o.progress(os.str());
  };
  std::optional<RankRunner> ranks;
  std::atomic<int> by_ranks{0};
  if (o.ranks && o.ranks->live() > 0) {
    ranks.emplace(*o.ranks, space_text(program, o), oracle_signature(oracle), ntasks, deadline,
                  [&](int i, TaskResult tr) {
                    if (tr.done) ++by_ranks;
                    found += static_cast<int>(tr.graphs.size());
                    store(i, std::move(tr));
                  });
    po.remote = &*ranks;
  }
  const TaskPoolResult pool_result = run_tasks(ntasks, run_task, policy, po);
  ranks.reset();  // END: the other ranks drop the space
  // Its workers' caches (millions of entries) are freed while the search goes on.
  const std::string space = en.describe();
  reaper.drop(std::move(enumerator));
  result.stop_reason = pool_result.stop;
  result.stats.states_all = pool_result.states;
  result.stats.tasks_by_ranks = by_ranks.load();

  // Merge finished tasks in task order: fuse, hash, dedup.
  result.stats.tasks_total = ntasks;
  std::set<uint64_t> seen;
  const auto tf = Clock::now();
  for (size_t i = 0; i < tasks.size(); ++i) {
    TaskResult& t = tasks[i];
    if (!t.done) continue;
    ++result.stats.tasks_done;
    result.stats.add(t.stats);
    result.task_seconds.push_back(t.stats.enumerate_seconds + t.stats.verify_seconds);
    if (t.stats.deepest > result.stats.deepest) {  // the first task reaching it, in task order
      result.stats.deepest = t.stats.deepest;
      result.stats.deepest_prefix = t.stats.deepest_prefix;
    }
    for (size_t gi = 0; gi < t.graphs.size(); ++gi) {
      Candidate c;
      c.graph = t.graphs[gi];
      c.hash = canonical_hash(c.graph);
      if (!seen.insert(c.hash).second) {
        ++result.stats.duplicates;
        continue;
      }
      c.verdict_text = t.verdicts[gi];
      c.verdict = c.verdict_text.rfind("UNPROVED", 0) == 0 ? verify::VerdictKind::kUnproved
                                                           : verify::VerdictKind::kPassed;
      describe(c, o.target);
      c.task = static_cast<int>(i);
      result.candidates.push_back(std::move(c));
    }
  }
  std::stable_sort(result.candidates.begin(), result.candidates.end(), better);
  result.stats.fuse_seconds = since(tf);
  if ((keep_checkpoint || checkpointed || result.stop_reason != StopReason::kExhausted) &&
      !o.checkpoint.empty())
    MG_RETURN_IF_ERROR(write_checkpoint(o.checkpoint, fp, tasks));
  MG_RETURN_IF_ERROR(periodic);
  if (finished) *finished = std::move(tasks);  // the caller may write the checkpoint later
  if (!result.candidates.empty()) result.stats.first_candidate_seconds = first_found;
  if (deepest > result.stats.deepest) {  // an interrupted task got deeper than every finished one
    result.stats.deepest = deepest;
    result.stats.deepest_prefix = deepest_prefix;
  }
  result.stats.total_seconds = since(t0);
  if (result.candidates.empty()) {
    std::ostringstream os;
    const SearchStats& s = result.stats;
    if (result.stop_reason != StopReason::kExhausted)
      os << "the search stopped early (" << stop_reason_name(result.stop_reason) << ") after "
         << s.tasks_done << " of " << ntasks << " tasks; ";
    const bool stopped = result.stop_reason != StopReason::kExhausted;
    if (s.completed == 0)
      os << "no prefix " << (stopped ? "of the finished tasks " : "")
         << "reached the program's output expressions within " << o.max_kernel_ops
         << " kernel ops and " << o.max_block_ops << " block ops (" << s.states()
         << " prefixes, " << s.pruned[PruneRule::kOracle] << " ops pruned by the oracle, "
         << s.pruned[PruneRule::kShape] << " by shape, " << s.pruned[PruneRule::kMemory] << " by memory): "
         << (stopped ? "give the search more time (--time-budget) or continue it (--resume "
                       "--checkpoint), or narrow it (--max-block-ops, --min-blocks, "
                       "--grid-sizes, --forloop)"
                     : "try larger limits, more grid sizes or for-loop ranges");
    else if (s.over_memory > 0)
      os << s.completed << " uGraphs matched the output expressions; " << s.rejected
         << " failed the verifier's screen test and " << s.over_memory
         << " could not be screened within the memory budget (rerun with a larger "
            "--memory-budget; --resume does not screen them again)";
    else
      os << s.completed << " uGraphs matched the output expressions but all " << s.rejected
         << " failed the verifier's screen test";
    os << " [" << space << "]";
    result.why_none = os.str();
  }
  return result;
}

// Adds a stage's result to the planned search's: counters, candidates not seen before (the
// first stage to find a uGraph keeps it), the stage's line.
void merge_stage(SearchResult& all, SearchResult&& r, int stage, const std::string& name,
                 bool derived, std::set<uint64_t>& seen) {
  SearchStats& s = all.stats;
  s.add(r.stats);
  s.tasks_total += r.stats.tasks_total;
  s.tasks_done += r.stats.tasks_done;
  s.tasks_by_ranks += r.stats.tasks_by_ranks;
  s.states_all += r.stats.states_all;
  s.fuse_seconds += r.stats.fuse_seconds;
  if (r.stats.deepest > s.deepest) {
    s.deepest = r.stats.deepest;
    s.deepest_prefix = r.stats.deepest_prefix;
  }
  if (s.first_candidate_seconds < 0) s.first_candidate_seconds = r.stats.first_candidate_seconds;
  size_t fresh = 0;
  for (Candidate& c : r.candidates) {
    if (!seen.insert(c.hash).second) {
      ++s.duplicates;
      continue;
    }
    c.stage = stage;
    all.candidates.push_back(std::move(c));
    ++fresh;
  }
  std::ostringstream os;
  os << "stage " << stage + 1 << " (" << name << "): " << std::fixed << std::setprecision(1)
     << r.stats.total_seconds << " s, " << stop_reason_name(r.stop_reason);
  if (derived)  // split_from_best
    os << ", " << r.stats.completed << " forms derived, " << r.stats.rejected
       << " failed the screen";
  else
    os << ", tasks " << r.stats.tasks_done << "/" << r.stats.tasks_total;
  os << ", " << r.candidates.size() << " candidates (" << fresh << " new)";
  if (r.candidates.empty() && r.stats.deepest > 0)
    os << "; deepest prefix " << r.stats.deepest << " ops";
  all.stages.push_back(os.str());
  if (r.stop_reason != StopReason::kExhausted && all.stop_reason == StopReason::kExhausted)
    all.stop_reason = r.stop_reason;
}

// A planned search's stage checkpoint: CHECKPOINT[.partK] + this + the stage's fingerprint.
constexpr const char* kStageFileInfix = ".stage-";

// The planned space (plan.h): its stages in turn, each within its share of the time left; a
// single-kernel stage that is exhausted, with some prefix at its block-op limit, is followed
// by a deeper one while time is left.
Result<SearchResult> search_planned(const ir::KernelGraph& program, const SearchOptions& o,
                                    expr::ExprPool& pool, expr::Oracle& oracle,
                                    const Deadline& deadline, Clock::time_point t0,
                                    Reaper& reaper) {
  std::vector<Stage> stages = plan_stages(program, o);
  auto checkpoint_of = [&](const SearchOptions& so) {
    return o.checkpoint + kStageFileInfix + fingerprint(program, so);
  };
  SearchResult all;
  std::set<uint64_t> seen;
  auto not_reached = [&](size_t from, StopReason why) {
    for (size_t j = from; j < stages.size(); ++j)
      all.stages.push_back("stage " + std::to_string(j + 1) + " (" + stages[j].name +
                           "): not reached (" + std::string(stop_reason_name(why)) + ")");
    if (all.stop_reason == StopReason::kExhausted) all.stop_reason = why;
  };
  for (size_t k = 0; k < stages.size(); ++k) {
    // Past the deadline, a resumed search still replays the stages it has files of (their
    // finished tasks are read back, nothing runs); the split stage has none and passes (it
    // screens nothing past the deadline), so that the stages after it are replayed too.
    const bool replay = o.resume && !o.checkpoint.empty() &&
                        (stages[k].split_from_best ||
                         std::filesystem::exists(checkpoint_of(stages[k].options)));
    if (deadline.passed() && !replay) {
      not_reached(k, deadline.cancelled() ? StopReason::kCancelled : StopReason::kTimeLimit);
      break;
    }
    SearchOptions so = stages[k].options;
    so.deadline = deadline.share(stages[k].share);
    if (o.max_states > 0) {  // the state limit bounds the whole search, not each stage
      if (all.stats.states_all >= o.max_states) {
        not_reached(k, StopReason::kStateLimit);
        break;
      }
      so.max_states = o.max_states - all.stats.states_all;
    }
    if (!o.checkpoint.empty() && !stages[k].split_from_best) {  // one file per stage, named by its space (not its position:
                                  // a resumed search may deepen where the first one did not)
      so.checkpoint = checkpoint_of(so);
      so.resume = o.resume && std::filesystem::exists(so.checkpoint);
    }
    const double start = since(t0);
    SearchResult r;
    if (stages[k].split_from_best) {
      r = split_from_best(program, so, all.candidates, seen, so.deadline);
    } else {
      reaper.join();  // the last stage's caches: not counted against this one's memory
      MG_ASSIGN_OR_RETURN(r, search_space(program, so, pool, oracle, so.deadline, Clock::now(),
                                          !o.checkpoint.empty(), reaper));
    }
    if (r.stats.first_candidate_seconds >= 0) r.stats.first_candidate_seconds += start;
    const StopReason stop = r.stop_reason;
    // Deeper only when the block-op limit cut something: some prefix reached it, or the steps
    // rule cut a prefix too far from the outputs for the ops left.
    // And not after a deepened level that found candidates but no new ones (the planned
    // count already held the forms; GQA's 8-op attention again at 10 and 12 ops).
    const size_t before = all.candidates.size();
    const bool found = !r.candidates.empty();
    bool deepen = stop == StopReason::kExhausted &&
                  (r.stats.deepest >= so.max_block_ops || r.stats.pruned[PruneRule::kSteps] > 0);
    merge_stage(all, std::move(r), static_cast<int>(k), stages[k].name,
                stages[k].split_from_best, seen);
    if (found && all.candidates.size() == before &&
        so.max_block_ops > stages[k].planned_block_ops)
      deepen = false;
    if (stop == StopReason::kCancelled || stop == StopReason::kMemoryLimit ||
        stop == StopReason::kStateLimit) {
      not_reached(k + 1, stop);
      break;
    }
    if (deepen)
      if (std::optional<Stage> d = deeper(stages[k]))
        stages.insert(stages.begin() + static_cast<std::ptrdiff_t>(k) + 1, std::move(*d));
  }
  std::stable_sort(all.candidates.begin(), all.candidates.end(), better);
  all.stats.total_seconds = since(t0);
  if (all.candidates.empty()) {
    const SearchStats& s = all.stats;
    std::ostringstream os;
    os << "the planned search found nothing ("
       << (all.stop_reason == StopReason::kExhausted
               ? std::string("every stage exhausted")
               : "stopped by the " + std::string(stop_reason_name(all.stop_reason)))
       << "; " << s.tasks_done << " of " << s.tasks_total << " tasks of the stages run); ";
    // The rules that cut the most.
    std::vector<std::pair<uint64_t, const PruneRuleInfo*>> cuts;
    for (const PruneRuleInfo& ri : kPruneRules) cuts.push_back({s.pruned[ri.rule], &ri});
    std::sort(cuts.begin(), cuts.end(), [](auto& a, auto& b) { return a.first > b.first; });
    if (cuts[0].first > 0)
      os << "ops cut most " << cuts[0].second->label << " (" << cuts[0].first << ": "
         << cuts[0].second->reason << ")"
         << (cuts[1].first > 0 ? std::string(" and ") + cuts[1].second->label + " (" +
                                     std::to_string(cuts[1].first) + ")"
                               : std::string())
         << " in the finished tasks; ";
    if (s.deepest > 0)
      os << "the deepest prefix that still matched the program's expressions had " << s.deepest
         << " ops, ending in " << s.deepest_prefix << "; ";
    if (s.completed > 0)
      os << s.completed << " uGraphs matched the output expressions, " << s.rejected
         << " failed the screen" << (s.over_memory ? ", " + std::to_string(s.over_memory) +
                                                         " were over the memory budget"
                                                   : std::string())
         << "; ";
    os << (all.stop_reason == StopReason::kExhausted
               ? "search larger spaces with explicit flags (--max-block-ops, --max-kernel-ops, "
                 "--grid-sizes, --forloop)"
               : o.checkpoint.empty()
                   ? "give it more time (--time-budget); with --out DIR a cut search leaves a "
                     "checkpoint that --resume continues"
                   : "give it more time (--time-budget) or continue it (--resume --checkpoint " +
                         o.checkpoint + ")");
    all.why_none = os.str();
  }
  return all;
}

// The every-entry test of r's candidates (screen_task.h) and its accounting: counters, the
// stop reason and the checkpoint when it was cut (`finished`: a single space's tasks), why
// nothing is left when it dropped everything.
Status confirm_candidates(const ir::KernelGraph& program, const SearchOptions& o,
                          const Deadline& deadline, const std::vector<TaskResult>& finished,
                          SearchResult& r) {
  const ConfirmStats cs = confirm_every_entry(program, o, deadline, thread_count(o.threads), r.candidates);
  r.stats.confirmed = static_cast<uint64_t>(cs.confirmed);
  r.stats.unconfirmed = static_cast<uint64_t>(cs.unconfirmed);
  r.stats.beyond_limit = static_cast<uint64_t>(cs.beyond_limit);
  r.stats.confirm_seconds = cs.seconds;
  r.stats.rejected += static_cast<uint64_t>(cs.rejected);
  r.stats.over_memory += static_cast<uint64_t>(cs.over_memory);
  if (cs.unconfirmed > 0) {  // the deadline or Ctrl-C cut the every-entry test: stopped early,
    if (r.stop_reason == StopReason::kExhausted)  // and the finished tasks kept for --resume
      r.stop_reason = deadline.cancelled() ? StopReason::kCancelled : StopReason::kTimeLimit;
    if (!o.plan && !o.checkpoint.empty() && !finished.empty())
      MG_RETURN_IF_ERROR(write_checkpoint(o.checkpoint, fingerprint(program, o), finished));
  }
  if (r.candidates.empty()) r.stats.first_candidate_seconds = -1;
  if (r.candidates.empty() && r.why_none.empty() && cs.rejected + cs.over_memory + cs.unconfirmed > 0)
    r.why_none = std::to_string(cs.rejected + cs.over_memory + cs.unconfirmed) +
                 " candidates passed the screen on sampled entries, but " +
                 (cs.unconfirmed > 0 ? std::string(deadline.cancelled() ? "Ctrl-C came"
                                                                        : "the time budget ended") +
                                       " before the test on every output entry reached " +
                                       std::to_string(cs.unconfirmed) +
                                       " of them (give it more time: --time-budget; " +
                                       (o.checkpoint.empty()
                                            ? std::string("with --out DIR, --resume continues "
                                                          "from the finished tasks)")
                                            : "--resume --checkpoint " + o.checkpoint +
                                                  " keeps the finished tasks)")
                                     : std::string("none passed the test on every output entry")) +
                 (cs.rejected > 0 ? "; " + std::to_string(cs.rejected) + " failed that test" : std::string()) +
                 (cs.over_memory > 0 ? "; " + std::to_string(cs.over_memory) +
                                           " could not be tested within the memory budget"
                                     : std::string());
  return ok_status();
}

}  // namespace

Result<SearchResult> search_lax(const ir::KernelGraph& program, const SearchOptions& o) {
  const auto t0 = Clock::now();
  MG_RETURN_IF_ERROR(check_search_input(program, o));
  if (o.resume && o.checkpoint.empty()) return error("--resume needs a checkpoint file");
  // The time budget and the caller's deadline; Ctrl-C passes it too (screens stop inside). A
  // planned search always has one.
  Deadline deadline = o.deadline.earliest(Deadline::after(planned_budget(o)));
  if (!deadline.cancel()) deadline.with_cancel(o.cancel);

  expr::ExprPool pool;
  const expr::GraphExprs ge = expr::abstract_expressions(program, pool);
  expr::Oracle oracle(pool, ge.outputs, o.oracle);
  Reaper reaper;  // after the oracle: joined before it goes
  const double oracle_seconds = since(t0);
  // The tasks (enumerate, screen on sampled entries) get kEnumerateShare of the time; the
  // every-entry test of the distinct candidates, best first, the rest (screen_task.h).
  const Deadline tasks_end = deadline.share(kEnumerateShare);
  std::vector<TaskResult> finished;  // a single space's tasks (a planned search keeps its stages')
  MG_ASSIGN_OR_RETURN(SearchResult r,
                      o.plan ? search_planned(program, o, pool, oracle, tasks_end, t0, reaper)
                             : search_space(program, o, pool, oracle, tasks_end, t0, false,
                                            reaper, &finished));
  r.stats.space_seconds = since(t0);
  // A planned search's every-entry test takes the best candidate of each stage first, then
  // the rest best first: a budget that ends it early still hands out each stage's form (the
  // derived split forms, often ranked first, would otherwise crowd out the single kernels).
  if (o.plan) {
    std::vector<Candidate> lead, rest;
    std::set<int> led;
    for (Candidate& c : r.candidates)
      (led.insert(c.stage).second ? lead : rest).push_back(std::move(c));
    r.candidates = std::move(lead);
    for (Candidate& c : rest) r.candidates.push_back(std::move(c));
  }
  MG_RETURN_IF_ERROR(confirm_candidates(program, o, deadline, finished, r));
  if (o.plan) std::stable_sort(r.candidates.begin(), r.candidates.end(), better);
  r.stats.oracle_seconds = oracle_seconds;
  r.stats.oracle = oracle.stats().to_string();
  r.stats.total_seconds = since(t0);
  return r;
}

namespace {

// Certifies r.best; when certify does not say VERIFIED, marks the candidate (the part
// candidate at fault when certify rejects: the one certify rejects against its part program)
// and tries the next one of that part, up to options.certify_tries attempts in all. A VERIFIED
// verdict ends the loop; a "no bound" PASSED too (the next candidate of the same program has no
// bound either); after an UNPROVED one (sqrt identities: another candidate may keep the
// radicands) the search goes on and falls back to the first accepted one. The handed-out graph
// gets certify's output permutation applied, so its outputs are in program order.
void certify_best(const ir::KernelGraph& program, const SearchOptions& options,
                  const Deadline& deadline, SuperoptimizeResult& r) {
  const auto tc = Clock::now();
  verify::VerifyOptions vo;
  vo.mode = verify::Mode::kCertify;
  vo.deadline = deadline;
  vo.seed = options.seed;
  vo.float_seed = options.seed ^ 0x9e3779b97f4a7c15ULL;  // not the screens' float inputs
  const size_t nparts = r.parts.size();
  std::vector<size_t> idx(nparts, 0);
  auto mark = [&](size_t k, const verify::Verdict& v) {
    Candidate& c = r.parts[k].candidates[idx[k]];
    c.verdict = v.kind;
    c.verdict_text = std::string(verify::verdict_name(v.kind)) + " (certify, seed " +
                     std::to_string(vo.seed) + "): " + v.summary;
  };
  std::optional<std::pair<ir::KernelGraph, verify::Verdict>> fallback;  // first accepted
  for (int attempt = 0;; ++attempt) {
    std::vector<ir::KernelGraph> chosen;
    for (size_t k = 0; k < nparts; ++k) chosen.push_back(r.parts[k].candidates[idx[k]].graph);
    r.best = stitch(program, r.partition, chosen);
    r.certified = verify::check(program, *r.best, vo);
    r.certify_ran = true;
    if (nparts == 1) mark(0, r.certified);
    if (!r.certified.cut.empty()) break;  // the budget (or Ctrl-C) stopped it: nothing more
    const verify::VerdictKind kind = r.certified.kind;
    if (verify::accepted(kind)) {
      r.best = in_program_order(std::move(*r.best), r.certified.permutation);
      r.certified.permutation.clear();
      if (!fallback) fallback.emplace(*r.best, r.certified);
      if (kind != verify::VerdictKind::kUnproved) break;
    }
    if (attempt + 1 >= options.certify_tries) break;
    if (options.cancel && options.cancel->load()) break;
    bool advanced = false;
    for (size_t k = 0; k < nparts; ++k) {
      verify::VerdictKind part_kind = kind;
      if (nparts > 1) {
        const verify::Verdict v = verify::check(r.partition.parts[k].program, chosen[k], vo);
        if (!v.cut.empty()) break;
        mark(k, v);
        part_kind = v.kind;
        if (part_kind == verify::VerdictKind::kVerified) continue;
      }
      if (!verify::accepted(part_kind))
        r.certify_rejected.push_back("part " + std::to_string(k) + " candidate " +
                                     std::to_string(idx[k] + 1) + ": " +
                                     std::string(verify::verdict_name(part_kind)));
      if (idx[k] + 1 < r.parts[k].candidates.size()) ++idx[k], advanced = true;
    }
    if (!advanced) break;
  }
  if (r.certified.kind != verify::VerdictKind::kVerified && fallback) {
    r.best = fallback->first;
    r.certified = fallback->second;
  }
  r.certify_seconds = since(tc);
  for (SearchResult& p : r.parts) p.stats.certify_seconds = r.certify_seconds;
}

std::string seconds_text(double s) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << s << " s";
  return os.str();
}

}  // namespace

bool SuperoptimizeResult::verified() const {
  return best && certify_ran && certified.kind == verify::VerdictKind::kVerified;
}

Result<SuperoptimizeResult> superoptimize(const ir::KernelGraph& program,
                                          const SearchOptions& options) {
  const auto t0 = Clock::now();
  // Before partitioning: a part-less program (no Lax op) would otherwise skip the checks.
  MG_RETURN_IF_ERROR(check_search_input(program, options));
  SuperoptimizeResult r;
  // The whole budget (search + certify), and the search's share of it; the parts share the
  // search's time in turn (a part gets an equal share of what is left, so time a quick part
  // leaves goes to the next).
  Deadline all = options.deadline.earliest(Deadline::after(planned_budget(options)));
  if (!all.cancel()) all.with_cancel(options.cancel);
  const Deadline search_end = options.certify ? all.share(kSearchShare) : all;
  const double search_budget = search_end.left();
  r.partition = partition_lax(program);
  if (options.plan && options.resume && !options.checkpoint.empty()) {
    // A planned search writes CHECKPOINT[.partK].stage-HASH files; none at all: a wrong path, or
    // another program's or options' search (whose files carry other names or none).
    const std::filesystem::path ck(options.checkpoint);
    const std::filesystem::path dir = ck.parent_path().empty() ? "." : ck.parent_path();
    bool any = false;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      const std::string n = e.path().filename().string();
      any = any || (n.rfind(ck.filename().string() + ".", 0) == 0 && n.find(kStageFileInfix) != std::string::npos);
    }
    if (!any)
      return error("--resume: no checkpoint of a planned search at ", options.checkpoint,
                   "[.partK].stage-* (a search with space flags writes ", options.checkpoint,
                   " itself; rerun without --resume to start afresh)");
  }
  std::vector<ir::KernelGraph> chosen;
  const size_t nparts = r.partition.parts.size();
  for (size_t k = 0; k < nparts; ++k) {
    SearchOptions o = options;
    if (!o.checkpoint.empty() && nparts > 1)
      o.checkpoint += ".part" + std::to_string(k);
    o.time_budget_s = 0;
    o.deadline = search_end.share(1.0 / static_cast<double>(nparts - k));
    MG_ASSIGN_OR_RETURN(SearchResult sr, search_lax(r.partition.parts[k].program, o));
    if (sr.stop_reason != StopReason::kExhausted && r.stop_reason == StopReason::kExhausted)
      r.stop_reason = sr.stop_reason;
    if (!sr.candidates.empty()) chosen.push_back(sr.candidates.front().graph);
    r.parts.push_back(std::move(sr));
    if (r.stop_reason == StopReason::kCancelled) break;
  }
  r.search_seconds = since(t0);
  if (chosen.size() == r.partition.parts.size() && !r.partition.parts.empty()) {
    // Every part's best is the part's own ops (structurally): nothing better was found, and
    // the answer is the program itself, handed out as given (not the stitched copy), so
    // there is nothing to prove (a non-Lax program could not be certified otherwise).
    bool itself = true;
    for (size_t k = 0; k < nparts; ++k)
      itself = itself && canonical_hash(chosen[k]) == canonical_hash(r.partition.parts[k].program);
    if (itself) {
      r.best = program;
      r.certified = verify::Verdict{};
      r.certified.kind = verify::VerdictKind::kVerified;
      r.certified.summary = "the program itself: no candidate beats the program's own ops "
                            "(nothing to prove)";
      r.certified.delta_achieved = 0;
      r.certify_ran = options.certify;
      r.program_itself = true;
    } else {
      r.best = stitch(program, r.partition, chosen);
      if (options.certify) certify_best(program, options, all, r);
    }
  }
  r.seconds = since(t0);
  {
    const MemoryStats m = memory_stats();
    std::ostringstream os;
    os << "memory budget " << bytes_text(memory_budget()) << ": peak resident "
       << bytes_text(peak_resident_bytes());
    if (m.waits > 0) os << "; " << m.waits << " checks waited for memory";
    if (m.drops > 0) os << "; caches dropped " << m.drops << " times to make room";
    if (m.refused > 0) os << "; " << m.refused << " checks refused (over the whole budget)";
    if (r.stop_reason == StopReason::kMemoryLimit) os << "; the search stopped at the budget";
    r.memory_note = os.str();
  }
  if (!all.none()) {
    std::ostringstream os;
    if (planned_budget(options) > 0)
      os << "time budget " << seconds_text(planned_budget(options)) << ": ";
    os << "search " << seconds_text(r.search_seconds) << " of its "
       << seconds_text(search_budget)
       << (r.stop_reason == StopReason::kExhausted
               ? std::string(" (finished)")
               : " (cut by " + std::string(r.stop_reason == StopReason::kCancelled
                                                ? "Ctrl-C"
                                                : "the " + std::string(stop_reason_name(
                                                               r.stop_reason))) +
                     ": " + cut_progress(r.parts) + ")");
    if (options.certify && r.certify_ran)
      os << ", certify " << seconds_text(r.certify_seconds)
         << (r.certified.cut.empty() ? " (finished)"
                                     : " (cut after " + std::to_string(r.certified.tests) + " tests)");
    else if (options.certify)
      os << ", certify not run (no candidate)";
    r.budget_note = os.str();
  }
  return r;
}

std::string summary_table(const SearchResult& r) {
  std::ostringstream os;
  const bool staged = !r.stages.empty();
  os << " rank  kernel-ops  graph-defined  block-ops  device-MiB  model-us  task"
     << (staged ? "  stage" : "") << "\n";
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    const Candidate& c = r.candidates[i];
    os << std::setw(5) << i + 1 << std::setw(12) << c.kernel_ops << std::setw(15)
       << c.graph_defined_ops << std::setw(11) << c.block_ops << std::setw(12) << std::fixed
       << std::setprecision(2) << static_cast<double>(c.device_bytes) / (1 << 20) << std::setw(10)
       << c.model_seconds * 1e6 << std::setw(6);
    if (c.task >= 0) os << c.task;
    else os << "-";  // derived (the planned split stage), not found by a task
    if (staged) os << std::setw(7) << c.stage + 1;
    os << "\n";
  }
  os << "stop: " << stop_reason_name(r.stop_reason) << "\n";
  if (!r.stages.empty()) {
    os << "planned space (no space flags; search/plan.h):\n";
    for (const std::string& line : r.stages) os << "  " << line << "\n";
  }
  os << r.stats.to_string() << "\n";
  if (!r.why_none.empty()) os << "no candidate: " << r.why_none << "\n";
  return os.str();
}

}  // namespace mugraph::search
