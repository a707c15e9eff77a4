// The alternative graph of HloEnv (seed 003, §2.4) over a mugraph program.
//
// A pass run in dry mode does not rewrite the program: for each opportunity it finds (a region
// of ops it could replace) it records an *alternative node*: the region as written (action 0,
// "keep") and the replacements it proposes (actions 1..n). A state of the environment is a
// program; its alternative nodes are what the passes propose on it. `apply` takes one action
// per node and builds the next state:
//   - in node order, a replacing action is taken unless its region overlaps a region taken
//     before it, or replacing it would make the graph cyclic (a path leaving the region and
//     coming back into it through ops outside, other taken regions included); a rejected
//     action reads as "keep" and says why;
//   - ops and replaced regions none of whose outputs reach a program output are pruned;
//   - the program's inputs and outputs (names, types, order) never change.
// A replacement computes the region's outputs from its inputs (both in Region order); the
// passes only propose replacements the verifier proved equal to the region (fusion.h), so every
// state computes what the first one does.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "support/status.h"

namespace mugraph::rewrite {

// A set of a state's ops and its boundary (ir::extract_ops: inputs in first-read order,
// outputs in op order), with the ops as a program of their own.
struct Region {
  std::vector<int> ops;  // ascending op indices of the state
  std::vector<ir::TensorId> inputs, outputs;
  ir::KernelGraph program;
};

// Errors: an empty set, an index out of range or repeated, a region nothing outside reads (dead
// ops: apply prunes them).
Result<Region> make_region(const ir::KernelGraph& g, std::vector<int> ops);

// Whether `ops` can become one unit: no path from one of them through an op outside the set
// back into the set.
bool is_convex(const ir::KernelGraph& g, const std::vector<int>& ops);

struct Option {
  std::string label;      // as the pass names it ("cand1")
  ir::KernelGraph graph;  // computes the region's outputs from its inputs
  std::string verdict;    // the verifier's verdict of `graph` against the region, as printed
  double model_s = 0;     // the cost model's time of `graph` on the pass's target
};

struct AltNode {
  std::string pass;  // the pass that proposed it ("fusion")
  Region region;
  std::vector<Option> options;  // action k > 0 takes options[k - 1]; action 0 keeps the region

  int actions() const { return static_cast<int>(options.size()) + 1; }
};

struct Applied {
  ir::KernelGraph graph;
  std::vector<int> actions;           // per node, the action taken (a rejected one reads 0)
  std::vector<std::string> rejected;  // one line per rejected action: the node and why
  int pruned_ops = 0;                 // ops of the state (outside taken regions) pruned as dead
};

// Errors: not one action per node, an action out of range, a replacement whose interface
// (input/output count or types) differs from its region's.
Result<Applied> apply(const ir::KernelGraph& g, const std::vector<AltNode>& nodes,
                      const std::vector<int>& actions);

// "ops 3-7" or "ops 2, 5, 9": a region's ops as a report prints them.
std::string ops_text(const std::vector<int>& ops);

}  // namespace mugraph::rewrite
