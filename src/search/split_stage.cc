#include "search/split_stage.h"

#include <algorithm>
#include <chrono>

#include "ir/canonical.h"
#include "opt/split_loop.h"
#include "search/candidate.h"
#include "search/screen_task.h"

namespace mugraph::search {

namespace {

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

SearchResult split_from_best(const ir::KernelGraph& program, const SearchOptions& o,
                             std::vector<Candidate> found, const std::set<uint64_t>& seen,
                             const Deadline& deadline) {
  const auto t0 = std::chrono::steady_clock::now();
  SearchResult r;
  std::stable_sort(found.begin(), found.end(), better);
  std::vector<Candidate> made;
  std::set<uint64_t> hashes;
  size_t sources = 0;
  // Sources whose float check is pending (verify::float_check_pending: the every-entry test
  // after this stage may still reject them) only for places no other source takes: a wrong one
  // would give only forms pending and wrong too, but a sqrt identity may be the best there is.
  for (const bool pending_pass : {false, true})
    for (const Candidate& c : found) {
      if (sources == kSplitSources) break;
      if (c.graph.ops.size() != 1 || !c.graph.ops[0].graph_defined ||
          c.graph.ops[0].block->forloop < 2 ||
          verify::float_check_pending(c.verdict_text) != pending_pass)
        continue;
      bool applies = false;
      for (int64_t s : {2, 4, 8}) {
        Result<ir::KernelGraph> g = opt::split_loop(c.graph, s);
        if (!g.ok()) continue;  // the form does not apply (the reason is the pass's)
        applies = true;
        Candidate d;
        d.graph = std::move(*g);
        d.hash = ir::canonical_hash(d.graph);
        if (seen.count(d.hash) || !hashes.insert(d.hash).second) continue;
        describe(d, o.target);
        d.task = -1;
        made.push_back(std::move(d));
      }
      sources += applies;
    }
  std::stable_sort(made.begin(), made.end(), better);
  r.stats.completed = made.size();
  r.stop_reason = StopReason::kExhausted;
  for (Candidate& d : made) {
    if (deadline.passed()) {
      r.stop_reason = deadline.cancelled() ? StopReason::kCancelled : StopReason::kTimeLimit;
      break;
    }
    const verify::Verdict v = screen_sampled(program, o, deadline, d.graph, d.verdict_text);
    if (v.cut == "memory budget") {
      ++r.stats.over_memory;
    } else if (!v.cut.empty()) {
      r.stop_reason = deadline.cancelled() ? StopReason::kCancelled : StopReason::kTimeLimit;
      break;
    } else if (!verify::accepted(v.kind)) {
      ++r.stats.rejected;
    } else {
      ++r.stats.verified;
      d.graph = in_program_order(std::move(d.graph), v.permutation);
      d.verdict = v.kind;
      r.candidates.push_back(std::move(d));
    }
  }
  r.stats.verify_seconds = since(t0);
  r.stats.total_seconds = since(t0);
  if (!r.candidates.empty()) r.stats.first_candidate_seconds = r.stats.total_seconds;
  return r;
}

}  // namespace mugraph::search
