#include "rewrite/env.h"

#include <algorithm>

#include "ir/canonical.h"

namespace mugraph::rewrite {

Env::Env(ir::KernelGraph start, Augment augment, Evaluate oracle, Evaluate model,
         std::shared_ptr<TimeMemo> times, std::shared_ptr<TimeMemo> model_times)
    : state_(std::move(start)), augment_(std::move(augment)), oracle_(std::move(oracle)),
      model_(std::move(model)), times_(times ? std::move(times) : std::make_shared<TimeMemo>()),
      model_times_(model_times ? std::move(model_times) : std::make_shared<TimeMemo>()) {}

uint64_t Env::dag_hash() const { return ir::canonical_hash(state_); }

Result<Applied> Env::apply(const std::vector<int>& actions) {
  MG_ASSIGN_OR_RETURN(const std::vector<AltNode>* nodes, alternatives(state_));
  MG_ASSIGN_OR_RETURN(Applied a, rewrite::apply(state_, *nodes, actions));
  state_ = a.graph;
  return a;
}

Result<double> Env::evaluate() {
  MG_ASSIGN_OR_RETURN(std::vector<double> t, times({&state_}));
  return t[0];
}

Result<const std::vector<AltNode>*> Env::alternatives(const ir::KernelGraph& g) {
  std::vector<Augmented>& same = alts_[ir::canonical_hash(g)];
  for (const Augmented& a : same)
    if (a.graph == g) return a.nodes.get();
  MG_ASSIGN_OR_RETURN(std::vector<AltNode> nodes, augment_(g));
  ++stats_.augments;
  same.push_back({g, std::make_unique<std::vector<AltNode>>(std::move(nodes))});
  return same.back().nodes.get();
}

Result<std::vector<double>> Env::times(const std::vector<const ir::KernelGraph*>& graphs) {
  return memo_times(graphs, oracle_, *times_, false);
}

Result<std::vector<double>> Env::model_times(const std::vector<const ir::KernelGraph*>& graphs) {
  return memo_times(graphs, model_, *model_times_, true);
}

Result<std::vector<double>> Env::memo_times(const std::vector<const ir::KernelGraph*>& graphs,
                                            const Evaluate& f, TimeMemo& memo, bool model) {
  std::vector<uint64_t> h;
  std::vector<const ir::KernelGraph*> todo;
  std::vector<uint64_t> todo_h;
  std::set<uint64_t>& asked = model ? priced_ : asked_;
  for (const ir::KernelGraph* g : graphs) {
    h.push_back(ir::canonical_hash(*g));
    if (asked.insert(h.back()).second) ++(model ? stats_.model_calls : stats_.evaluations);
    if (!memo.count(h.back()) &&
        std::find(todo_h.begin(), todo_h.end(), h.back()) == todo_h.end()) {
      todo.push_back(g);
      todo_h.push_back(h.back());
    }
  }
  if (!todo.empty()) {
    MG_ASSIGN_OR_RETURN(std::vector<double> t, f(todo));
    MG_CHECK(t.size() == todo.size(), "an oracle returns one time per graph");
    for (size_t i = 0; i < todo.size(); ++i) memo[todo_h[i]] = t[i];
    if (!model) {
      stats_.measured += static_cast<int>(todo.size());
      ++stats_.batches;
    }
  }
  std::vector<double> out;
  for (uint64_t x : h) out.push_back(memo.at(x));
  return out;
}

}  // namespace mugraph::rewrite
