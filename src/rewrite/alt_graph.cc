#include "rewrite/alt_graph.h"

#include <algorithm>
#include <optional>
#include <queue>
#include <sstream>

#include "ir/builder.h"
#include "ir/lax_partition.h"

namespace mugraph::rewrite {
namespace {

using ir::KernelGraph;
using ir::TensorId;

// The op producing each tensor (-1: a program input).
std::vector<int> producers(const KernelGraph& g) {
  std::vector<int> p(g.tensors.size(), -1);
  for (size_t i = 0; i < g.ops.size(); ++i)
    for (TensorId t : g.ops[i].outputs) p[static_cast<size_t>(t)] = static_cast<int>(i);
  return p;
}

// The graph of units: every op is a unit, except that the ops of a taken region (owner >= 0)
// form one unit, numbered nops + owner. Returns the units in a topological order (among the
// ready units, the one with the smallest first op comes first, so that nothing taken keeps the
// program's order), or nothing when the units form a cycle.
std::optional<std::vector<int>> unit_order(const KernelGraph& g, const std::vector<int>& owner,
                                           int regions) {
  const int nops = static_cast<int>(g.ops.size()), nunits = nops + regions;
  auto unit = [&](int op) { return owner[static_cast<size_t>(op)] >= 0 ? nops + owner[static_cast<size_t>(op)] : op; };
  const std::vector<int> prod = producers(g);
  std::vector<std::vector<int>> succ(static_cast<size_t>(nunits));
  std::vector<int> indeg(static_cast<size_t>(nunits), 0), first(static_cast<size_t>(nunits), -1);
  std::vector<bool> used(static_cast<size_t>(nunits), false);
  for (int j = 0; j < nops; ++j) {
    const int u = unit(j);
    used[static_cast<size_t>(u)] = true;
    if (first[static_cast<size_t>(u)] < 0) first[static_cast<size_t>(u)] = j;
    for (TensorId t : g.ops[static_cast<size_t>(j)].inputs) {
      const int p = prod[static_cast<size_t>(t)];
      if (p < 0 || unit(p) == u) continue;
      auto& s = succ[static_cast<size_t>(unit(p))];
      if (std::find(s.begin(), s.end(), u) == s.end()) {
        s.push_back(u);
        ++indeg[static_cast<size_t>(u)];
      }
    }
  }
  using Item = std::pair<int, int>;  // (first op, unit)
  std::priority_queue<Item, std::vector<Item>, std::greater<>> ready;
  int count = 0;
  for (int u = 0; u < nunits; ++u)
    if (used[static_cast<size_t>(u)]) {
      ++count;
      if (indeg[static_cast<size_t>(u)] == 0) ready.push({first[static_cast<size_t>(u)], u});
    }
  std::vector<int> order;
  while (!ready.empty()) {
    const int u = ready.top().second;
    ready.pop();
    order.push_back(u);
    for (int v : succ[static_cast<size_t>(u)])
      if (--indeg[static_cast<size_t>(v)] == 0) ready.push({first[static_cast<size_t>(v)], v});
  }
  if (static_cast<int>(order.size()) != count) return std::nullopt;
  return order;
}

Status check_interface(const Region& r, const Option& o, size_t node) {
  const KernelGraph& c = o.graph;
  auto where = [&] { return "node " + std::to_string(node) + " option '" + o.label + "'"; };
  if (c.inputs.size() != r.inputs.size() || c.outputs.size() != r.outputs.size())
    return error(where(), ": ", c.inputs.size(), " inputs and ", c.outputs.size(),
                 " outputs, the region has ", r.inputs.size(), " and ", r.outputs.size());
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (!(c.tensor(c.inputs[i]).type == r.program.tensor(r.program.inputs[i]).type))
      return error(where(), ": input ", i, " ('", c.tensor(c.inputs[i]).name,
                   "') differs in type from the region's");
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    if (!(c.tensor(c.outputs[i]).type == r.program.tensor(r.program.outputs[i]).type))
      return error(where(), ": output ", i, " ('", c.tensor(c.outputs[i]).name,
                   "') differs in type from the region's");
    // Each region output gets its own tensor (its name stays): an output that is an input or
    // another output would rename or merge program tensors.
    if (std::find(c.inputs.begin(), c.inputs.end(), c.outputs[i]) != c.inputs.end() ||
        std::find(c.outputs.begin(), c.outputs.begin() + static_cast<long>(i), c.outputs[i]) !=
            c.outputs.begin() + static_cast<long>(i))
      return error(where(), ": output ", i, " ('", c.tensor(c.outputs[i]).name,
                   "') is one of its inputs or an earlier output");
  }
  return {};
}

}  // namespace

Result<Region> make_region(const KernelGraph& g, std::vector<int> ops) {
  if (ops.empty()) return error("a region needs at least one op");
  std::sort(ops.begin(), ops.end());
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i] < 0 || ops[i] >= static_cast<int>(g.ops.size()))
      return error("region op ", ops[i], " is out of range (the graph has ", g.ops.size(), " ops)");
    if (i > 0 && ops[i] == ops[i - 1]) return error("region op ", ops[i], " is given twice");
  }
  std::vector<bool> member(g.ops.size(), false);
  for (int i : ops) member[static_cast<size_t>(i)] = true;
  bool read = false;
  for (int i : ops)
    for (TensorId t : g.ops[static_cast<size_t>(i)].outputs) {
      read = read || std::find(g.outputs.begin(), g.outputs.end(), t) != g.outputs.end();
      for (size_t j = 0; j < g.ops.size() && !read; ++j)
        read = !member[j] && std::find(g.ops[j].inputs.begin(), g.ops[j].inputs.end(), t) != g.ops[j].inputs.end();
    }
  if (!read) return error("region ", ops_text(ops), " has no output: nothing outside it reads its ops");
  ir::Extracted e = ir::extract_ops(g, ops);
  return Region{std::move(ops), std::move(e.inputs), std::move(e.outputs), std::move(e.program)};
}

bool is_convex(const KernelGraph& g, const std::vector<int>& ops) {
  std::vector<int> owner(g.ops.size(), -1);
  for (int i : ops) owner[static_cast<size_t>(i)] = 0;
  return unit_order(g, owner, 1).has_value();
}

Result<Applied> apply(const KernelGraph& g, const std::vector<AltNode>& nodes,
                      const std::vector<int>& actions) {
  if (actions.size() != nodes.size())
    return error("apply: ", actions.size(), " actions for ", nodes.size(), " alternative nodes");
  for (size_t d = 0; d < nodes.size(); ++d) {
    if (actions[d] < 0 || actions[d] >= nodes[d].actions())
      return error("apply: action ", actions[d], " of node ", d, " is out of range (0 keeps, 1-",
                   nodes[d].actions() - 1, " take its options)");
    if (actions[d] > 0)
      MG_RETURN_IF_ERROR(check_interface(nodes[d].region, nodes[d].options[static_cast<size_t>(actions[d] - 1)], d));
  }
  Applied a;
  a.actions.assign(nodes.size(), 0);
  std::vector<int> owner(g.ops.size(), -1);  // op -> index into `taken`
  std::vector<size_t> taken;                 // nodes taken, in order
  for (size_t d = 0; d < nodes.size(); ++d) {
    if (actions[d] == 0) continue;
    const Region& r = nodes[d].region;
    std::string why;
    for (int i : r.ops)
      if (owner[static_cast<size_t>(i)] >= 0 && why.empty())
        why = "overlaps node " + std::to_string(taken[static_cast<size_t>(owner[static_cast<size_t>(i)])]);
    if (why.empty()) {
      for (int i : r.ops) owner[static_cast<size_t>(i)] = static_cast<int>(taken.size());
      if (!unit_order(g, owner, static_cast<int>(taken.size()) + 1)) {
        for (int i : r.ops) owner[static_cast<size_t>(i)] = -1;
        why = "would make the graph cyclic (a path leaves the region and comes back)";
      }
    }
    if (!why.empty()) {
      a.rejected.push_back("node " + std::to_string(d) + " (" + nodes[d].pass + ", " +
                           ops_text(r.ops) + "): " + why);
      continue;
    }
    taken.push_back(d);
    a.actions[d] = actions[d];
  }
  const int nops = static_cast<int>(g.ops.size());
  const std::vector<int> order = *unit_order(g, owner, static_cast<int>(taken.size()));
  // Liveness, backwards: a unit is live when a program output or a live unit reads its output.
  std::vector<bool> needed(g.tensors.size(), false), live(static_cast<size_t>(nops) + taken.size(), false);
  for (TensorId t : g.outputs) needed[static_cast<size_t>(t)] = true;
  auto unit_inputs = [&](int u) {
    return u < nops ? g.ops[static_cast<size_t>(u)].inputs : nodes[taken[static_cast<size_t>(u - nops)]].region.inputs;
  };
  auto unit_outputs = [&](int u) {
    return u < nops ? g.ops[static_cast<size_t>(u)].outputs : nodes[taken[static_cast<size_t>(u - nops)]].region.outputs;
  };
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    for (TensorId t : unit_outputs(*it)) live[static_cast<size_t>(*it)] = live[static_cast<size_t>(*it)] || needed[static_cast<size_t>(t)];
    if (!live[static_cast<size_t>(*it)]) {
      if (*it < nops) ++a.pruned_ops;
      continue;
    }
    for (TensorId t : unit_inputs(*it)) needed[static_cast<size_t>(t)] = true;
  }
  ir::KernelBuilder kb;
  std::vector<TensorId> id(g.tensors.size(), -1);
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const ir::Tensor& t = g.tensor(g.inputs[i]);
    MG_ASSIGN_OR_RETURN(id[static_cast<size_t>(g.inputs[i])], kb.input(t.name, t.type, g.input_scale(i)));
  }
  for (int u : order) {
    if (!live[static_cast<size_t>(u)]) continue;
    if (u < nops) {
      const ir::KernelOp& op = g.ops[static_cast<size_t>(u)];
      std::vector<TensorId> ins;
      std::vector<std::string> names;
      for (TensorId t : op.inputs) ins.push_back(id[static_cast<size_t>(t)]);
      for (TensorId t : op.outputs) names.push_back(g.tensor(t).name);
      MG_ASSIGN_OR_RETURN(std::vector<TensorId> made, kb.copy(op, ins, names));
      for (size_t k = 0; k < made.size(); ++k) id[static_cast<size_t>(op.outputs[k])] = made[k];
      continue;
    }
    const size_t d = taken[static_cast<size_t>(u - nops)];
    const Region& r = nodes[d].region;
    const Option& o = nodes[d].options[static_cast<size_t>(a.actions[d] - 1)];
    const KernelGraph& c = o.graph;
    std::vector<TensorId> cid(c.tensors.size(), -1);
    for (size_t i = 0; i < c.inputs.size(); ++i) cid[static_cast<size_t>(c.inputs[i])] = id[static_cast<size_t>(r.inputs[i])];
    for (const ir::KernelOp& op : c.ops) {
      std::vector<TensorId> ins;
      std::vector<std::string> names;
      for (TensorId t : op.inputs) ins.push_back(cid[static_cast<size_t>(t)]);
      for (TensorId t : op.outputs) {
        const auto at = std::find(c.outputs.begin(), c.outputs.end(), t);
        // Internal tensors get automatic names ("t<k>"), which a state tensor's name met later
        // takes over (NameScope renames the automatic one): no clash however states are named.
        names.push_back(at != c.outputs.end()
                            ? g.tensor(r.outputs[static_cast<size_t>(at - c.outputs.begin())]).name
                            : std::string());
      }
      MG_ASSIGN_OR_RETURN(std::vector<TensorId> made, kb.copy(op, ins, names));
      for (size_t k = 0; k < made.size(); ++k) cid[static_cast<size_t>(op.outputs[k])] = made[k];
    }
    for (size_t i = 0; i < c.outputs.size(); ++i) {
      const TensorId made = cid[static_cast<size_t>(c.outputs[i])];
      MG_CHECK(made >= 0, "a valid graph's output is an input or an op's output");
      id[static_cast<size_t>(r.outputs[i])] = made;
    }
  }
  for (TensorId t : g.outputs) MG_RETURN_IF_ERROR(kb.output(id[static_cast<size_t>(t)]));
  MG_ASSIGN_OR_RETURN(a.graph, std::move(kb).finish());
  return a;
}

std::string ops_text(const std::vector<int>& ops) {
  std::ostringstream os;
  if (ops.empty()) return "no ops";
  const bool run = ops.back() - ops.front() + 1 == static_cast<int>(ops.size());
  if (ops.size() == 1) os << "op " << ops[0];
  else if (run) os << "ops " << ops.front() << "-" << ops.back();
  else {
    os << "ops ";
    for (size_t i = 0; i < ops.size(); ++i) os << (i ? ", " : "") << ops[i];
  }
  return os.str();
}

}  // namespace mugraph::rewrite
