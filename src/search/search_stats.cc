// The search's reporting: stop reasons, statistics and how far a cut search got (search.h,
// options.h).
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "search/search.h"

namespace mugraph::search {

std::string_view stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::kExhausted: return "exhausted";
    case StopReason::kTimeLimit: return "time limit";
    case StopReason::kStateLimit: return "state limit";
    case StopReason::kCancelled: return "cancelled";
    case StopReason::kMemoryLimit: return "memory budget";
  }
  return "?";
}

void SearchStats::add(const SearchStats& o) {
  kernel_states += o.kernel_states;
  block_states += o.block_states;
  for (size_t r = 0; r < kPruneRuleCount; ++r) pruned.n[r] += o.pruned.n[r];
  completed += o.completed;
  verified += o.verified;
  rejected += o.rejected;
  duplicates += o.duplicates;
  over_memory += o.over_memory;
  confirmed += o.confirmed;
  unconfirmed += o.unconfirmed;
  beyond_limit += o.beyond_limit;
  confirm_seconds += o.confirm_seconds;
  enumerate_seconds += o.enumerate_seconds;
  verify_seconds += o.verify_seconds;
}

std::string cut_progress(const std::vector<SearchResult>& parts) {
  int done = 0, total = 0;
  uint64_t passed = 0, unreached = 0;
  for (const SearchResult& p : parts) {
    done += p.stats.tasks_done, total += p.stats.tasks_total;
    passed += p.stats.confirmed, unreached += p.stats.unconfirmed;
  }
  if (done < total || unreached == 0)
    return std::to_string(done) + " of " + std::to_string(total) + " tasks done";
  return "the tasks run were done; the test on every entry passed " + std::to_string(passed) +
         " candidates and did not reach " + std::to_string(unreached);
}

std::string SearchStats::to_string() const {
  std::ostringstream os;
  os << std::fixed << std::setprecision(2);
  os << "prefixes: " << states() << " in finished tasks (" << kernel_states << " kernel, "
     << block_states << " block), ~" << states_all << " in all; pruned";
  for (const PruneRuleInfo& r : kPruneRules)
    os << (r.rule == PruneRule::kOracle ? " " : ", ") << r.label << " " << pruned[r.rule];
  os << "\n";
  os << "complete: " << completed << "; passed the screen on sampled entries " << verified
     << ", then the test on every entry " << confirmed;
  if (unconfirmed > 0) os << " (" << unconfirmed << " not reached in time: dropped)";
  if (beyond_limit > 0) os << " (as many as asked for; " << beyond_limit << " more left out)";
  os << "; rejected " << rejected << "; duplicates " << duplicates << "; tasks " << tasks_done
     << "/" << tasks_total;
  if (tasks_by_ranks > 0) os << " (" << tasks_by_ranks << " run by other MPI ranks)";
  os << "\n";
  if (over_memory > 0)
    os << "not screened: " << over_memory
       << " complete uGraphs whose screen needs more than the memory budget (--memory-budget)\n";
  os << "time: total " << total_seconds << " s (" << space_seconds
     << " s until the tasks were merged); oracle " << oracle_seconds << " s, enumerate "
     << enumerate_seconds << " s, screen " << verify_seconds << " s, every-entry test "
     << confirm_seconds << " s (thread sums), fuse "
     << fuse_seconds << " s, certify " << certify_seconds << " s";
  if (first_candidate_seconds >= 0) os << "; first candidate after " << first_candidate_seconds << " s";
  if (!oracle.empty()) os << "\n" << oracle;
  return os.str();
}

}  // namespace mugraph::search
