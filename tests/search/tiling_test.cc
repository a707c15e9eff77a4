// MCFuser's space (search/tiling.h) on hand-computed cases, and its evolutionary search
// (search/tune_chain.h) with measurements injected.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

#include "opt/cost_model.h"
#include "search/tiling.h"
#include "search/tune_chain.h"
#include "target/target.h"
#include "test_util.h"

namespace mugraph {
namespace {

using search::Tiles;
using testing::parse_ok;

// The paper's running example (§III-C): M = N = 1024, K = H = 512.
const opt::ChainDims kPaper{1, 1024, 1024, 512, 512};

TEST(Tiling, TwentySixExpressions) {
  const auto e = search::tiling_expressions();
  ASSERT_EQ(e.size(), 26u);
  EXPECT_EQ(e[0].to_string(), "mnkh");
  EXPECT_EQ(e[23].to_string(), "hknm");
  EXPECT_EQ(e[24].to_string(), "mn(k,h)");
  EXPECT_EQ(e[25].to_string(), "nm(k,h)");
  std::set<std::string> all;
  for (const auto& x : e) all.insert(x.to_string());
  EXPECT_EQ(all.size(), 26u);
}

TEST(Tiling, RuleOneAndTwo) {
  std::map<std::string, std::string> sub;
  for (const auto& x : search::tiling_expressions()) sub[x.to_string()] = search::sub_expression(x);
  // The paper's example of rule 1: mhnk and mnkh give the same per-block expression nk.
  EXPECT_EQ(sub["mhnk"], "nk");
  EXPECT_EQ(sub["mnkh"], "nk");
  EXPECT_EQ(sub["kmhn"], "kn");
  EXPECT_EQ(sub["mn(k,h)"], "n(k,h)");
  EXPECT_EQ(sub["nm(k,h)"], "n(k,h)");
  EXPECT_TRUE(search::caches_partial_tiles("kn"));
  EXPECT_FALSE(search::caches_partial_tiles("nk"));
  EXPECT_FALSE(search::caches_partial_tiles("n(k,h)"));
}

TEST(Tiling, RuleThreePadding) {
  EXPECT_TRUE(search::padding_ok(1024, 64));
  EXPECT_FALSE(search::padding_ok(1024, 48));  // a power of 2: no padding at all
  EXPECT_FALSE(search::padding_ok(80, 48));    // 96 - 80 = 16: 20% of 80
  EXPECT_TRUE(search::padding_ok(1000, 48));   // 1008 - 1000 = 8: 0.8%
  EXPECT_EQ(search::tile_options(80), (std::vector<int64_t>{16, 32, 48, 64, 80}));
  EXPECT_EQ(search::tile_options(16), (std::vector<int64_t>{16}));
  EXPECT_EQ(search::tile_options(20), (std::vector<int64_t>{16, 20}));
}

TEST(Tiling, RuleFourEstimate) {
  const Tiles t{64, 64, 32, 64};  // tm, tn, tk, th
  // A 64x32 + B 32x64 + C 64x64 + D 64x64 + E 64x64 elements, 2 bytes each.
  EXPECT_EQ(search::shared_memory_estimate("nk", kPaper, t, 2), (2048 + 2048 + 4096 * 3) * 2);
  // kn keeps a C tile for each of the 1024 / 64 n tiles: C is 64 x 1024.
  EXPECT_EQ(search::shared_memory_estimate("kn", kPaper, t, 2), (2048 + 2048 + 65536 + 4096 * 2) * 2);
  // n(k,h) holds E for all of H: 64 x 512.
  EXPECT_EQ(search::shared_memory_estimate("n(k,h)", kPaper, t, 2), (2048 + 2048 + 4096 * 2 + 32768) * 2);
}

TEST(Tiling, HoistingOutOfExtentOneLoops) {
  // tk = K: the k loop has extent 1 and A's load moves out of the n loop: once per block.
  search::Analysis a = search::analyze("nk", kPaper, {64, 128, 512, 64}, 2);
  EXPECT_EQ(a.blocks, 16 * 8);
  ASSERT_EQ(a.accesses.size(), 4u);
  EXPECT_EQ(a.accesses[0].tensor, "A");
  EXPECT_EQ(a.accesses[0].trips, 1);
  EXPECT_EQ(a.accesses[1].trips, 8);  // B: every n tile
  EXPECT_EQ(a.accesses[2].trips, 8);  // D: every n tile
  EXPECT_EQ(a.accesses[3].trips, 1);  // E: stored once
  EXPECT_EQ(a.bytes, 128 * (64 * 512 * 1 + 512 * 128 * 8 + 128 * 64 * 8 + 64 * 64) * 2);
  // tk = K / 2: A is loaded inside both loops, n x k = 8 x 2 times.
  a = search::analyze("nk", kPaper, {64, 128, 256, 64}, 2);
  EXPECT_EQ(a.accesses[0].trips, 16);
  EXPECT_EQ(a.accesses[1].trips, 16);
  EXPECT_EQ(a.accesses[2].trips, 8);
  // kn: A indexed by k only, outside n: loaded k times; D in the second n loop.
  a = search::analyze("kn", kPaper, {64, 128, 256, 64}, 2);
  EXPECT_EQ(a.accesses[0].trips, 2);
  EXPECT_EQ(a.accesses[1].trips, 16);
  EXPECT_EQ(a.accesses[2].trips, 8);
  // n(k,h): h is not bound, the block loops over it: D per (n, h) tile; E is 64 x 512.
  a = search::analyze("n(k,h)", kPaper, {64, 128, 512, 64}, 2);
  EXPECT_EQ(a.blocks, 16);
  EXPECT_EQ(a.accesses[0].trips, 1);
  EXPECT_EQ(a.accesses[2].trips, 8 * 8);
  EXPECT_EQ(a.accesses[3].tile_elems, 64 * 512);
  // FLOPs: C = A B recomputed for each of the H / th blocks of a row of tiles, plus E.
  a = search::analyze("nk", kPaper, {64, 128, 512, 64}, 2);
  EXPECT_DOUBLE_EQ(a.flops, 2.0 * 1024 * 1024 * 512 * 8 + 2.0 * 1024 * 1024 * 512);
}

constexpr const char* kChain = R"(
input A : f16[2, 64, 32]
input B : f16[2, 32, 128]
input D : f16[2, 128, 32]
C = matmul(A, B)
E = matmul(C, D)
output E
)";

TEST(Tiling, AnalysisMatchesTheCostModelOfTheLoweredGraph) {
  const ir::KernelGraph program = parse_ok(kChain);
  const opt::ChainDims d{2, 64, 128, 32, 32};
  for (const Tiles& t : {Tiles{16, 32, 32, 16}, Tiles{64, 128, 32, 32}, Tiles{32, 16, 32, 32}}) {
    ASSERT_TRUE(search::lowers_to_ugraph("nk", d, t));
    auto g = opt::tile_chain(program, search::ugraph_tiles("nk", d, t));
    ASSERT_TRUE(g.ok()) << g.status().message();
    const opt::Cost c = opt::estimate(*g, target::h100());
    EXPECT_EQ(search::analyze("nk", d, t, 2).bytes, c.bytes) << t.to_string();
  }
  EXPECT_FALSE(search::lowers_to_ugraph("nk", d, Tiles{16, 32, 16, 16}));  // tk < K: two loops
  EXPECT_FALSE(search::lowers_to_ugraph("kn", d, Tiles{16, 32, 32, 16}));
}

TEST(Tiling, SpaceCountsOfThePaperExample) {
  const search::Space s = search::build_space(kPaper, 2, target::a100().shared_memory_per_block);
  EXPECT_EQ(s.counts.expressions, 26);
  EXPECT_EQ(s.counts.after_rule1, 3);
  EXPECT_EQ(s.counts.after_rule2, 2);
  // The paper's count: (24 + 2) x ceil(1024/16)^2 x ceil(512/16)^2.
  EXPECT_EQ(s.counts.candidates, 109051904);
  EXPECT_EQ(s.counts.after_rule3, 2 * 7 * 7 * 6 * 6);  // tiles dividing: 16..1024 (7), 16..512 (6)
  EXPECT_LT(s.counts.after_rule4, s.counts.after_rule3);
  // Brute force over the tiles that divide: with tk = K, nk lowers (tm, th, tn) as is and
  // n(k,h) lowers (tm, H, tn) when some th passes rule 4.
  std::set<std::tuple<int64_t, int64_t, int64_t>> want;
  const double limit = 1.2 * static_cast<double>(target::a100().shared_memory_per_block);
  for (int64_t tm = 16; tm <= 1024; tm *= 2)
    for (int64_t tn = 16; tn <= 1024; tn *= 2)
      for (int64_t th = 16; th <= 512; th *= 2) {
        const Tiles t{tm, tn, 512, th};
        if (static_cast<double>(search::shared_memory_estimate("nk", kPaper, t, 2)) <= limit) want.insert({tm, th, tn});
        if (static_cast<double>(search::shared_memory_estimate("n(k,h)", kPaper, t, 2)) <= limit) want.insert({tm, 512, tn});
      }
  EXPECT_EQ(s.counts.lowerable, static_cast<int64_t>(want.size()));
  for (const opt::ChainTiles& t : s.tiles) {
    EXPECT_EQ(1024 % t.m, 0);
    EXPECT_EQ(512 % t.h, 0);
    EXPECT_EQ(1024 % t.n, 0);
  }
}

TEST(Tiling, RuleFourKeepsUpToOnePointTwoTimesTheLimit) {
  // One tile per dim (16): every estimate is (5 tiles of 16 x 16) x 2 bytes = 2560 bytes.
  const opt::ChainDims d{1, 16, 16, 16, 16};
  EXPECT_EQ(search::shared_memory_estimate("nk", d, {16, 16, 16, 16}, 2), 2560);
  EXPECT_EQ(search::build_space(d, 2, static_cast<int64_t>(2560 / 1.1)).counts.after_rule4, 2);
  EXPECT_EQ(search::build_space(d, 2, static_cast<int64_t>(2560 / 1.3)).counts.after_rule4, 0);
  EXPECT_EQ(search::build_space(d, 2, static_cast<int64_t>(2560 / 1.3)).counts.lowerable, 0);
}

TEST(Tiling, HugeChainsAreCountedWithoutEnumeratingEveryTile) {
  // 4096 everywhere: 26 x 256^4 = 1.1e11 candidates; counted in well under a second.
  const opt::ChainDims d{1, 4096, 4096, 4096, 4096};
  const search::Space s = search::build_space(d, 2, 1 << 20);
  EXPECT_EQ(s.counts.candidates, 26LL * 256 * 256 * 256 * 256);
  EXPECT_EQ(s.counts.after_rule3, 2LL * 9 * 9 * 9 * 9);  // powers of 2 from 16 to 4096
  EXPECT_GT(s.counts.after_rule4, 0);
}

// A CPU target with fixed numbers (the host's cores, caches and ISA do not change the test).
target::Target fixed_cpu() {
  target::Target t = target::local_cpu();
  t.sm_count = 2;
  t.shared_memory_per_block = 1 << 20;
  t.memory_bandwidth = 20e9;
  t.peak_flops_f32 = t.peak_flops_f16 = t.peak_flops_bf16 = 160e9;
  t.cpu_matmul_rows = 8;
  t.cpu_matmul_cols = 32;
  return t;
}

// The evolutionary search with the cost model as the measurement (so the ranks agree) and
// with a measurement that prefers what the model does not.
TEST(TuneChain, ConvergesAndMeasuresEachTilingOnce) {
  const ir::KernelGraph program = parse_ok(kChain);
  const target::Target t = fixed_cpu();
  search::TuneOptions o;
  o.population = 16;
  o.measure_top = 4;
  int batches = 0;
  std::set<std::string> seen;
  bool repeated = false;
  auto by_model = [&](const std::vector<const ir::KernelGraph*>& gs) -> Result<std::vector<double>> {
    ++batches;
    std::vector<double> out;
    for (const ir::KernelGraph* g : gs) {
      repeated |= !seen.insert(ir::print_graph(*g)).second;
      out.push_back(opt::estimate(*g, t).total_s);
    }
    return out;
  };
  auto r = search::tune_chain(program, t, o, by_model);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(repeated);
  EXPECT_TRUE(r->converged) << r->stop_reason;
  EXPECT_EQ(r->stop_reason, "converged");
  EXPECT_GE(r->rounds, 2);
  EXPECT_LE(batches, r->rounds);  // one batch per round that has new tilings
  EXPECT_GE(batches, 1);
  ASSERT_GE(r->best, 0);
  for (const auto& m : r->measured) EXPECT_LE(r->measured[static_cast<size_t>(r->best)].measured_s, m.measured_s);
  EXPECT_GT(r->rank_correlation, 0.99);
  // Same seed, same measurements: the same tilings in the same order.
  auto again = search::tune_chain(program, t, o, by_model);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->measured.size(), r->measured.size());
  for (size_t i = 0; i < r->measured.size(); ++i)
    EXPECT_EQ(again->measured[i].tiles.to_string(), r->measured[i].tiles.to_string());
  // The model alone: nothing measured, the model's best.
  auto model_only = search::tune_chain(program, t, o, {});
  ASSERT_TRUE(model_only.ok());
  EXPECT_TRUE(model_only->measured.empty());
  EXPECT_FALSE(model_only->model_best.graph.ops.empty());
  EXPECT_LE(model_only->model_best.model_s, r->measured[static_cast<size_t>(r->best)].model_s);
}

TEST(TuneChain, TilingsTheBackendRefusesAreNeitherRankedNorMeasured) {
  const ir::KernelGraph program = parse_ok(kChain);
  const target::Target t = fixed_cpu();
  search::TuneOptions o;
  o.population = 16;
  o.measure_top = 4;
  // A backend that refuses the tilings of more than 32 rows per block (as the CUDA generator
  // refuses those whose shared-memory plan is too large).
  auto all = search::tune_chain(program, t, o, {});
  ASSERT_TRUE(all.ok()) << all.status().message();
  std::set<std::string> refused_graphs;
  for (const opt::ChainTiles& ct : all->space.tiles) {
    auto g = opt::tile_chain(program, ct);
    if (g.ok() && ct.m > 32) refused_graphs.insert(ir::print_graph(*g));
  }
  o.accepts = [&](const ir::KernelGraph& g) -> Status {
    if (refused_graphs.count(ir::print_graph(g))) return error("too big for this backend");
    return {};
  };
  int measured = 0;
  auto count = [&](const std::vector<const ir::KernelGraph*>& gs) -> Result<std::vector<double>> {
    std::vector<double> out;
    for (const ir::KernelGraph* g : gs) {
      EXPECT_EQ(refused_graphs.count(ir::print_graph(*g)), 0u) << "a refused tiling was measured";
      ++measured;
      out.push_back(opt::estimate(*g, t).total_s);
    }
    return out;
  };
  auto r = search::tune_chain(program, t, o, count);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_FALSE(refused_graphs.empty());
  EXPECT_GT(measured, 0);
  EXPECT_EQ(refused_graphs.count(ir::print_graph(r->model_best.graph)), 0u);
  EXPECT_LT(r->estimated, all->estimated);
  bool named = false;
  for (const std::string& n : r->notes) named |= n.find("too big for this backend") != std::string::npos;
  EXPECT_TRUE(named);
  for (const auto& m : r->measured) EXPECT_LE(m.tiles.m, 32);
}

TEST(TuneChain, ReversedMeasurementGivesNegativeCorrelation) {
  const ir::KernelGraph program = parse_ok(kChain);
  const target::Target t = fixed_cpu();
  search::TuneOptions o;
  o.population = 16;
  o.measure_top = 8;
  auto reversed = [&](const std::vector<const ir::KernelGraph*>& gs) -> Result<std::vector<double>> {
    std::vector<double> out;
    for (const ir::KernelGraph* g : gs) out.push_back(1.0 / opt::estimate(*g, t).total_s);
    return out;
  };
  auto r = search::tune_chain(program, t, o, reversed);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_LT(r->rank_correlation, -0.99);
  // The best is the fastest measured, whatever the model said.
  for (const auto& m : r->measured) EXPECT_LE(r->measured[static_cast<size_t>(r->best)].measured_s, m.measured_s);
}

TEST(TuneChain, BadOptionsAreAnError) {
  search::TuneOptions o;
  o.measure_top = 0;
  auto r = search::tune_chain(parse_ok(kChain), fixed_cpu(), o, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "tune: population, measure_top and max_rounds must be >= 1 and epsilon >= 0");
}

TEST(TuneChain, NotAChainIsAnError) {
  auto r = search::tune_chain(parse_ok(R"(
input A : f16[16, 16]
input B : f16[16, 16]
C = matmul(A, B)
output C
)"), fixed_cpu(), {}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "chain: the program needs two matmuls, the second reading the first's result");
}

}  // namespace
}  // namespace mugraph
