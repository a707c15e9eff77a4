// The search pipeline (Mirage §4, Algorithm 1): from a plain program to verified uGraphs.
//
//   search_lax(program)     one Lax program: saturate the oracle, enumerate kernel and block
//                           graphs (enumerate.h) in parallel tasks, screen every complete
//                           graph with the verifier, fuse element-wise chains into thread
//                           graphs (opt/fuse_threads.h), drop structural duplicates
//                           (ir/canonical.h), rank by the cost model (opt/cost_model.h).
//   superoptimize(program)  cut into maximal Lax parts (ir/lax_partition.h), search_lax each,
//                           stitch the best of each back together, certify the whole (a
//                           rejected candidate is marked and the next one is tried).
//
// What is screened is what is handed out: each complete graph is fused first, screened, and
// kept with its outputs in the program's order and its screen verdict (Candidate::verdict).
//
// Determinism: tasks are merged in task order and each candidate is screened with a seed
// derived from its structure, so the candidate set does not depend on the thread count.
// Stopping (time budget, state limit, cancel) keeps the candidates of finished tasks; with a
// checkpoint path, the finished tasks and their candidates are saved, and `resume` runs only
// the others (an interrupted task is run again from its start), so nothing is lost or repeated
// beyond the interrupted tasks.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/lax_partition.h"
#include "search/options.h"

namespace mugraph::search {

// Precondition: `program` is a valid uGraph of predefined ops. The checkpoint (options) holds
// the state of this program only; a checkpoint of another program or options is refused.
Result<SearchResult> search_lax(const ir::KernelGraph& program, const SearchOptions& options);

struct SuperoptimizeResult {
  ir::Partition partition;
  std::vector<SearchResult> parts;   // one per Lax part
  // The stitched best candidates (none: some part has none). With options.certify: the first
  // stitching, in rank order, that certify did not reject (or the last one tried).
  std::optional<ir::KernelGraph> best;
  verify::Verdict certified;         // of `best` against the program (when options.certify)
  bool certify_ran = false;
  bool program_itself = false;       // `best` is the program as given (no part found better)
  std::vector<std::string> certify_rejected;  // candidates certify rejected, and how
  // Whether `best` is proven: certify ran and said VERIFIED. Only then may a caller hand it out
  // without the user's opt-in (mugraph search/optimize --accept-unproved).
  bool verified() const;
  StopReason stop_reason = StopReason::kExhausted;  // the first part's that stopped early
  double seconds = 0;
  double search_seconds = 0, certify_seconds = 0;
  // Under a time budget: how it was shared and which phase was cut (one line; empty without).
  std::string budget_note;
  std::string memory_note;  // the memory budget, the peak resident set, how work degraded
};

// The share of superoptimize's time budget the search may use when it also certifies; certify
// gets the rest (and what the search left unused).
constexpr double kSearchShare = 0.6;
// The share of search_lax's time the tasks (enumerate, screen on sampled entries) may use; the
// test of the distinct candidates on every output entry gets the rest (and what they left).
constexpr double kEnumerateShare = 0.8;

Result<SuperoptimizeResult> superoptimize(const ir::KernelGraph& program,
                                          const SearchOptions& options);

// How far a search that stopped early got: "N of M tasks done", or, when the tasks were all
// done and the budget cut the test on every entry, how many candidates it passed and left.
std::string cut_progress(const std::vector<SearchResult>& parts);

// The summary table: one row per candidate (rank, kernel ops, block graphs, block ops,
// device traffic, model time, screen verdict) and the stats.
std::string summary_table(const SearchResult& r);

}  // namespace mugraph::search
