// The graph-rewrite environment (HloEnv, seed 003, §2): a current state (a program), its
// alternative nodes (the passes in dry mode), apply, evaluate and the structural DAG hash.
//
//   get_alternatives()   the alternative nodes of the state (`augment`, memoized per state)
//   apply(actions)       one action per node (alt_graph.h); the result becomes the state
//   evaluate()           T(state) by the oracle (memoized per state)
//   dag_hash()           the state's structural hash: topology, op kinds and attributes, block
//                        graphs, shapes, dtypes and layouts; not names nor the order of
//                        independent ops (ir::canonical_hash)
//
// Both callbacks are injected (the driver passes the superoptimizer's fusion pass and a timing
// oracle on the backend at hand: driver/model.h); the strategies (strategies.h) explore
// states through the same memoized `alternatives(g)` and `times(graphs)`. `model` is the cheap
// oracle (the cost model), used where a strategy ranks many states.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "rewrite/alt_graph.h"

namespace mugraph::rewrite {

using Augment = std::function<Result<std::vector<AltNode>>(const ir::KernelGraph&)>;
// Seconds per graph, in order (a batch: one JIT module, say).
using Evaluate = std::function<Result<std::vector<double>>(const std::vector<const ir::KernelGraph*>&)>;

struct EnvStats {
  int augments = 0;     // distinct states augmented
  int evaluations = 0;  // distinct states this environment asked the oracle about
  int measured = 0;     // of those, the ones the oracle timed (not known from a shared memo)
  int batches = 0;      // oracle calls
  int model_calls = 0;  // distinct states the cheap oracle priced
};

// Oracle answers by dag hash. Environments that share one (several strategies on one model)
// see one T per state and time it once.
using TimeMemo = std::map<uint64_t, double>;

class Env {
 public:
  Env(ir::KernelGraph start, Augment augment, Evaluate oracle, Evaluate model,
      std::shared_ptr<TimeMemo> times = nullptr, std::shared_ptr<TimeMemo> model_times = nullptr);

  // HloEnv's interface, on the current state.
  const ir::KernelGraph& state() const { return state_; }
  uint64_t dag_hash() const;
  Result<const std::vector<AltNode>*> get_alternatives() { return alternatives(state_); }
  Result<Applied> apply(const std::vector<int>& actions);
  Result<double> evaluate();
  void set_state(ir::KernelGraph g) { state_ = std::move(g); }

  // The same services for any state (memoized by dag hash).
  Result<const std::vector<AltNode>*> alternatives(const ir::KernelGraph& g);
  Result<std::vector<double>> times(const std::vector<const ir::KernelGraph*>& graphs);
  Result<std::vector<double>> model_times(const std::vector<const ir::KernelGraph*>& graphs);
  const EnvStats& stats() const { return stats_; }

 private:
  Result<std::vector<double>> memo_times(const std::vector<const ir::KernelGraph*>& graphs,
                                         const Evaluate& f, TimeMemo& memo, bool model);
  ir::KernelGraph state_;
  Augment augment_;
  Evaluate oracle_, model_;
  // By dag hash, then the exact graph: the nodes name ops by index, and a state equal by hash
  // may hold its ops in another order.
  struct Augmented {
    ir::KernelGraph graph;
    std::unique_ptr<std::vector<AltNode>> nodes;
  };
  std::map<uint64_t, std::vector<Augmented>> alts_;
  std::shared_ptr<TimeMemo> times_, model_times_;
  std::set<uint64_t> asked_, priced_;
  EnvStats stats_;
};

}  // namespace mugraph::rewrite
