#include "opt/plan_memory.h"

#include <z3++.h>

#include <algorithm>
#include <numeric>

namespace mugraph::opt {
namespace {

std::vector<std::pair<int, int>> live_ranges(const ir::BlockGraph& g, const BlockSchedule& s,
                                             const std::vector<TensorStorage>& storage) {
  int loop_first = -1, loop_last = -1;
  for (size_t k = 0; k < s.stages.size(); ++k)
    if (s.stages[k].region == Region::kLoop) {
      if (loop_first < 0) loop_first = static_cast<int>(k);
      loop_last = static_cast<int>(k);
    }
  std::vector<std::pair<int, int>> live(g.tensors.size(), {-1, -1});
  std::vector<ir::BlockNodeKind> producer(g.tensors.size(), ir::BlockNodeKind::kCompute);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const int st = s.stage_of[i];
    for (ir::TensorId t : g.nodes[i].outputs) {
      live[static_cast<size_t>(t)] = {st, st};
      producer[static_cast<size_t>(t)] = g.nodes[i].kind;
    }
  }
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ir::TensorId t : g.nodes[i].inputs) {
      auto& r = live[static_cast<size_t>(t)];
      r.second = std::max(r.second, s.stage_of[i]);
      if (s.stages[static_cast<size_t>(r.first)].region == Region::kPrologue &&
          s.stages[static_cast<size_t>(s.stage_of[i])].region == Region::kLoop)
        r.second = std::max(r.second, loop_last);
    }
  for (size_t t = 0; t < live.size(); ++t) {
    auto& r = live[t];
    if (r.first < 0) continue;  // unproduced (invalid graph): left out of planning
    const bool in_loop = s.stages[static_cast<size_t>(r.first)].region == Region::kLoop;
    // An accumulator is live from the loop's first stage on, even when the CUDA generator keeps
    // its sum in registers and writes the tile only after the loop (mg::RegisterAccumulator):
    // a spill in a later iteration writes it mid-loop.
    if (in_loop && producer[t] == ir::BlockNodeKind::kAccumulator) r.first = loop_first;
    if (in_loop && storage[t].copies > 1) {
      r.first = loop_first;
      r.second = std::max(r.second, loop_last);
    }
  }
  return live;
}

bool conflict(const std::vector<std::pair<int, int>>& live, size_t a, size_t b) {
  return live[a].first >= 0 && live[b].first >= 0 && live[a].first <= live[b].second &&
         live[b].first <= live[a].second;
}

// Exact minimum (in units of `alignment`) with Z3's optimizer; false if it did not finish.
bool solve_exact(const std::vector<std::pair<int, int>>& live, MemoryPlan& p, int64_t alignment) {
  z3::context c;
  z3::params prm(c);
  prm.set("timeout", 2000u);
  z3::optimize opt(c);
  opt.set(prm);
  const size_t n = p.size.size();
  std::vector<z3::expr> o;
  z3::expr total = c.int_const("total");
  for (size_t i = 0; i < n; ++i) {
    o.push_back(c.int_const(("o" + std::to_string(i)).c_str()));
    const int64_t units = p.size[i] / alignment;
    opt.add(o[i] >= 0);
    opt.add(total >= o[i] + c.int_val(units));
  }
  opt.add(total <= c.int_val(p.total_bytes / alignment));
  for (size_t a = 0; a < n; ++a)
    for (size_t b = a + 1; b < n; ++b)
      if (conflict(live, a, b) && p.size[a] > 0 && p.size[b] > 0)
        opt.add(o[a] + c.int_val(p.size[a] / alignment) <= o[b] ||
                o[b] + c.int_val(p.size[b] / alignment) <= o[a]);
  const z3::optimize::handle h = opt.minimize(total);
  if (opt.check() != z3::sat) return false;
  // A time-out can still report sat with a non-minimal model; accept only a certain minimum.
  const z3::model m = opt.get_model();
  const int64_t best = m.eval(total, true).get_numeral_int64() * alignment;
  if (opt.lower(h).get_numeral_int64() * alignment != best) return false;
  for (size_t i = 0; i < n; ++i) p.offset[i] = m.eval(o[i], true).get_numeral_int64() * alignment;
  p.total_bytes = 0;
  for (size_t i = 0; i < n; ++i) p.total_bytes = std::max(p.total_bytes, p.offset[i] + p.size[i]);
  return true;
}

}  // namespace

bool overlaps_in_time(const MemoryPlan& p, int a, int b) {
  return conflict(p.live, static_cast<size_t>(a), static_cast<size_t>(b));
}

MemoryPlan plan_memory(const ir::BlockGraph& g, const BlockSchedule& s,
                       const std::vector<TensorStorage>& storage, int64_t alignment) {
  MG_CHECK(storage.size() == g.tensors.size(), "plan_memory: " << storage.size()
                                                   << " storage entries for "
                                                   << g.tensors.size() << " tensors");
  MG_CHECK(alignment > 0 && (alignment & (alignment - 1)) == 0, "plan_memory: bad alignment");
  std::vector<std::pair<int, int>> live = live_ranges(g, s, storage);
  std::vector<int64_t> size(g.tensors.size());
  for (size_t t = 0; t < size.size(); ++t)
    size[t] = live[t].first < 0 ? 0
                                : (storage[t].bytes + alignment - 1) / alignment * alignment *
                                      storage[t].copies;
  return pack_intervals(std::move(live), std::move(size), static_cast<int>(s.stages.size()),
                        alignment);
}

MemoryPlan pack_intervals(std::vector<std::pair<int, int>> live, std::vector<int64_t> size,
                          int stages, int64_t alignment) {
  const size_t n = size.size();
  MG_CHECK(live.size() == n, "pack_intervals: sizes and live ranges differ in length");
  for (int64_t b : size) MG_CHECK(b % alignment == 0, "pack_intervals: unaligned size " << b);
  MemoryPlan p;
  p.live = std::move(live);
  p.size = std::move(size);
  p.offset.assign(n, 0);
  for (int k = 0; k < stages; ++k) {
    int64_t bytes = 0;
    for (size_t t = 0; t < n; ++t)
      if (p.live[t].first <= k && k <= p.live[t].second) bytes += p.size[t];
    p.lower_bound = std::max(p.lower_bound, bytes);
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return p.size[a] > p.size[b]; });
  std::vector<size_t> placed;
  for (size_t t : order) {
    // Lowest offset that clears every placed tensor live at the same time.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (size_t q : placed)
      if (conflict(p.live, t, q) && p.size[q] > 0) busy.emplace_back(p.offset[q], p.offset[q] + p.size[q]);
    std::sort(busy.begin(), busy.end());
    int64_t at = 0;
    for (const auto& [lo, hi] : busy) {
      if (at + p.size[t] <= lo) break;
      at = std::max(at, hi);
    }
    p.offset[t] = at;
    placed.push_back(t);
    p.total_bytes = std::max(p.total_bytes, at + p.size[t]);
  }
  p.optimal = p.total_bytes == p.lower_bound;
  if (!p.optimal && n <= static_cast<size_t>(kExactLimit)) p.optimal = solve_exact(p.live, p, alignment);
  return p;
}

}  // namespace mugraph::opt
