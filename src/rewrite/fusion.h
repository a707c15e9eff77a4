// The fusion pass in dry mode (HloEnv's general fusion, with mugraph's superoptimizer as the
// fuser): for each candidate region of a state, the replacements the superoptimizer proposes
// become one alternative node (alt_graph.h). The superoptimizer itself is injected (`Propose`):
// this layer never depends on the search; the driver passes one that searches the region,
// certifies the candidates and caches them by the region's canonical hash (driver/model.h).
//
// Candidate regions (fusion_regions): the Lax parts of the state (ir::partition_lax: connected
// Lax ops of one level; graph-defined ops, which earlier fusions made, are never in one) with
// min_ops..max_ops ops. A larger part is cut into windows of max_ops consecutive ops (program
// order) every max_ops / 2 ops, so that neighbouring windows overlap and a strategy decides
// which to take; each window's connected pieces of min_ops or more ops that are convex (is_convex)
// are regions. Regions are distinct and ordered by first op.
#pragma once

#include <functional>
#include <vector>

#include "rewrite/alt_graph.h"

namespace mugraph::rewrite {

struct FusionOptions {
  int min_ops = 2;   // smaller regions are not proposed (one op is already one kernel)
  int max_ops = 12;  // larger parts are cut into overlapping windows of this many ops
};

// Errors: min_ops < 1 or max_ops < min_ops.
Result<std::vector<std::vector<int>>> fusion_regions(const ir::KernelGraph& g, const FusionOptions& o);

// The replacements for a region (given as a program: Region::program); none is fine.
using Propose = std::function<Result<std::vector<Option>>(const ir::KernelGraph& region)>;

// One node per region with at least one option, in region order. A proposer's error stops it.
Result<std::vector<AltNode>> fusion_alternatives(const ir::KernelGraph& g, const FusionOptions& o,
                                                 const Propose& propose);

}  // namespace mugraph::rewrite
