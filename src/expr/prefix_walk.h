// An expression-level walk of the prefixes Algorithm 1 (Mirage §4.1-4.2) meets: the tensors a
// search can build, as (type, abstract expression) pairs, with the pruning oracle asked about
// every new tensor. It is the skeleton of the uGraph enumerator (no graphs, maps or memory
// plans yet) and collects realistic oracle queries for the oracle's tests and benchmark.
//
// Contexts: the kernel level (whole device tensors), and for each for-loop range R a block
// level: every input cut into R tiles along one of its dims (or replicated), in-loop ops on the
// tiles, accumulators (sum(R, x) for a replica fmap), post-loop ops on the accumulated tensors.
// Ops: matmul, add, mul, div, exp, sqrt, silu, square and a full sum along the last dim, on
// every shape-compatible choice of operands (types by ir::infer_type, expressions by
// expr::op_expression). Breadth-first by depth; a tensor the oracle prunes is not extended.
#pragma once

#include <cstdint>
#include <vector>

#include "expr/oracle.h"
#include "ir/graph.h"

namespace mugraph::expr {

struct WalkOptions {
  int depth = 3;                    // ops on a path from the inputs, per level
  std::vector<int64_t> forloop_ranges = {4, 16, 64};  // Mirage's defaults
  size_t max_tensors_per_context = 200;  // bounds the pairs tried per depth
  size_t max_queries_per_context = 400;  // spreads the queries over all contexts
  size_t max_queries = 100000;
};

struct WalkResult {
  std::vector<expr::Expr> queries;  // distinct prefixes asked, in the order first asked
  size_t asked = 0;                 // including repeats (answered from the oracle's cache)
  size_t kept = 0;
};

// Walks the prefixes of `program`, asking `oracle` (built for `program`) about each.
WalkResult walk_prefixes(const ir::KernelGraph& program, expr::ExprPool& pool,
                         expr::Oracle& oracle, const WalkOptions& options = {});

}  // namespace mugraph::expr
