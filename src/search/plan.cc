#include "search/plan.h"

#include <algorithm>
#include <set>

#include "search/index_labels.h"

namespace mugraph::search {

PlanShape plan_shape(const ir::KernelGraph& program, int max_grid_dims,
                     const std::vector<int64_t>& grid_sizes) {
  PlanShape s;
  s.ops = static_cast<int>(program.ops.size());
  const ProgramLabels pl = program_labels(program);
  std::vector<int64_t> extent(pl.reduced.size(), 1);
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    const ir::Shape& shape = program.tensor(program.inputs[i]).type.shape;
    for (int d = 0; d < shape.rank; ++d)
      if (pl.inputs[i][static_cast<size_t>(d)] >= 0)
        extent[static_cast<size_t>(pl.inputs[i][static_cast<size_t>(d)])] = shape[d];
  }
  std::vector<int64_t> parallel;
  for (size_t c = 0; c < extent.size(); ++c) {
    if (pl.reduced[c] && (extent[c] > s.loop_extent ||
                          (extent[c] == s.loop_extent && pl.reductions[c] > s.loop_reductions))) {
      s.loop_extent = extent[c];
      s.loop_reductions = pl.reductions[c];
    }
    if (pl.reduced_by_every_output[c]) continue;
    int64_t fits = 1;  // the largest grid size that splits this index evenly
    for (int64_t g : grid_sizes)
      if (g > fits && extent[c] % g == 0) fits = g;
    parallel.push_back(fits);
  }
  std::sort(parallel.rbegin(), parallel.rend());
  for (size_t i = 0; i < parallel.size() && static_cast<int>(i) < max_grid_dims; ++i)
    s.parallel *= parallel[i];
  return s;
}

namespace {

std::string stage_name(const SearchOptions& o) {
  if (o.max_graph_defined_ops == 0)
    return "up to " + std::to_string(o.max_kernel_ops) + " predefined kernel ops";
  std::string s = (o.max_kernel_ops > 1 ? "up to " + std::to_string(o.max_kernel_ops) +
                                             " kernel ops, graph-defined or not"
                                       : std::string("1 graph-defined kernel")) +
                  ", " + std::to_string(o.max_block_ops) +
                  " block ops, >= " + std::to_string(o.min_blocks) + " blocks, ";
  if (o.forloop_ranges == std::vector<int64_t>{1}) return s + "no loop";
  s += "loops";
  for (int64_t r : o.forloop_ranges) s += " " + std::to_string(r);
  return s;
}

Stage make_stage(SearchOptions o, double share, bool single, int planned = 0) {
  o.plan = false;
  o.time_budget_s = 0;
  Stage st;
  st.name = stage_name(o);
  st.options = std::move(o);
  st.share = share;
  st.single_kernel = single;
  st.planned_block_ops = planned ? planned : st.options.max_block_ops;
  return st;
}

}  // namespace

std::vector<Stage> plan_stages(const ir::KernelGraph& program, const SearchOptions& base) {
  const PlanShape shape = plan_shape(program, base.max_grid_dims, base.grid_sizes);
  std::vector<Stage> stages;

  SearchOptions pre = base;
  pre.max_graph_defined_ops = 0;
  pre.max_kernel_ops = std::min(3, std::max(1, shape.ops));
  stages.push_back(make_stage(pre, 0.1, false));

  SearchOptions one = base;
  one.coarse_grids_first = true;  // the coarsest grid first: nTrans's rows, QKNorm's heads
  one.max_kernel_ops = 1;
  one.max_graph_defined_ops = 1;
  one.min_blocks = std::max<int64_t>(1, std::min(base.min_blocks, shape.parallel));
  one.max_blocks = std::max(one.max_blocks, one.min_blocks);
  // Without a loop: whole reduced dims per block, no accumulators.
  SearchOptions flat = one;
  flat.max_block_ops = shape.ops;
  flat.forloop_ranges = {1};
  stages.push_back(make_stage(flat, 0.5, true));
  // With a loop over the reduced index of largest extent (ranges that divide it), one
  // accumulator per reduction over it.
  SearchOptions loop = one;
  loop.max_block_ops = shape.block_ops();
  loop.forloop_ranges.clear();
  for (int64_t r : base.forloop_ranges)
    if (r > 1 && shape.loop_extent % r == 0) loop.forloop_ranges.push_back(r);
  if (!loop.forloop_ranges.empty()) stages.push_back(make_stage(loop, 0.7, true));

  // Split-K of the looped single kernels found (split-KV for attention: opt/split_loop.h),
  // derived, not searched: their every-entry tests only.
  if (!loop.forloop_ranges.empty()) {
    Stage st = make_stage(loop, 0.5, false);
    st.name = "split-K of the best looped kernels found, in 2, 4 or 8 parts";
    st.split_from_best = true;
    stages.push_back(std::move(st));
  }

  SearchOptions two = one;
  two.max_kernel_ops = 2;
  two.max_graph_defined_ops = 2;
  two.max_block_ops = shape.block_ops();
  two.forloop_ranges = {1};
  for (int64_t r : loop.forloop_ranges) two.forloop_ranges.push_back(r);
  stages.push_back(make_stage(two, 1, false));
  return stages;
}

std::optional<Stage> deeper(const Stage& s) {
  if (!s.single_kernel || s.options.max_block_ops + 2 > s.planned_block_ops + 4)
    return std::nullopt;
  SearchOptions o = s.options;
  o.max_block_ops += 2;
  return make_stage(o, s.share, true, s.planned_block_ops);
}

}  // namespace mugraph::search
