// Decision strategies over the environment (HloEnv, seed 003, §3 and appendix C). Each starts
// from the environment's state G0 and returns the best state it reached, the decisions that
// lead there from G0 and what it cost. A decision is one action per alternative node of a
// state (alt_graph.h); an episode ends at a state with no alternative node, when the actions
// change nothing, or after max_steps decisions.
//
//   pick-first   every node takes its first option (HloEnv's baseline: the first alternative
//                after the region as written); repeated until the episode ends
//   greedy       per decision, node by node in order, the action the cheap oracle (the cost
//                model) prices lowest given the actions chosen before it
//   beam         after HloEnv's beam search (appendix C.2, which is depth-first over every
//                joint action): breadth-first with width k, a state's children its single-node
//                actions (the joint space grows as the product of the nodes' options); a child
//                is kept only under the runtime upper bound T(child) < alpha T(parent) (eq. 1),
//                deduplicated by dag hash; the k fastest of a level are expanded next
//   mcts         factorized MCTS (appendix C.3): marginal statistics N_d, Q_d per alternative
//                node and action, selection by eq. 4 with a uniform prior (c1 = 1.25,
//                c2 = 19652), expansion evaluates T, the value of a new state from uniform
//                rollouts, backup of the (undiscounted) return T(G^k) - T(end) into every
//                node's marginal for the action it selected (eq. 5-6; an action apply
//                rejected is still the one selected), Q normalized to [0, 1] by the tree's min
//                and max; after each search the most visited action per node is taken, and the
//                next search has half the simulations (at least min_simulations). Every state
//                the tree expands is a candidate for the best, with its path from G0
//
// T is the environment's oracle (`times`), memoized by dag hash. Two times within `band` of each
// other (HloEnv's 0.94-1.06 for measured runtimes; 0 for the cost model) count as equal: a
// state replaces the best so far only when T(new) < (1 - band) T(best).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rewrite/env.h"

namespace mugraph::rewrite {

struct StrategyOptions {
  double band = 0.06;
  int max_steps = 8;           // decisions per episode
  int beam_width = 3;
  double alpha = 1.5;          // beam's runtime upper bound factor (HloEnv used 20)
  int max_evaluations = 64;    // beam and mcts: distinct states the oracle may time
  int simulations = 24;        // mcts: simulations of the first search
  int min_simulations = 4;
  int rollouts = 1, rollout_length = 3;  // mcts: uniform rollouts of a new state
  uint64_t seed = 1;           // mcts: its RNG
};

struct Decision {
  std::vector<int> actions;           // one per alternative node of the state it was made on
  std::vector<std::string> rejected;  // apply's lines for actions it could not take
  std::vector<std::string> taken;     // per action taken: "node 2 (fusion, ops 3-8): cand1"
  std::vector<std::string> verdicts;  // ... and its option's verdict, in the same order
  uint64_t hash = 0;                  // dag hash of the state it led to
  double seconds = 0;                 // T of that state
};

struct StrategyResult {
  std::string strategy;
  ir::KernelGraph best;           // the best state reached
  double best_s = 0, start_s = 0;  // T(best), T(G0)
  std::vector<Decision> decisions;  // from G0 to `best`
  EnvStats stats;                   // the environment's counters after the strategy ran
  double seconds = 0;               // wall time of the strategy (its evaluations included)
};

// Errors: an unknown name (the message lists the four), an invalid option, an oracle's or a
// pass's error.
Result<StrategyResult> run_strategy(const std::string& name, Env& env, const StrategyOptions& o);

extern const std::vector<std::string> kStrategies;  // "pick-first", "greedy", "beam", "mcts"

}  // namespace mugraph::rewrite
