// A search candidate's description and rank: counts and the cost model's time from its graph,
// and the order candidates are ranked in (the search's, the planned stages', the split stage's).
#pragma once

#include "ir/graph.h"
#include "search/options.h"
#include "target/target.h"

namespace mugraph::search {

// Compute ops, accumulators and thread graphs of the graph-defined ops.
int block_op_count(const ir::KernelGraph& g);
// Cheaper by the cost model first; then fewer kernel ops, fewer block ops, the hash.
bool better(const Candidate& a, const Candidate& b);
// A candidate's counts and its cost on `target` (the ranking key), from its graph.
void describe(Candidate& c, const target::Target& target);

}  // namespace mugraph::search
