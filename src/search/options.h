// Options, statistics and results of the uGraph search (Mirage §4.1-4.2, Algorithm 1).
//
// Everything the search may do is in SearchOptions, with documented defaults; nothing is read
// from the environment. The search returns {candidates, stats, stop_reason} (STYLE rule 9).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "expr/oracle.h"
#include "ir/graph.h"
#include "support/deadline.h"
#include "target/target.h"
#include "verify/verifier.h"

namespace mugraph::search {

class Ranks;  // search/distributed.h

struct SearchOptions {
  // Plan the space from the program (search/plan.h: predefined kernels, one graph-defined
  // kernel deepened over block ops, two kernels) instead of searching the one the sizes and
  // block configurations below describe; those then only seed it (threads, pruning, target,
  // screens apply as given). Without a time budget or deadline it gets kPlannedBudgetSeconds.
  // What `mugraph search|optimize` does when given no size or grid flags.
  bool plan = false;

  // --- Sizes -----------------------------------------------------------------------------
  int max_kernel_ops = 5;         // ops of the kernel graph (predefined + graph-defined)
  int max_block_ops = 11;         // compute ops + accumulators of one block graph (input
                                  // iterators and output savers are not counted)
  int max_graph_defined_ops = 1;  // block graphs per uGraph (Mirage: 1; 2 for split-KV)
  int max_block_outputs = 2;      // output savers of one block graph
  int max_kernel_op_inputs = 4;   // inputs of one graph-defined op
  int max_open_tensors = 2;       // block tensors computed but not yet consumed, at any point
                                  // of the canonical order (block graphs are kept narrow)

  // --- Ops to explore --------------------------------------------------------------------
  // Empty: the op kinds the program uses (plus concat_matmul at kernel level when the program
  // adds matmuls, Mirage Fig. 9); see default_ops(). Ops the abstraction cannot see (scale,
  // neg, sub) are only placed where the program has one, up to axiom equivalence of the input.
  std::vector<ir::OpKind> kernel_ops;
  std::vector<ir::OpKind> block_ops;

  // --- Block-graph configurations ----------------------------------------------------------
  // A grid dim takes a size from grid_sizes that divides some dim of some input; grids with
  // blocks() outside [min_blocks, max_blocks] are skipped. Mirage: 1-D grids of 32..4096 blocks
  // plus 2-D grids for attention; ours allows up to max_grid_dims dims (x, y, z) everywhere.
  std::vector<int64_t> grid_sizes = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096};
  int64_t min_blocks = 32;  // the CLI and the package use default_min_blocks(target) (below)
  int64_t max_blocks = 4096;
  int max_grid_dims = 2;
  std::vector<int64_t> forloop_ranges = {1, 4, 16, 64};  // Mirage {4, 16, 64}, plus no loop
  target::Target target = target::h100();  // shared-memory limit of the block graphs

  // --- Pruning and checking --------------------------------------------------------------
  bool prune = true;               // ask the abstract-expression oracle (Mirage §4.3)
  // When the program's e-graph does not saturate (nTrans), the search uses the e-graph of 3
  // rewrite rounds and spends no Z3 time on prefixes it lacks: they are pruned unproven
  // (counted in the oracle's statistics), see expr/oracle.h for why. Raise
  // oracle.z3_fallback_budget_s / oracle.unsaturated_rounds to widen that.
  expr::OracleOptions oracle = [] {
    expr::OracleOptions o;
    o.z3_fallback_budget_s = 0;
    o.unsaturated_rounds = 3;
    return o;
  }();
  // Prune the last block graph's prefixes that leave a tensor farther from the program's
  // outputs than the block ops left can carry it (expr::Oracle::steps_to_output: a lower bound
  // from the saturated e-graph, so nothing the search would find is lost). Needs `prune`.
  bool prune_by_steps = true;
  // Certify the best candidate (verify::Mode::kCertify). A candidate that certify rejects
  // (NOT EQUIVALENT, UNSTABLE, INCONCLUSIVE) is marked so and the next one in rank order is
  // certified, up to certify_tries candidates per part.
  bool certify = true;
  int certify_tries = 4;
  // The every-entry test (screen_task.h) stops once this many candidates passed it, in the
  // order it takes them (best first; a planned search: each stage's best, then the rest best
  // first), 0: all. The rest are not handed out, counted in SearchStats::beyond_limit. optimize
  // sets it (it measures the top few; at paper shapes each test is a full evaluation), and
  // confirm_counts (null: all count): passing candidates it refuses are kept but do not count
  // (optimize: those its backend's code generator refuses).
  int confirm_limit = 0;
  std::function<bool(const ir::KernelGraph&)> confirm_counts;
  int screen_samples = 2;          // output entries sampled per output by each screen test
                                   // (verify::Mode::kScreen; fewer = cheaper, weaker)
  uint64_t seed = 0;               // verifier inputs

  // --- Execution -------------------------------------------------------------------------
  int threads = 0;                 // 0: all cores
  // Tasks (the unit of work of a thread, of the checkpoint): each choice of the uGraph's first
  // kernel op, and with this, when that op is graph-defined and the only one (max_kernel_ops
  // 1), each choice of its block graph's first op: one large block search is then shared by
  // the threads. Same candidates either way.
  bool split_block_tasks = true;
  // Order the tasks by block configuration with the fewest blocks first (else x-major over
  // grid_sizes). Same candidates; what a time budget reaches first changes. The planned
  // search sets it (plan.h).
  bool coarse_grids_first = false;
  double time_budget_s = 0;        // 0: none. superoptimize: search and certify together (the
                                   // search gets kSearchShare of it, certify the rest)
  Deadline deadline;               // also stop here (set by callers that share a budget)
  uint64_t max_states = 0;         // 0: none; bounds prefixes generated (tests, benchmarks)
  const std::atomic<bool>* cancel = nullptr;  // set by the caller (Ctrl-C) to stop cleanly
  std::string checkpoint;          // file written when the search stops early ("" = none)
  bool resume = false;             // continue from `checkpoint`
  // Called about once a second from the search's main thread with a one-line status.
  std::function<void(const std::string&)> progress;
  // The other ranks of an MPI job (`mpirun -np N`), which then run tasks too (null: this
  // process alone). Same candidates either way.
  Ranks* ranks = nullptr;
};

// The pruning rules, declared once: the enumerator counts every op it cuts under its rule
// (SearchStats::pruned), the stats text and the checkpoint read the names from here, and a CLI
// flag that turns a rule off is named with it.
enum class PruneRule { kOracle, kShape, kMemory, kRedundant, kSteps };
struct PruneRuleInfo {
  PruneRule rule;
  const char* name;   // the checkpoint key is "pruned_" + name
  const char* label;  // in the stats text: "pruned <label> N"
  const char* flag;   // the CLI flag that turns it off ("" if none)
  const char* reason;
};
inline constexpr PruneRuleInfo kPruneRules[] = {
    {PruneRule::kOracle, "oracle", "by oracle", "--no-prune",
     "the prefix's abstract expression is not a subexpression of the program's (Mirage 4.3)"},
    {PruneRule::kShape, "shape", "by shape", "",
     "the op's inputs do not fit it (shapes, grid and loop divisibility, maps)"},
    {PruneRule::kMemory, "memory", "by memory", "",
     "the block graph would overflow the target's shared memory"},
    {PruneRule::kRedundant, "redundant", "as redundant", "",
     "the op recomputes an expression the graph already holds"},
    {PruneRule::kSteps, "steps", "by steps to the output", "--no-steps-bound",
     "a tensor is farther from the program's outputs than the block ops left can carry it"},
};
inline constexpr size_t kPruneRuleCount = sizeof(kPruneRules) / sizeof(kPruneRules[0]);

struct PruneCounts {
  uint64_t n[kPruneRuleCount] = {};
  uint64_t& operator[](PruneRule r) { return n[static_cast<size_t>(r)]; }
  uint64_t operator[](PruneRule r) const { return n[static_cast<size_t>(r)]; }
};

enum class StopReason { kExhausted, kTimeLimit, kStateLimit, kCancelled, kMemoryLimit };
std::string_view stop_reason_name(StopReason r);

struct SearchStats {
  uint64_t kernel_states = 0;   // kernel-graph prefixes generated
  uint64_t block_states = 0;    // block-graph prefixes generated
  PruneCounts pruned;           // ops cut, per pruning rule (kPruneRules)
  uint64_t completed = 0;       // uGraphs whose outputs match the program's expressions
  uint64_t verified = 0;        // ... and passed the screen test
  uint64_t rejected = 0;        // ... and failed it
  uint64_t duplicates = 0;      // verified, but structurally equal to an earlier candidate
  uint64_t over_memory = 0;     // complete, but their screen needs more than the memory budget
  // The every-entry test after the merge (screen_task.h): distinct candidates that passed it
  // (the ones handed out), and those it did not reach before the deadline (dropped). Its
  // rejections count in `rejected`, its memory refusals in `over_memory`.
  uint64_t confirmed = 0, unconfirmed = 0;
  uint64_t beyond_limit = 0;    // passed the screen, not handed out: past confirm_limit
  double confirm_seconds = 0;   // the every-entry test, summed over threads
  int tasks_total = 0, tasks_done = 0;
  int tasks_by_ranks = 0;       // finished tasks that other MPI ranks ran (SearchOptions::ranks)
  double oracle_seconds = 0;    // building (saturating) the oracle
  double enumerate_seconds = 0;  // summed over threads, verification excluded
  double verify_seconds = 0;     // screening, summed over threads
  double fuse_seconds = 0, certify_seconds = 0, total_seconds = 0;
  double space_seconds = 0;  // wall: the search proper (oracle, tasks, merge), before the
                             // every-entry test of its candidates (total_seconds includes both)
  double first_candidate_seconds = -1;  // when the first verified candidate was found (-1: none)
  // The deepest prefix the oracle kept (kernel ops before it + block ops of its block graph),
  // interrupted tasks included, and its last op's abstract expression: how close the search
  // came when it found nothing.
  int deepest = 0;
  std::string deepest_prefix;
  std::string oracle;            // OracleStats::to_string()

  uint64_t states_all = 0;       // prefixes generated, interrupted tasks included
  uint64_t states() const { return kernel_states + block_states; }  // finished tasks only
  void add(const SearchStats& o);  // counters and per-thread times
  std::string to_string() const;   // a few lines for logs and the CLI summary
};

struct Candidate {
  ir::KernelGraph graph;      // thread graphs fused
  uint64_t hash = 0;          // structural canonical hash (canonical.h)
  int kernel_ops = 0, graph_defined_ops = 0, block_ops = 0;
  int64_t device_bytes = 0;   // device <-> shared memory traffic (opt/cost_model.h)
  double model_seconds = 0;   // the cost model's time on options.target: the ranking key
  int task = 0;               // the search task that found it (all passed the screen test)
  int stage = 0;              // the planned search's stage that found it (SearchResult::stages)
  // The verifier's verdict on exactly this graph (after fusion, outputs in program order):
  // the screen's, or certify's once the candidate was certified.
  verify::VerdictKind verdict = verify::VerdictKind::kPassed;
  std::string verdict_text;   // "PASSED (screen): ..." as written in the candidate's file header
};

struct SearchResult {
  std::vector<Candidate> candidates;  // verified and distinct, best (lowest model time) first
  SearchStats stats;
  StopReason stop_reason = StopReason::kExhausted;
  std::string why_none;               // when there is no candidate: what the search saw
  // A planned search (SearchOptions::plan): one line per stage, in the order run (the space,
  // its time, how it stopped, what it found); a stage the budget never reached says so.
  std::vector<std::string> stages;
  // Seconds each finished task took (enumerate + screen), in task order: what bounds how far
  // the search scales over threads and ranks (bench/search_bench --only ranks).
  std::vector<double> task_seconds;
};

// The fewest blocks per grid when the user gives none: Mirage's 32 keeps a GPU's SMs busy; a
// CPU runs blocks on its cores, where fewer, wider tiles read memory in longer runs (the fused
// Gated MLP on 2 cores: 128 blocks of 32 columns 5.5 ms, 32 blocks 3.7 ms, 16 blocks 2.8 ms,
// 8 blocks 3.2 ms), so there it is 4 blocks per core (some balance between cores, and the
// search's time goes to those grids rather than to 1 or 2 blocks per core).
inline int64_t default_min_blocks(const target::Target& t) {
  return t.kind == target::Kind::kCpu ? 4 * std::max<int64_t>(1, t.sm_count) : 32;
}

}  // namespace mugraph::search
