#include "rewrite/strategies.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>

#include "ir/canonical.h"
#include "support/rng.h"

namespace mugraph::rewrite {

const std::vector<std::string> kStrategies = {"pick-first", "greedy", "beam", "mcts"};

namespace {

using ir::KernelGraph;

// A state on a path from G0, with the decisions that lead there.
struct State {
  KernelGraph g;
  double t = 0;
  std::vector<Decision> path;
};

// Tracks the best state: a new one wins only beyond the band.
struct Best {
  double band = 0;
  State s;
  void offer(const State& c) {
    if (c.t < (1 - band) * s.t) s = c;
  }
};

Result<double> time_of(Env& env, const KernelGraph& g) {
  MG_ASSIGN_OR_RETURN(std::vector<double> t, env.times({&g}));
  return t[0];
}

// The decision that `a` (apply's result on `nodes`) records.
Decision decision(const std::vector<AltNode>& nodes, Applied& a, uint64_t h, double t) {
  Decision d{a.actions, std::move(a.rejected), {}, {}, h, t};
  for (size_t k = 0; k < nodes.size(); ++k) {
    if (a.actions[k] == 0) continue;
    const Option& o = nodes[k].options[static_cast<size_t>(a.actions[k] - 1)];
    d.taken.push_back("node " + std::to_string(k) + " (" + nodes[k].pass + ", " +
                      ops_text(nodes[k].region.ops) + "): " + o.label);
    d.verdicts.push_back(o.verdict);
  }
  return d;
}

// The state `actions` lead to from `from`, as a State (nothing when they change nothing).
Result<std::optional<State>> step(Env& env, const State& from, const std::vector<AltNode>& nodes,
                                  const std::vector<int>& actions) {
  MG_ASSIGN_OR_RETURN(Applied a, apply(from.g, nodes, actions));
  const uint64_t h = ir::canonical_hash(a.graph);
  if (h == ir::canonical_hash(from.g)) return std::optional<State>{};
  MG_ASSIGN_OR_RETURN(double t, time_of(env, a.graph));
  State s{a.graph, t, from.path};
  s.path.push_back(decision(nodes, a, h, t));
  return std::optional<State>(std::move(s));
}

// pick-first and greedy: one decision per step by `decide`, until the episode ends.
template <class Decide>
Result<State> episode(Env& env, const State& start, const StrategyOptions& o, Best& best,
                      Decide decide) {
  State cur = start;
  for (int k = 0; k < o.max_steps; ++k) {
    MG_ASSIGN_OR_RETURN(const std::vector<AltNode>* nodes, env.alternatives(cur.g));
    if (nodes->empty()) break;
    MG_ASSIGN_OR_RETURN(std::vector<int> actions, decide(cur.g, *nodes));
    MG_ASSIGN_OR_RETURN(std::optional<State> next, step(env, cur, *nodes, actions));
    if (!next) break;
    cur = std::move(*next);
    best.offer(cur);
  }
  return cur;
}

Result<std::vector<int>> greedy_actions(Env& env, const KernelGraph& g,
                                        const std::vector<AltNode>& nodes) {
  std::vector<int> actions(nodes.size(), 0);
  for (size_t d = 0; d < nodes.size(); ++d) {
    std::vector<KernelGraph> graphs;
    std::vector<int> which;
    for (int k = 0; k < nodes[d].actions(); ++k) {
      std::vector<int> acts = actions;
      acts[d] = k;
      MG_ASSIGN_OR_RETURN(Applied a, apply(g, nodes, acts));
      if (a.actions[d] != k) continue;  // rejected: overlaps or a cycle
      graphs.push_back(std::move(a.graph));
      which.push_back(k);
    }
    std::vector<const KernelGraph*> ptrs;
    for (const KernelGraph& x : graphs) ptrs.push_back(&x);
    MG_ASSIGN_OR_RETURN(std::vector<double> t, env.model_times(ptrs));
    const size_t i = static_cast<size_t>(std::min_element(t.begin(), t.end()) - t.begin());
    actions[d] = which[i];  // a tie goes to the lower action: keep first
  }
  return actions;
}

Status beam(Env& env, const State& start, const StrategyOptions& o, Best& best) {
  std::vector<State> level{start};
  std::map<uint64_t, bool> seen{{ir::canonical_hash(start.g), true}};
  for (int depth = 0; depth < o.max_steps && !level.empty(); ++depth) {
    std::vector<State> children;
    std::vector<double> parent_t;
    for (const State& s : level) {
      MG_ASSIGN_OR_RETURN(const std::vector<AltNode>* nodes, env.alternatives(s.g));
      for (size_t d = 0; d < nodes->size(); ++d)
        for (int k = 1; k < (*nodes)[d].actions(); ++k) {
          if (env.stats().evaluations + static_cast<int>(children.size()) >= o.max_evaluations) break;
          std::vector<int> acts(nodes->size(), 0);
          acts[d] = k;
          MG_ASSIGN_OR_RETURN(Applied a, apply(s.g, *nodes, acts));
          const uint64_t h = ir::canonical_hash(a.graph);
          if (a.actions[d] != k || seen.count(h)) continue;
          seen[h] = true;
          State c{a.graph, 0, s.path};
          c.path.push_back(decision(*nodes, a, h, 0));
          children.push_back(std::move(c));
          parent_t.push_back(s.t);
        }
    }
    if (children.empty()) break;
    std::vector<const KernelGraph*> ptrs;
    for (const State& c : children) ptrs.push_back(&c.g);
    MG_ASSIGN_OR_RETURN(std::vector<double> t, env.times(ptrs));
    std::vector<State> kept;
    for (size_t i = 0; i < children.size(); ++i) {
      children[i].t = children[i].path.back().seconds = t[i];
      if (t[i] < o.alpha * parent_t[i]) kept.push_back(std::move(children[i]));  // eq. 1
    }
    std::stable_sort(kept.begin(), kept.end(), [](const State& a, const State& b) { return a.t < b.t; });
    for (const State& c : kept) best.offer(c);
    if (static_cast<int>(kept.size()) > o.beam_width) kept.resize(static_cast<size_t>(o.beam_width));
    level = std::move(kept);
  }
  return {};
}

// Factorized MCTS (HloEnv appendix C.3).
class Mcts {
 public:
  Mcts(Env& env, const StrategyOptions& o) : env_(env), o_(o), rng_(o.seed) {}

  Status run(const State& start, Best& best) {
    best_ = &best;
    State root = start;
    int sims = o_.simulations;
    for (int k = 0; k < o_.max_steps; ++k) {
      MG_ASSIGN_OR_RETURN(int r, node_of(root.g, root.t, root.path));
      if (tree_[static_cast<size_t>(r)].nodes->empty()) break;
      for (int s = 0; s < sims && env_.stats().evaluations < o_.max_evaluations; ++s)
        MG_RETURN_IF_ERROR(simulate(r));
      const Node& n = tree_[static_cast<size_t>(r)];
      std::vector<int> actions;
      for (size_t d = 0; d < n.N.size(); ++d) {
        int a = 0;
        for (int b = 1; b < static_cast<int>(n.N[d].size()); ++b)
          if (n.N[d][b] > n.N[d][a] || (n.N[d][b] == n.N[d][a] && n.Q[d][b] > n.Q[d][a])) a = b;
        actions.push_back(a);
      }
      MG_ASSIGN_OR_RETURN(std::optional<State> next, step(env_, root, *n.nodes, actions));
      if (!next) break;
      root = std::move(*next);
      best.offer(root);
      sims = std::max(o_.min_simulations, sims / 2);
    }
    return {};
  }

 private:
  struct Node {
    KernelGraph g;
    double t = 0;
    std::vector<Decision> path;  // from G0, as first reached
    const std::vector<AltNode>* nodes = nullptr;
    std::vector<std::vector<int>> N;
    std::vector<std::vector<double>> Q;
  };

  Result<int> node_of(const KernelGraph& g, double t, const std::vector<Decision>& path) {
    const uint64_t h = ir::canonical_hash(g);
    if (auto it = index_.find(h); it != index_.end()) return it->second;
    MG_ASSIGN_OR_RETURN(const std::vector<AltNode>* nodes, env_.alternatives(g));
    Node n{g, t, path, nodes, {}, {}};
    for (const AltNode& a : *nodes) {
      n.N.emplace_back(static_cast<size_t>(a.actions()), 0);
      n.Q.emplace_back(static_cast<size_t>(a.actions()), 0.0);
    }
    tree_.push_back(std::move(n));
    index_[h] = static_cast<int>(tree_.size()) - 1;
    return static_cast<int>(tree_.size()) - 1;
  }

  double normalized(double q) const {
    return qmax_ > qmin_ ? (q - qmin_) / (qmax_ - qmin_) : 0.0;
  }

  // Eq. 4 per node with a uniform prior; ties broken at random.
  std::vector<int> select(const Node& n) {
    constexpr double c1 = 1.25, c2 = 19652;
    std::vector<int> actions;
    for (size_t d = 0; d < n.N.size(); ++d) {
      double total = 0;
      for (int x : n.N[d]) total += x;
      const double p = 1.0 / static_cast<double>(n.N[d].size());
      std::vector<int> top;
      double best = -std::numeric_limits<double>::infinity();
      for (size_t a = 0; a < n.N[d].size(); ++a) {
        const double u = (n.N[d][a] > 0 ? normalized(n.Q[d][a]) : 0.0) +
                         p * std::sqrt(total) / (1 + n.N[d][a]) * (c1 + std::log((total + c2 + 1) / c2));
        if (u > best + 1e-12) best = u, top.assign(1, static_cast<int>(a));
        else if (u > best - 1e-12) top.push_back(static_cast<int>(a));
      }
      actions.push_back(top[static_cast<size_t>(rng_.below(top.size()))]);
    }
    return actions;
  }

  // Uniform rollouts from a new state: its value is how much faster the best state they reach
  // is (0 when none is faster).
  Result<double> rollout_value(const KernelGraph& g, double t) {
    double low = t;
    for (int r = 0; r < o_.rollouts; ++r) {
      KernelGraph cur = g;
      for (int l = 0; l < o_.rollout_length && env_.stats().evaluations < o_.max_evaluations; ++l) {
        MG_ASSIGN_OR_RETURN(const std::vector<AltNode>* nodes, env_.alternatives(cur));
        if (nodes->empty()) break;
        std::vector<int> actions;
        for (const AltNode& a : *nodes) actions.push_back(static_cast<int>(rng_.below(static_cast<uint64_t>(a.actions()))));
        MG_ASSIGN_OR_RETURN(Applied a, apply(cur, *nodes, actions));
        MG_ASSIGN_OR_RETURN(double tn, time_of(env_, a.graph));
        low = std::min(low, tn);
        cur = std::move(a.graph);
      }
    }
    return t - low;
  }

  Status simulate(int root) {
    std::vector<std::pair<int, std::vector<int>>> path;  // (node, the actions taken there)
    int cur = root, leaf = root;
    double value = 0;
    for (int depth = 0; depth < o_.max_steps; ++depth) {
      const Node& n = tree_[static_cast<size_t>(cur)];
      if (n.nodes->empty()) break;
      const std::vector<int> actions = select(n);
      MG_ASSIGN_OR_RETURN(Applied a, apply(n.g, *n.nodes, actions));
      path.emplace_back(cur, actions);  // the selected actions, rejected ones included
      const uint64_t h = ir::canonical_hash(a.graph);
      if (h == ir::canonical_hash(n.g)) break;  // nothing changed: a leaf
      if (auto it = index_.find(h); it != index_.end()) {
        cur = leaf = it->second;
        continue;
      }
      MG_ASSIGN_OR_RETURN(double t, time_of(env_, a.graph));  // expansion
      std::vector<Decision> to = tree_[static_cast<size_t>(cur)].path;
      to.push_back(decision(*tree_[static_cast<size_t>(cur)].nodes, a, h, t));
      MG_ASSIGN_OR_RETURN(leaf, node_of(a.graph, t, to));
      best_->offer(State{tree_[static_cast<size_t>(leaf)].g, t, to});
      MG_ASSIGN_OR_RETURN(value, rollout_value(tree_[static_cast<size_t>(leaf)].g, t));
      break;
    }
    // Backup (eq. 5-6, gamma = 1): the return from step k is T(G^k) - T(end), the end being the
    // leaf less its rollout value.
    const double end = tree_[static_cast<size_t>(leaf)].t - value;
    for (const auto& [k, actions] : path) {
      Node& n = tree_[static_cast<size_t>(k)];
      const double g = n.t - end;
      for (size_t d = 0; d < actions.size(); ++d) {
        const size_t a = static_cast<size_t>(actions[d]);
        n.Q[d][a] = (n.N[d][a] * n.Q[d][a] + g) / (n.N[d][a] + 1);
        ++n.N[d][a];
        qmin_ = std::min(qmin_, n.Q[d][a]);
        qmax_ = std::max(qmax_, n.Q[d][a]);
      }
    }
    return {};
  }

  Env& env_;
  const StrategyOptions& o_;
  Rng rng_;
  Best* best_ = nullptr;
  std::vector<Node> tree_;
  std::map<uint64_t, int> index_;
  double qmin_ = std::numeric_limits<double>::infinity();
  double qmax_ = -std::numeric_limits<double>::infinity();
};

Status check(const StrategyOptions& o) {
  if (!(o.band >= 0 && o.band < 1)) return error("band must be in [0, 1), got ", o.band);
  if (o.max_steps < 1) return error("max_steps must be >= 1, got ", o.max_steps);
  if (o.beam_width < 1) return error("beam width must be >= 1, got ", o.beam_width);
  if (!(o.alpha > 0)) return error("alpha must be > 0, got ", o.alpha);
  if (o.max_evaluations < 1) return error("max_evaluations must be >= 1, got ", o.max_evaluations);
  if (o.simulations < 1 || o.min_simulations < 1)
    return error("simulations must be >= 1, got ", o.simulations, " and ", o.min_simulations);
  if (o.rollouts < 0 || o.rollout_length < 0) return error("rollouts must be >= 0");
  return {};
}

}  // namespace

Result<StrategyResult> run_strategy(const std::string& name, Env& env, const StrategyOptions& o) {
  if (std::find(kStrategies.begin(), kStrategies.end(), name) == kStrategies.end())
    return error("unknown strategy '", name, "' (pick-first, greedy, beam or mcts)");
  MG_RETURN_IF_ERROR(check(o));
  const auto t0 = std::chrono::steady_clock::now();
  MG_ASSIGN_OR_RETURN(double t_start, time_of(env, env.state()));
  const State start{env.state(), t_start, {}};
  Best best{o.band, start};
  if (name == "pick-first") {
    auto first = [](const KernelGraph&, const std::vector<AltNode>& nodes) -> Result<std::vector<int>> {
      return std::vector<int>(nodes.size(), 1);
    };
    MG_RETURN_IF_ERROR(episode(env, start, o, best, first).status());
  } else if (name == "greedy") {
    auto by_model = [&env](const KernelGraph& g, const std::vector<AltNode>& nodes) {
      return greedy_actions(env, g, nodes);
    };
    MG_RETURN_IF_ERROR(episode(env, start, o, best, by_model).status());
  } else if (name == "beam") {
    MG_RETURN_IF_ERROR(beam(env, start, o, best));
  } else {
    Mcts m(env, o);
    MG_RETURN_IF_ERROR(m.run(start, best));
  }
  StrategyResult r;
  r.strategy = name;
  r.best = best.s.g;
  r.best_s = best.s.t;
  r.start_s = t_start;
  r.decisions = best.s.path;
  r.stats = env.stats();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace mugraph::rewrite
