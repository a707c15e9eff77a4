// Law tests of the block-graph passes: the schedule respects dependencies, the memory plan never
// overlaps live tensors and is minimal where it says so, the layout ILP's answer is valid and as
// good as brute force. Run on every block graph of the hand-optimized examples and of a search.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "driver/driver.h"
#include "opt/plan_memory.h"
#include "opt/schedule.h"
#include "opt/select_layout.h"
#include "test_util.h"

namespace mugraph {
namespace {

using testing::load_example;

// Every block graph of the hand-optimized examples and the discovery programs' fused forms.
std::vector<std::pair<std::string, ir::BlockGraph>> corpus() {
  std::vector<std::pair<std::string, ir::BlockGraph>> v;
  for (const std::string& name : testing::example_names()) {
    const ir::KernelGraph g = load_example(name);
    for (size_t k = 0; k < g.ops.size(); ++k)
      if (g.ops[k].graph_defined) v.emplace_back(name + " op" + std::to_string(k), *g.ops[k].block);
  }
  return v;
}

std::vector<opt::TensorStorage> storage_of(const ir::BlockGraph& g, bool double_buffer) {
  std::vector<opt::TensorStorage> s;
  for (size_t t = 0; t < g.tensors.size(); ++t) s.push_back({g.tensors[t].type.bytes(), 1});
  if (double_buffer)
    for (const ir::BlockNode& n : g.nodes)
      if (n.kind == ir::BlockNodeKind::kInputIterator && n.fmap != ir::kReplica)
        s[static_cast<size_t>(n.outputs[0])].copies = 2;
  return s;
}

TEST(Schedule, InputsComeFromEarlierStagesAndRegionsAreOrdered) {
  const auto graphs = corpus();
  ASSERT_GE(graphs.size(), 5u);
  for (const auto& [name, g] : graphs) {
    SCOPED_TRACE(name);
    const opt::BlockSchedule s = opt::schedule_block(g);
    ASSERT_EQ(s.stage_of.size(), g.nodes.size());
    std::vector<int> producer(g.tensors.size(), -1);
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (ir::TensorId t : g.nodes[i].outputs) producer[static_cast<size_t>(t)] = static_cast<int>(i);
    size_t listed = 0;
    for (size_t k = 0; k < s.stages.size(); ++k) {
      listed += s.stages[k].nodes.size();
      EXPECT_FALSE(s.stages[k].nodes.empty());
      if (k > 0) {
        EXPECT_LE(s.stages[k - 1].region, s.stages[k].region);
      }
      for (int i : s.stages[k].nodes) EXPECT_EQ(s.stage_of[static_cast<size_t>(i)], static_cast<int>(k));
    }
    EXPECT_EQ(listed, g.nodes.size());
    // The loop's first stage is its loads alone: no op reads a tile (streaming or prologue)
    // before the barrier that ends it (issue 20's race on prologue tiles).
    for (const opt::Stage& st : s.stages) {
      if (st.region != opt::Region::kLoop) continue;
      const bool loads = std::any_of(st.nodes.begin(), st.nodes.end(), [&](int i) {
        return g.nodes[static_cast<size_t>(i)].kind == ir::BlockNodeKind::kInputIterator;
      });
      if (loads) {
        for (int i : st.nodes) {
          EXPECT_EQ(g.nodes[static_cast<size_t>(i)].kind, ir::BlockNodeKind::kInputIterator)
              << "node " << i << " shares the loop's load stage";
        }
      }
      break;
    }
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const ir::BlockNode& n = g.nodes[i];
      for (ir::TensorId t : n.inputs) {
        const int p = producer[static_cast<size_t>(t)];
        ASSERT_GE(p, 0);
        EXPECT_LT(s.stage_of[static_cast<size_t>(p)], s.stage_of[i])
            << "node " << i << " reads tensor " << g.tensors[static_cast<size_t>(t)].name;
      }
      const opt::Region r = s.stages[static_cast<size_t>(s.stage_of[i])].region;
      if (n.kind == ir::BlockNodeKind::kInputIterator) {
        EXPECT_EQ(r, n.fmap == ir::kReplica ? opt::Region::kPrologue : opt::Region::kLoop);
      }
      if (n.kind == ir::BlockNodeKind::kAccumulator) {
        EXPECT_EQ(r, opt::Region::kLoop);
      }
      if (n.kind == ir::BlockNodeKind::kOutputSaver) {
        EXPECT_EQ(r, opt::Region::kEpilogue);
        EXPECT_EQ(s.stage_of[i], static_cast<int>(s.stages.size()) - 1);
      }
    }
  }
}

// Issue 20's race: an op reading only a loop-invariant (prologue) tile ran in the loads' stage,
// right after the cp.async wait and before any barrier. It sits one stage later now.
TEST(Schedule, PrologueTilesAreReadAfterTheLoadStage) {
  const ir::KernelGraph g = testing::parse_ok(R"(
input Q : f16[64, 64]
input K : f16[64, 256]
O = graph_defined(Q, K, grid=[1, 1, 1], forloop=4) {
  q = input_iterator(Q, imap={}, fmap=phi)
  k = input_iterator(K, imap={}, fmap=1)
  e = exp(q)
  n = matmul(e, k)
  acc = accumulator(n, fmap=1)
  output_saver(acc, omap={})
}
output O
)");
  const ir::BlockGraph& b = *g.ops[0].block;
  const opt::BlockSchedule s = opt::schedule_block(b);
  const auto stage = [&](const std::string& out) {
    for (size_t i = 0; i < b.nodes.size(); ++i)
      for (ir::TensorId t : b.nodes[i].outputs)
        if (b.tensors[static_cast<size_t>(t)].name == out) return s.stage_of[i];
    return -1;
  };
  EXPECT_EQ(s.stages[static_cast<size_t>(stage("k"))].region, opt::Region::kLoop);
  EXPECT_GT(stage("e"), stage("k")) << "exp(q) shares the loads' stage";
}

TEST(Schedule, FusedRmsNormHasFewStages) {
  // Fig. 3b: iterators | mul, square | matmul, sum | accumulators ... ; the barrier count is the
  // depth, not the op count.
  const ir::KernelGraph g = load_example("rms_norm_matmul.fused");
  const ir::BlockGraph& b = *g.ops[0].block;
  const opt::BlockSchedule s = opt::schedule_block(b);
  EXPECT_LT(s.stages.size(), b.nodes.size());
}

// Checks the plan's laws; returns its total.
int64_t check_plan(const ir::BlockGraph& g, const opt::MemoryPlan& p, int64_t align) {
  const size_t n = g.tensors.size();
  EXPECT_EQ(p.offset.size(), n);
  int64_t total = 0;
  for (size_t a = 0; a < n; ++a) {
    EXPECT_EQ(p.offset[a] % align, 0);
    total = std::max(total, p.offset[a] + p.size[a]);
    for (size_t b = a + 1; b < n; ++b) {
      if (!opt::overlaps_in_time(p, static_cast<int>(a), static_cast<int>(b))) continue;
      const bool disjoint =
          p.offset[a] + p.size[a] <= p.offset[b] || p.offset[b] + p.size[b] <= p.offset[a];
      EXPECT_TRUE(disjoint) << g.tensors[a].name << " and " << g.tensors[b].name
                            << " are live together and overlap";
    }
  }
  EXPECT_EQ(total, p.total_bytes);
  EXPECT_LE(p.lower_bound, p.total_bytes);
  return total;
}

TEST(PlanMemory, LiveTensorsNeverOverlapAndReuseBeatsTheSum) {
  for (bool db : {false, true})
    for (const auto& [name, g] : corpus()) {
      SCOPED_TRACE(name + (db ? " double-buffered" : ""));
      const opt::BlockSchedule s = opt::schedule_block(g);
      const auto storage = storage_of(g, db);
      const opt::MemoryPlan p = opt::plan_memory(g, s, storage, 128);
      check_plan(g, p, 128);
      int64_t sum = 0;
      for (int64_t b : p.size) sum += b;
      EXPECT_LE(p.total_bytes, sum);
      // Liveness: a tensor is live where it is written and where it is read.
      for (size_t i = 0; i < g.nodes.size(); ++i) {
        const int st = s.stage_of[i];
        for (ir::TensorId t : g.nodes[i].inputs) {
          EXPECT_LE(p.live[static_cast<size_t>(t)].first, st);
          EXPECT_GE(p.live[static_cast<size_t>(t)].second, st);
        }
      }
    }
}

TEST(PlanMemory, RmsNormReusesDeadTiles) {
  // In Fig. 3b the in-loop products die before the epilogue's ops run: the plan is smaller than
  // the sum of the tensors (the search's conservative accounting).
  const ir::KernelGraph g = load_example("rms_norm_matmul.fused");
  const ir::BlockGraph& b = *g.ops[0].block;
  const opt::MemoryPlan p = opt::plan_memory(b, opt::schedule_block(b), storage_of(b, false), 16);
  int64_t sum = 0;
  for (int64_t s : p.size) sum += s;
  EXPECT_LT(p.total_bytes, sum);
}

// Brute force: the minimum over all placement orders of first fit equals the optimum for these
// tiny interval instances (every packing can be compacted to one produced by some order).
int64_t brute_force(const opt::MemoryPlan& p) {
  std::vector<size_t> order(p.size.size());
  std::iota(order.begin(), order.end(), 0);
  int64_t best = INT64_MAX;
  do {
    std::vector<int64_t> off(order.size(), 0);
    std::vector<size_t> placed;
    int64_t total = 0;
    for (size_t t : order) {
      int64_t at = 0;
      bool moved = true;
      while (moved) {
        moved = false;
        for (size_t q : placed)
          if (opt::overlaps_in_time(p, static_cast<int>(t), static_cast<int>(q)) &&
              at < off[q] + p.size[q] && off[q] < at + p.size[t]) {
            at = off[q] + p.size[q];
            moved = true;
          }
      }
      off[t] = at;
      placed.push_back(t);
      total = std::max(total, at + p.size[t]);
    }
    best = std::min(best, total);
  } while (std::next_permutation(order.begin(), order.end()));
  return best;
}

TEST(PlanMemory, OptimalOnSmallGraphsMatchesBruteForce) {
  int checked = 0;
  for (const auto& [name, g] : corpus()) {
    if (g.tensors.size() > 8) continue;
    SCOPED_TRACE(name);
    const opt::MemoryPlan p = opt::plan_memory(g, opt::schedule_block(g), storage_of(g, true), 128);
    check_plan(g, p, 128);
    EXPECT_TRUE(p.optimal);
    EXPECT_EQ(p.total_bytes, brute_force(p));
    ++checked;
  }
  EXPECT_GE(checked, 2);
}

TEST(PlanMemory, ExactSolverBeatsFirstFitWhenItMisses) {
  // Found by brute force over random instances: first fit by decreasing size needs 10 units,
  // the optimum (= the lower bound, 9) puts the two size-3 tensors side by side.
  const int64_t u = 128;
  const opt::MemoryPlan p = opt::pack_intervals({{1, 1}, {2, 2}, {3, 3}, {1, 2}, {2, 3}},
                                                {4 * u, 3 * u, 3 * u, 4 * u, 2 * u}, 4, u);
  EXPECT_TRUE(p.optimal);
  EXPECT_EQ(p.total_bytes, 9 * u);
  EXPECT_EQ(p.lower_bound, 9 * u);
  EXPECT_EQ(brute_force(p), 9 * u);
  for (size_t a = 0; a < 5; ++a)
    for (size_t b = a + 1; b < 5; ++b)
      if (opt::overlaps_in_time(p, static_cast<int>(a), static_cast<int>(b))) {
        EXPECT_TRUE(p.offset[a] + p.size[a] <= p.offset[b] || p.offset[b] + p.size[b] <= p.offset[a]);
      }
}

TEST(SelectLayout, ValidLayoutsAndMinimalCostAgainstBruteForce) {
  for (const auto& [name, g] : corpus()) {
    SCOPED_TRACE(name);
    const opt::LayoutPlan plan = opt::select_layouts(g);
    ASSERT_EQ(plan.layout.size(), g.tensors.size());
    std::vector<size_t> free;
    for (size_t t = 0; t < g.tensors.size(); ++t) {
      EXPECT_TRUE(ir::check_layout(g.tensors[t].type.shape, plan.layout[t]).ok());
      if (opt::layout_choosable(g, static_cast<ir::TensorId>(t)))
        free.push_back(t);
      else
        EXPECT_FALSE(plan.transposed[t]);
    }
    EXPECT_DOUBLE_EQ(plan.cost, opt::layout_cost(g, plan.transposed));
    ASSERT_LE(free.size(), 16u);
    double best = 1e300;
    for (uint32_t mask = 0; mask < (1u << free.size()); ++mask) {
      std::vector<bool> tr(g.tensors.size(), false);
      for (size_t i = 0; i < free.size(); ++i) tr[free[i]] = ((mask >> i) & 1u) != 0;
      best = std::min(best, opt::layout_cost(g, tr));
    }
    EXPECT_DOUBLE_EQ(plan.cost, best);
  }
}

TEST(SelectLayout, ColumnMajorInputTileFollowsTheDeviceLayout) {
  const ir::KernelGraph g = testing::parse_ok(testing::read_file(
      std::string(MUGRAPH_TEST_DATA_DIR) + "/opt/col_major_input.mu"));
  const ir::BlockGraph& b = *g.ops[0].block;
  const opt::LayoutPlan plan = opt::select_layouts(b);
  // The iterator over the column-major W takes the transposed layout; X's tile stays row-major.
  bool saw_w = false;
  for (const ir::BlockNode& n : b.nodes) {
    if (n.kind != ir::BlockNodeKind::kInputIterator) continue;
    const bool col = !b.input_types[static_cast<size_t>(n.input_index)].is_row_major();
    EXPECT_EQ(plan.transposed[static_cast<size_t>(n.outputs[0])], col);
    saw_w = saw_w || col;
  }
  EXPECT_TRUE(saw_w);
}

}  // namespace
}  // namespace mugraph
