#include "search/lax_partition.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "ir/builder.h"

namespace mugraph::search {
namespace {

template <class T>
T must(Result<T> r) {
  MG_CHECK(r.ok(), "lax partition built an invalid graph: " << r.status().message());
  return std::move(*r);
}

bool is_lax(const ir::KernelOp& op) {
  return !op.graph_defined && ir::op_info(op.op).lax != ir::LaxRole::kNonLax;
}

bool is_exp_like(const ir::KernelOp& op) {
  return !op.graph_defined && ir::op_info(op.op).lax == ir::LaxRole::kExp;
}

int find(std::vector<int>& parent, int x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

}  // namespace

Partition partition_lax(const ir::KernelGraph& g) {
  const size_t nt = g.tensors.size(), nops = g.ops.size();
  std::vector<int> level(nt, 0), exps(nt, 0), producer(nt, -1), op_level(nops, 0);
  for (size_t i = 0; i < nops; ++i) {
    const ir::KernelOp& op = g.ops[i];
    int lv = 0;
    for (ir::TensorId t : op.inputs) lv = std::max(lv, level[t]);
    int ex = 0;
    for (ir::TensorId t : op.inputs)
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
    for (ir::TensorId t : op.outputs) {
      level[t] = out_level;
      exps[t] = out_exps;
      producer[t] = static_cast<int>(i);
    }
  }
  // Union Lax ops of one level connected by a tensor (producer-consumer or shared input).
  std::vector<int> parent(nops);
  std::iota(parent.begin(), parent.end(), 0);
  std::map<std::pair<ir::TensorId, int>, int> reader;  // (tensor, level) -> a Lax op reading it
  for (size_t i = 0; i < nops; ++i) {
    if (!is_lax(g.ops[i])) continue;
    for (ir::TensorId t : g.ops[i].inputs) {
      const int p = producer[t];
      if (p >= 0 && is_lax(g.ops[p]) && op_level[p] == op_level[i])
        parent[find(parent, p)] = find(parent, static_cast<int>(i));
      auto [it, fresh] = reader.emplace(std::make_pair(t, op_level[i]), static_cast<int>(i));
      if (!fresh) parent[find(parent, it->second)] = find(parent, static_cast<int>(i));
    }
  }
  Partition out;
  std::map<int, size_t> part_of_root;
  std::vector<bool> is_output(nt, false);
  for (ir::TensorId t : g.outputs) is_output[t] = true;
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
    std::vector<bool> inside(nt, false);
    for (int i : part.ops)
      for (ir::TensorId t : g.ops[i].outputs) inside[t] = true;
    for (int i : part.ops)
      for (ir::TensorId t : g.ops[i].inputs)
        if (!inside[t] && std::find(part.inputs.begin(), part.inputs.end(), t) == part.inputs.end())
          part.inputs.push_back(t);
    for (int i : part.ops)
      for (ir::TensorId t : g.ops[i].outputs) {
        bool outside = is_output[t];
        for (size_t j = 0; j < nops && !outside; ++j) {
          if (std::find(part.ops.begin(), part.ops.end(), static_cast<int>(j)) != part.ops.end())
            continue;
          const auto& in = g.ops[j].inputs;
          outside = std::find(in.begin(), in.end(), t) != in.end();
        }
        if (outside) part.outputs.push_back(t);
      }
    ir::KernelBuilder kb;
    std::map<ir::TensorId, ir::TensorId> id;
    for (ir::TensorId t : part.inputs) id[t] = must(kb.input(g.tensor(t).name, g.tensor(t).type));
    for (int i : part.ops) {
      const ir::KernelOp& op = g.ops[i];
      std::vector<ir::TensorId> ins;
      for (ir::TensorId t : op.inputs) ins.push_back(id.at(t));
      id[op.outputs[0]] = must(kb.op(op.op, ins, op.attrs, g.tensor(op.outputs[0]).name));
    }
    for (ir::TensorId t : part.outputs) MG_CHECK(kb.output(id.at(t)).ok(), "part output");
    part.program = must(std::move(kb).finish());
  }
  return out;
}

ir::KernelGraph stitch(const ir::KernelGraph& g, const Partition& p,
                       const std::vector<ir::KernelGraph>& chosen) {
  MG_CHECK(chosen.size() == p.parts.size(), "stitch: one graph per part");
  ir::KernelBuilder kb;
  std::map<ir::TensorId, ir::TensorId> id;  // whole-program tensor -> new id
  for (ir::TensorId t : g.inputs) id[t] = must(kb.input(g.tensor(t).name, g.tensor(t).type));
  int max_level = 0;
  for (const LaxPart& part : p.parts) max_level = std::max(max_level, part.level);
  for (int lv : p.kept_level) max_level = std::max(max_level, lv);
  for (int lv = 0; lv <= max_level; ++lv) {
    for (size_t k = 0; k < p.parts.size(); ++k) {
      const LaxPart& part = p.parts[k];
      if (part.level != lv) continue;
      const ir::KernelGraph& c = chosen[k];
      MG_CHECK(c.inputs.size() == part.inputs.size() && c.outputs.size() == part.outputs.size(),
               "stitch: part " << k << " interface differs");
      std::vector<ir::TensorId> cid(c.tensors.size(), -1);
      for (size_t i = 0; i < c.inputs.size(); ++i) cid[c.inputs[i]] = id.at(part.inputs[i]);
      auto name_of = [&](ir::TensorId t) {
        for (size_t i = 0; i < c.outputs.size(); ++i)
          if (c.outputs[i] == t) return g.tensor(part.outputs[i]).name;
        return "p" + std::to_string(k) + "_" + c.tensor(t).name;
      };
      for (const ir::KernelOp& op : c.ops) {
        std::vector<ir::TensorId> ins;
        for (ir::TensorId t : op.inputs) ins.push_back(cid[t]);
        if (!op.graph_defined) {
          cid[op.outputs[0]] = must(kb.op(op.op, ins, op.attrs, name_of(op.outputs[0])));
          continue;
        }
        std::vector<std::string> names;
        for (ir::TensorId t : op.outputs) names.push_back(name_of(t));
        auto outs = must(kb.graph_defined(ins, op.block, names));
        for (size_t j = 0; j < outs.size(); ++j) cid[op.outputs[j]] = outs[j];
      }
      for (size_t i = 0; i < c.outputs.size(); ++i) id[part.outputs[i]] = cid[c.outputs[i]];
    }
    for (size_t j = 0; j < p.kept_ops.size(); ++j) {
      if (p.kept_level[j] != lv) continue;
      const ir::KernelOp& op = g.ops[p.kept_ops[j]];
      std::vector<ir::TensorId> ins;
      for (ir::TensorId t : op.inputs) ins.push_back(id.at(t));
      if (!op.graph_defined) {
        id[op.outputs[0]] = must(kb.op(op.op, ins, op.attrs, g.tensor(op.outputs[0]).name));
        continue;
      }
      std::vector<std::string> names;
      for (ir::TensorId t : op.outputs) names.push_back(g.tensor(t).name);
      auto outs = must(kb.graph_defined(ins, op.block, names));
      for (size_t i = 0; i < outs.size(); ++i) id[op.outputs[i]] = outs[i];
    }
  }
  for (ir::TensorId t : g.outputs) MG_CHECK(kb.output(id.at(t)).ok(), "stitch output");
  return must(std::move(kb).finish());
}

}  // namespace mugraph::search
