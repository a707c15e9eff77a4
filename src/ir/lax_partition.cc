#include "ir/lax_partition.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "ir/builder.h"

namespace mugraph::ir {
namespace {

bool is_lax(const KernelOp& op) {
  return !op.graph_defined && op_info(op.op).lax != LaxRole::kNonLax;
}

bool is_exp_like(const KernelOp& op) {
  return !op.graph_defined && op_info(op.op).lax == LaxRole::kExp;
}

int find(std::vector<int>& parent, int x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

// Adds a copy of `op` to `kb`: input t becomes in(t), output t is named name(t) and recorded as
// out[t].
template <class In, class Name, class Out>
void copy_op(KernelBuilder& kb, const KernelOp& op, In in, Name name, Out& out) {
  std::vector<TensorId> ins;
  for (TensorId t : op.inputs) ins.push_back(in(t));
  std::vector<std::string> names;
  for (TensorId t : op.outputs) names.push_back(name(t));
  const std::vector<TensorId> made = kb.copy(op, ins, names).value();
  for (size_t i = 0; i < made.size(); ++i) out[op.outputs[i]] = made[i];
}

}  // namespace

namespace {
// The scale of program input t (0: unset, or t is not an input).
double input_scale_of(const KernelGraph& g, TensorId t) {
  const auto it = std::find(g.inputs.begin(), g.inputs.end(), t);
  return it == g.inputs.end() ? 0 : g.input_scale(static_cast<size_t>(it - g.inputs.begin()));
}
}  // namespace

Partition partition_lax(const KernelGraph& g) {
  const size_t nt = g.tensors.size(), nops = g.ops.size();
  std::vector<int> level(nt, 0), exps(nt, 0), producer(nt, -1), op_level(nops, 0);
  for (size_t i = 0; i < nops; ++i) {
    const KernelOp& op = g.ops[i];
    int lv = 0;
    for (TensorId t : op.inputs) lv = std::max(lv, level[t]);
    int ex = 0;
    for (TensorId t : op.inputs)
      if (level[t] == lv) ex = std::max(ex, exps[t]);
    int out_level = lv, out_exps = ex;
    if (!is_lax(op)) {
      out_level = lv + 1;
      out_exps = 0;
    } else if (is_exp_like(op)) {
      if (ex >= 1) lv = out_level = lv + 1, out_exps = 1;
      else out_exps = 1;
    }
    op_level[i] = lv;
    for (TensorId t : op.outputs) {
      level[t] = out_level;
      exps[t] = out_exps;
      producer[t] = static_cast<int>(i);
    }
  }
  // Union Lax ops of one level connected by a tensor (producer-consumer or shared input).
  std::vector<int> parent(nops);
  std::iota(parent.begin(), parent.end(), 0);
  std::map<std::pair<TensorId, int>, int> reader;  // (tensor, level) -> a Lax op reading it
  for (size_t i = 0; i < nops; ++i) {
    if (!is_lax(g.ops[i])) continue;
    for (TensorId t : g.ops[i].inputs) {
      const int p = producer[t];
      if (p >= 0 && is_lax(g.ops[p]) && op_level[p] == op_level[i])
        parent[find(parent, p)] = find(parent, static_cast<int>(i));
      auto [it, fresh] = reader.emplace(std::make_pair(t, op_level[i]), static_cast<int>(i));
      if (!fresh) parent[find(parent, it->second)] = find(parent, static_cast<int>(i));
    }
  }
  Partition out;
  std::map<int, size_t> part_of_root;
  for (size_t i = 0; i < nops; ++i) {
    if (!is_lax(g.ops[i])) {
      out.kept_ops.push_back(static_cast<int>(i));
      out.kept_level.push_back(op_level[i]);
      continue;
    }
    const int r = find(parent, static_cast<int>(i));
    auto [it, fresh] = part_of_root.emplace(r, out.parts.size());
    if (fresh) out.parts.push_back({});
    out.parts[it->second].ops.push_back(static_cast<int>(i));
    out.parts[it->second].level = op_level[i];
  }
  for (LaxPart& part : out.parts) {
    Extracted e = extract_ops(g, part.ops);
    part.program = std::move(e.program);
    part.inputs = std::move(e.inputs);
    part.outputs = std::move(e.outputs);
  }
  return out;
}

Extracted extract_ops(const KernelGraph& g, const std::vector<int>& ops) {
  const size_t nt = g.tensors.size();
  Extracted e;
  std::vector<bool> inside(nt, false), member(g.ops.size(), false), read_outside(nt, false);
  for (int i : ops) {
    member[static_cast<size_t>(i)] = true;
    for (TensorId t : g.ops[i].outputs) inside[t] = true;
  }
  for (TensorId t : g.outputs) read_outside[t] = true;
  for (size_t j = 0; j < g.ops.size(); ++j)
    if (!member[j])
      for (TensorId t : g.ops[j].inputs) read_outside[t] = true;
  for (int i : ops)
    for (TensorId t : g.ops[i].inputs)
      if (!inside[t] && std::find(e.inputs.begin(), e.inputs.end(), t) == e.inputs.end())
        e.inputs.push_back(t);
  for (int i : ops)
    for (TensorId t : g.ops[i].outputs)
      if (read_outside[t]) e.outputs.push_back(t);
  KernelBuilder kb;
  std::map<TensorId, TensorId> id;
  for (TensorId t : e.inputs)  // a program input keeps its scale (scale=, --input-scale)
    id[t] = kb.input(g.tensor(t).name, g.tensor(t).type, input_scale_of(g, t)).value();
  for (int i : ops)
    copy_op(kb, g.ops[i], [&](TensorId t) { return id.at(t); },
            [&](TensorId t) { return g.tensor(t).name; }, id);
  for (TensorId t : e.outputs) MG_CHECK(kb.output(id.at(t)).ok(), "extracted output");
  e.program = std::move(kb).finish().value();
  return e;
}

KernelGraph stitch(const KernelGraph& g, const Partition& p,
                       const std::vector<KernelGraph>& chosen) {
  MG_CHECK(chosen.size() == p.parts.size(), "stitch: one graph per part");
  KernelBuilder kb;
  std::map<TensorId, TensorId> id;  // whole-program tensor -> new id
  for (TensorId t : g.inputs)
    id[t] = kb.input(g.tensor(t).name, g.tensor(t).type, input_scale_of(g, t)).value();
  int max_level = 0;
  for (const LaxPart& part : p.parts) max_level = std::max(max_level, part.level);
  for (int lv : p.kept_level) max_level = std::max(max_level, lv);
  for (int lv = 0; lv <= max_level; ++lv) {
    for (size_t k = 0; k < p.parts.size(); ++k) {
      const LaxPart& part = p.parts[k];
      if (part.level != lv) continue;
      const KernelGraph& c = chosen[k];
      MG_CHECK(c.inputs.size() == part.inputs.size() && c.outputs.size() == part.outputs.size(),
               "stitch: part " << k << " interface differs");
      std::vector<TensorId> cid(c.tensors.size(), -1);
      for (size_t i = 0; i < c.inputs.size(); ++i) cid[c.inputs[i]] = id.at(part.inputs[i]);
      auto name_of = [&](TensorId t) {
        for (size_t i = 0; i < c.outputs.size(); ++i)
          if (c.outputs[i] == t) return g.tensor(part.outputs[i]).name;
        return "p" + std::to_string(k) + "_" + c.tensor(t).name;
      };
      for (const KernelOp& op : c.ops)
        copy_op(kb, op, [&](TensorId t) { return cid[t]; }, name_of, cid);
      for (size_t i = 0; i < c.outputs.size(); ++i) id[part.outputs[i]] = cid[c.outputs[i]];
    }
    for (size_t j = 0; j < p.kept_ops.size(); ++j) {
      if (p.kept_level[j] != lv) continue;
      copy_op(kb, g.ops[p.kept_ops[j]], [&](TensorId t) { return id.at(t); },
              [&](TensorId t) { return g.tensor(t).name; }, id);
    }
  }
  for (TensorId t : g.outputs) MG_CHECK(kb.output(id.at(t)).ok(), "stitch output");
  return std::move(kb).finish().value();
}

}  // namespace mugraph::ir
