// The pruning oracle of the search (Mirage §4.3): may_lead_to(prefix, program) is true iff
// A_eq u A_sub entails subexpr(E(prefix), E(program)), i.e. the prefix could be part of a uGraph
// whose abstract expression equals the program's. Prefixes answered false are discarded.
//
// Two decision procedures answer it (axioms.h is their common table):
//   kEGraph (the default)  the program's expressions are saturated once in an e-graph
//                          (egraph.h); each query is then a lookup plus a reachability bit,
//                          microseconds instead of Z3's milliseconds, and complete whenever
//                          saturation finished. If it did not (a limit was hit), a prefix the
//                          e-graph cannot find goes to Z3 while the fallback's Z3 time budget
//                          lasts (z3_fallback_budget_s), and is pruned unproven after that:
//                          the search sets the budget to 0, because where saturation blows up
//                          (nTrans: distributivity over a 9-term square) E-matching in Z3
//                          blows up too and every query times out, i.e. keeps the prefix
//                          after seconds of work, which is no pruning at all.
//   kZ3                    the paper's formulation, every query to the solver (z3_oracle.h).
//   kCrossCheck            both on every query; the answer is "keep" if either keeps, and
//                          each disagreement is counted (tests and the benchmark use it).
// Every answer is cached by prefix expression (the oracle is built for one program, so the
// prefix is the whole key); hash-consing makes the lookup O(1).
//
// Thread-safe: queries may come from several search threads (one lock around the cache and
// the backends; the e-graph answer itself is a few hash lookups).
#pragma once

#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "expr/egraph.h"
#include "expr/expr.h"
#include "expr/z3_oracle.h"

namespace mugraph::expr {

enum class OracleMode { kEGraph, kZ3, kCrossCheck };

struct OracleOptions {
  OracleMode mode = OracleMode::kEGraph;
  SaturationLimits limits;
  unsigned z3_timeout_ms = 2000;
  // Total Z3 time for prefixes an unsaturated e-graph cannot find (kEGraph mode). Once spent,
  // such prefixes are pruned without proof (counted in OracleStats::pruned_unproven): the
  // pruning then only keeps what the partial e-graph holds. Infinity: always ask Z3.
  double z3_fallback_budget_s = std::numeric_limits<double>::infinity();
  // When saturation hits a limit and this is > 0, the e-graph is rebuilt with at most this
  // many rewrite rounds: it then holds every form within that many rounds of the program (a
  // set that does not depend on where a node limit happened to cut a round), which is what
  // the oracle keeps when Z3 is not asked. Few rounds keep the pruning sharp (nTrans: 3 rounds,
  // 919 nodes, against 350k nodes and ~50x more kept prefixes when cut by the node limit).
  int unsaturated_rounds = 0;
};

struct OracleStats {
  size_t queries = 0;        // calls to may_lead_to
  size_t cache_hits = 0;     // answered from the cache
  size_t egraph_answers = 0;  // decided by the e-graph
  size_t z3_answers = 0;      // decided by Z3 (kZ3 mode, or e-graph fallback)
  size_t z3_timeouts = 0;     // Z3 ran out of time (answered keep)
  size_t pruned_unproven = 0;  // not in the unsaturated e-graph, Z3 fallback budget spent
  size_t kept = 0, pruned = 0;  // distinct prefixes, by answer
  size_t disagreements = 0;     // kCrossCheck: e-graph and Z3 differed
  double saturate_seconds = 0, egraph_seconds = 0, z3_seconds = 0;
  SaturationReport saturation;     // of the e-graph in use
  SaturationReport first_attempt;  // when it was rebuilt with unsaturated_rounds: the cut one
  std::string to_string() const;  // one line per group, for logs and the search summary
};

class Oracle {
 public:
  // `program`: the abstract expressions of the program's outputs (abstract.h). `pool` must
  // outlive the oracle; prefixes must come from the same pool.
  Oracle(ExprPool& pool, std::vector<Expr> program, OracleOptions options = {});
  ~Oracle();

  bool may_lead_to(Expr prefix);
  OracleStats stats() const;
  const std::vector<Expr>& program() const { return program_; }

  // The backends on their own, uncached (tests, the benchmark).
  // The e-graph's answer: true/false, or nullopt when the prefix is not found and saturation
  // was incomplete (then only Z3 can say).
  std::optional<bool> egraph_answer(Expr prefix) const;
  // Z3's answer; with `use_witness`, a term of the program's class containing the prefix is
  // taken from the e-graph (when it has one) and handed to Z3 as a hint.
  Z3Answer z3_answer(Expr prefix, bool use_witness = false);
  // Whether `e` is equal (under the axioms) to program output `i`: true/false when the e-graph
  // decides it, nullopt when it cannot (Z3 mode, or `e` not found in an unsaturated e-graph).
  // The search uses it to recognise a finished uGraph; the verifier has the final word.
  std::optional<bool> equals_output(Expr e, size_t i) const;
  // Whether `a` and `b` are equal under the axioms, as far as the e-graph knows: true when both
  // are in one class, false when the e-graph is saturated and holds one of them but not the
  // other in that class, nullopt otherwise. (Structurally equal terms are always equal.)
  std::optional<bool> equivalent(Expr a, Expr b) const;
  // A lower bound on the ops between `e` and a program output in any uGraph whose output
  // equals the program's (EGraph::steps_to: each op adds one node or a sum over a mul to the
  // path): known only when the e-graph is saturated and holds `e` below an output.
  std::optional<int> steps_to_output(Expr e) const;
  // A term of a program output's class in which `prefix` occurs literally (e-graph modes).
  std::optional<Expr> witness(Expr prefix) const;

 private:
  bool decide(Expr prefix);

  ExprPool& pool_;
  std::vector<Expr> program_;
  OracleOptions options_;
  EGraph egraph_;
  std::vector<ClassId> roots_;
  std::vector<bool> reachable_;
  std::vector<uint32_t> steps_;  // EGraph::steps_to(roots_), when saturated
  std::unique_ptr<Z3Oracle> z3_;  // created on first use
  mutable std::mutex mu_;
  std::unordered_map<Expr, bool> cache_;
  OracleStats stats_;
};

// One-off form of the question (builds and saturates an oracle per call: hold an Oracle when
// asking about many prefixes of one program).
bool may_lead_to(ExprPool& pool, Expr prefix, Expr program, OracleOptions options = {});

}  // namespace mugraph::expr
