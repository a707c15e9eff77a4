// Discovery targets of the search (issue 5), at reduced shapes: from the plain programs, with
// no hints beyond the search options, the expected expert structure is among the verified
// candidates. (bench/search_bench runs the paper shapes.)
#include <gtest/gtest.h>

#include <functional>

#include "search/discovery_options.h"
#include "search/search.h"
#include "verify/verifier.h"
#include "test_util.h"

namespace mugraph::search {
namespace {

using testing::discovery_options;
using testing::parse_ok;
using testing::read_file;

ir::KernelGraph load_data(const std::string& name) {
  return parse_ok(read_file(std::string(MUGRAPH_TEST_DATA_DIR) + "/search/" + name + ".mu"));
}

// A block graph's compute work: each op (inside thread graphs too) with its phase.
struct BlockOp {
  ir::OpKind op;
  ir::Phase phase;
};
std::vector<BlockOp> block_ops(const ir::BlockGraph& bg) {
  std::vector<BlockOp> out;
  for (const ir::BlockNode& n : bg.nodes) {
    if (n.kind == ir::BlockNodeKind::kCompute)
      out.push_back({n.op, bg.phases[n.outputs[0]]});
    if (n.kind == ir::BlockNodeKind::kThreadGraph)
      for (const auto& tn : n.thread->nodes) out.push_back({tn.op, bg.phases[n.outputs[0]]});
  }
  return out;
}
int count(const std::vector<BlockOp>& ops, ir::OpKind k, std::optional<ir::Phase> ph = {}) {
  int n = 0;
  for (const BlockOp& b : ops) n += b.op == k && (!ph || b.phase == *ph);
  return n;
}
int accumulators(const ir::BlockGraph& bg, int fmap) {
  int n = 0;
  for (const ir::BlockNode& node : bg.nodes)
    n += node.kind == ir::BlockNodeKind::kAccumulator && node.fmap == fmap;
  return n;
}
const ir::BlockNode& iterator_of(const ir::BlockGraph& bg, int input) {
  for (const ir::BlockNode& n : bg.nodes)
    if (n.kind == ir::BlockNodeKind::kInputIterator && n.input_index == input) return n;
  throw std::runtime_error("no iterator");
}

// Runs the search and returns how many candidates are single graph-defined kernels for which
// `want` holds; prints the search summary on failure.
int single_kernels_matching(const SearchResult& r,
                            const std::function<bool(const ir::BlockGraph&)>& want) {
  int n = 0;
  for (const Candidate& c : r.candidates)
    if (c.graph.ops.size() == 1 && c.graph.ops[0].graph_defined && want(*c.graph.ops[0].block))
      ++n;
  return n;
}

// Mirage Fig. 3b: one kernel; the loop accumulates the matmul and the sum of squares; the
// division by the RMS happens once, after the loop.
TEST(Discovery, RmsNormMatmulFusesIntoOneKernel) {
  const SearchOptions o = discovery_options("rms_norm_matmul");
  auto r = search_lax(load_data("rms_norm_matmul"), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const int n = single_kernels_matching(*r, [](const ir::BlockGraph& bg) {
    const auto ops = block_ops(bg);
    return bg.forloop == 4 && accumulators(bg, ir::kReplica) == 2 &&
           count(ops, ir::OpKind::kMatmul, ir::Phase::kInLoop) == 1 &&
           count(ops, ir::OpKind::kDiv, ir::Phase::kPostLoop) == 1 &&
           count(ops, ir::OpKind::kSqrt, ir::Phase::kPostLoop) == 1 &&
           iterator_of(bg, 2).imap[0] == 1;  // W split by columns over the grid
  });
  EXPECT_GT(n, 0) << summary_table(*r);
}

// Mirage Fig. 10b: both matmuls in one block graph, accumulated in one loop; SiLU and the
// product after the loop.
TEST(Discovery, GatedMlpFusesBothMatmuls) {
  const SearchOptions o = discovery_options("gated_mlp");
  auto r = search_lax(load_data("gated_mlp"), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const int n = single_kernels_matching(*r, [](const ir::BlockGraph& bg) {
    const auto ops = block_ops(bg);
    return bg.forloop == 4 && accumulators(bg, ir::kReplica) == 2 &&
           count(ops, ir::OpKind::kMatmul, ir::Phase::kInLoop) == 2 &&
           count(ops, ir::OpKind::kSilu, ir::Phase::kPostLoop) == 1 &&
           count(ops, ir::OpKind::kMul, ir::Phase::kPostLoop) == 1;
  });
  EXPECT_GT(n, 0) << summary_table(*r);
  // Thread-graph construction kept the best candidate equivalent (certify, float check too).
  verify::VerifyOptions vo;
  const verify::Verdict v = verify::check(load_data("gated_mlp"), r->candidates.front().graph, vo);
  EXPECT_EQ(v.kind, verify::VerdictKind::kVerified) << v.summary;
}

// FlashAttention style: the loop runs over KV tiles (K split along its token dim 2, V along
// dim 1); exp in the loop; numerator and denominator accumulated; one division after.
TEST(Discovery, AttentionBecomesFlashAttention) {
  const SearchOptions o = discovery_options("attention");
  auto r = search_lax(load_data("attention"), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const int n = single_kernels_matching(*r, [](const ir::BlockGraph& bg) {
    const auto ops = block_ops(bg);
    return bg.forloop == 4 && iterator_of(bg, 1).fmap == 2 && iterator_of(bg, 2).fmap == 1 &&
           iterator_of(bg, 0).fmap == ir::kReplica && accumulators(bg, ir::kReplica) == 2 &&
           count(ops, ir::OpKind::kExp, ir::Phase::kInLoop) == 1 &&
           count(ops, ir::OpKind::kDiv, ir::Phase::kPostLoop) == 1;
  });
  EXPECT_GT(n, 0) << summary_table(*r);
}

// nTrans as one kernel: each block holds whole rows (the grid splits the rows, no loop: both
// RMS norms need a full row before the next step), two sums, the rest fused in registers.
// Its e-graph does not saturate (distributivity over a 9-term square), so this also covers the
// oracle's bounded-rounds fallback (expr/oracle.h). One row per block, as at paper shapes: the
// tiles' row dims have size 1 and no index label, and the sums over them must still count as
// the program's (whose summands range over rows and hidden dim).
TEST(Discovery, NTransBecomesOneKernel) {
  const SearchOptions o = discovery_options("ntrans");
  auto r = search_lax(load_data("ntrans"), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const int n = single_kernels_matching(*r, [](const ir::BlockGraph& bg) {
    const auto ops = block_ops(bg);
    bool rows = true;
    for (int i = 0; i < 3; ++i) rows &= iterator_of(bg, i).imap[0] == 0;
    return bg.forloop == 1 && rows && count(ops, ir::OpKind::kSum) == 2 &&
           count(ops, ir::OpKind::kSqrt) == 2 && count(ops, ir::OpKind::kDiv) == 2;
  });
  EXPECT_GT(n, 0) << summary_table(*r);
  EXPECT_NE(r->stats.oracle.find("rebuilt"), std::string::npos);
}

// QKNorm as one kernel: both RMS norms inside the FlashAttention-style kernel (the loop over
// KV tiles: K split along its token dim 2, V along dim 1), Q's norm over a loop-invariant tile,
// K's per tile; two accumulators, one division after the loop.
TEST(Discovery, QkNormBecomesOneKernel) {
  const SearchOptions o = discovery_options("qknorm");
  auto r = search_lax(load_data("qknorm"), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const int n = single_kernels_matching(*r, [](const ir::BlockGraph& bg) {
    const auto ops = block_ops(bg);
    return bg.forloop == 4 && iterator_of(bg, 0).fmap == ir::kReplica &&
           iterator_of(bg, 1).fmap == 2 && iterator_of(bg, 2).fmap == 1 &&
           accumulators(bg, ir::kReplica) == 2 && count(ops, ir::OpKind::kSqrt) == 2 &&
           count(ops, ir::OpKind::kExp, ir::Phase::kInLoop) == 1 &&
           count(ops, ir::OpKind::kDiv, ir::Phase::kPostLoop) == 1;
  });
  EXPECT_GT(n, 0) << summary_table(*r);
}

// FlashDecoding style (split-KV) for GQA decode, in two graph-defined kernels: the first splits
// the KV tokens over a grid dim (K along dim 2, V along dim 1) and saves partial numerators and
// denominators, one part per block; the second adds the parts up by accumulating its input
// tiles over its loop, then divides once.
bool is_split_kv(const ir::KernelGraph& g) {
  if (g.ops.size() != 2 || !g.ops[0].graph_defined || !g.ops[1].graph_defined ||
      g.ops[0].inputs.size() != 3)
    return false;
  const ir::BlockGraph& split = *g.ops[0].block;
  const ir::BlockGraph& combine = *g.ops[1].block;
  bool kv_split = false;  // one grid dim splits K's tokens and V's tokens
  for (int d = 0; d < 3; ++d)
    kv_split |= iterator_of(split, 1).imap[d] == 2 && iterator_of(split, 2).imap[d] == 1;
  const auto ops = block_ops(combine);
  int summed_inputs = 0;  // accumulators reading an input iterator directly
  for (const ir::BlockNode& node : combine.nodes)
    if (node.kind == ir::BlockNodeKind::kAccumulator && node.fmap == ir::kReplica)
      for (const ir::BlockNode& src : combine.nodes)
        summed_inputs += src.kind == ir::BlockNodeKind::kInputIterator &&
                         src.outputs[0] == node.inputs[0];
  return kv_split && count(block_ops(split), ir::OpKind::kExp, ir::Phase::kInLoop) == 1 &&
         summed_inputs == 2 && count(ops, ir::OpKind::kDiv, ir::Phase::kPostLoop) == 1;
}

TEST(Discovery, GqaDecodeSplitsKv) {
  const SearchOptions o = discovery_options("gqa_decode");
  auto r = search_lax(load_data("gqa_decode"), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  int n = 0;
  for (const Candidate& c : r->candidates) n += is_split_kv(c.graph);
  EXPECT_GT(n, 0) << summary_table(*r);
}

// The same pair with no search flags (search/plan.h's split stage).
TEST(Discovery, PlannedGqaDecodeSplitsKv) {
  SearchOptions o;
  o.plan = true;
  o.threads = 2;
  o.time_budget_s = 10;
  auto r = search_lax(load_data("gqa_decode"), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  int n = 0;
  for (const Candidate& c : r->candidates)  // found by the split stage
    n += is_split_kv(c.graph) &&
         r->stages.at(static_cast<size_t>(c.stage)).find("split-K") != std::string::npos;
  EXPECT_GT(n, 0) << summary_table(*r);
}

// Mirage Fig. 9b: X W + (X A) B as one concat-matmul over the joined reduction dim.
TEST(Discovery, LoraUsesConcatMatmul) {
  const SearchOptions o = discovery_options("lora");
  auto r = superoptimize(load_data("lora"), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->best.has_value());
  bool concat = false;
  for (const Candidate& c : r->parts[0].candidates)
    for (const ir::KernelOp& op : c.graph.ops) concat |= op.op == ir::OpKind::kConcatMatmul;
  EXPECT_TRUE(concat) << summary_table(r->parts[0]);
  EXPECT_EQ(r->certified.kind, verify::VerdictKind::kVerified) << r->certified.summary;
}

}  // namespace
}  // namespace mugraph::search
