// The planned search's split stage (Stage::split_from_best, search/plan.h): each of the best
// kSplitSources looped single kernels found so far that opt::split_loop applies to (those whose
// float check is pending, verify::float_check_pending, only for places the others leave), split
// into 2, 4 and 8 parts; the new forms (not among `seen`) get the tasks' sampled screen, best first
// by the cost model, until `deadline`, and those that pass are candidates like the others (the
// every-entry test after the search tests them with the rest). A form that fails the screen
// would mean a split_loop bug: counted (stats.rejected) and said on the stage's line.
#pragma once

#include <set>
#include <vector>

#include "ir/graph.h"
#include "search/search.h"
#include "support/deadline.h"

namespace mugraph::search {

inline constexpr size_t kSplitSources = 4;  // looped kernels split at most

SearchResult split_from_best(const ir::KernelGraph& program, const SearchOptions& o,
                             std::vector<Candidate> found, const std::set<uint64_t>& seen,
                             const Deadline& deadline);

}  // namespace mugraph::search
