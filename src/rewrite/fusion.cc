#include "rewrite/fusion.h"

#include <algorithm>
#include <numeric>
#include <set>

#include "ir/lax_partition.h"

namespace mugraph::rewrite {
namespace {

// The connected pieces of `ops` (ascending), linked by a tensor one produces and another reads
// or by an input two read (as partition_lax links a part); each piece ascending.
std::vector<std::vector<int>> pieces(const ir::KernelGraph& g, const std::vector<int>& ops) {
  std::vector<int> parent(ops.size());
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](int x) {
    while (parent[static_cast<size_t>(x)] != x) x = parent[static_cast<size_t>(x)] = parent[static_cast<size_t>(parent[static_cast<size_t>(x)])];
    return x;
  };
  auto linked = [&](const ir::KernelOp& a, const ir::KernelOp& b) {
    for (ir::TensorId t : b.inputs) {
      if (std::find(a.outputs.begin(), a.outputs.end(), t) != a.outputs.end()) return true;
      if (std::find(a.inputs.begin(), a.inputs.end(), t) != a.inputs.end()) return true;
    }
    return false;
  };
  for (size_t i = 0; i < ops.size(); ++i)
    for (size_t j = i + 1; j < ops.size(); ++j)
      if (linked(g.ops[static_cast<size_t>(ops[i])], g.ops[static_cast<size_t>(ops[j])]))
        parent[static_cast<size_t>(find(static_cast<int>(i)))] = find(static_cast<int>(j));
  std::vector<std::vector<int>> out;
  std::vector<int> slot(ops.size(), -1);
  for (size_t i = 0; i < ops.size(); ++i) {
    int& s = slot[static_cast<size_t>(find(static_cast<int>(i)))];
    if (s < 0) {
      s = static_cast<int>(out.size());
      out.emplace_back();
    }
    out[static_cast<size_t>(s)].push_back(ops[i]);
  }
  return out;
}

}  // namespace

Result<std::vector<std::vector<int>>> fusion_regions(const ir::KernelGraph& g, const FusionOptions& o) {
  if (o.min_ops < 1) return error("fusion: min_ops must be >= 1, got ", o.min_ops);
  if (o.max_ops < o.min_ops)
    return error("fusion: max_ops (", o.max_ops, ") must be >= min_ops (", o.min_ops, ")");
  std::set<std::vector<int>> found;
  auto take = [&](const std::vector<int>& ops) {
    for (const std::vector<int>& p : pieces(g, ops))
      if (static_cast<int>(p.size()) >= o.min_ops && is_convex(g, p)) found.insert(p);
  };
  for (const ir::LaxPart& part : ir::partition_lax(g).parts) {
    const int n = static_cast<int>(part.ops.size());
    if (n <= o.max_ops) {
      take(part.ops);
      continue;
    }
    const int stride = std::max(1, o.max_ops / 2);
    for (int s = 0; s < n; s += stride) {
      const int e = std::min(n, s + o.max_ops);
      take(std::vector<int>(part.ops.begin() + s, part.ops.begin() + e));
      if (e == n) break;
    }
  }
  std::vector<std::vector<int>> out(found.begin(), found.end());
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.front() < b.front(); });
  return out;
}

Result<std::vector<AltNode>> fusion_alternatives(const ir::KernelGraph& g, const FusionOptions& o,
                                                 const Propose& propose) {
  MG_ASSIGN_OR_RETURN(auto regions, fusion_regions(g, o));
  std::vector<AltNode> nodes;
  for (std::vector<int>& ops : regions) {
    MG_ASSIGN_OR_RETURN(Region r, make_region(g, std::move(ops)));
    MG_ASSIGN_OR_RETURN(std::vector<Option> options, propose(r.program));
    if (options.empty()) continue;
    nodes.push_back({"fusion", std::move(r), std::move(options)});
  }
  return nodes;
}

}  // namespace mugraph::rewrite
