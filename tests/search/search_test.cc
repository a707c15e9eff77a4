// The search's parts: Lax partitioning, thread-graph fusion rules, canonical hash, canonical
// enumeration, determinism across thread counts, interrupt/resume.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "driver/driver.h"
#include "expr/abstract.h"
#include "ir/text.h"
#include "ir/canonical.h"
#include "search/discovery_options.h"
#include "search/enumerate.h"
#include "opt/fuse_threads.h"
#include "ir/lax_partition.h"
#include "search/screen_task.h"
#include "search/search.h"
#include "search/split_stage.h"
#include "opt/split_loop.h"
#include "test_util.h"
#include "verify/verifier.h"

namespace mugraph::search {
namespace {

using ir::canonical_hash;
using ir::LaxPart;
using ir::Partition;
using ir::partition_lax;
using ir::stitch;
using opt::fuse_thread_graphs;

using testing::load_example;
using testing::parse_ok;
using testing::read_file;

std::string data(const std::string& name) {
  return std::string(MUGRAPH_TEST_DATA_DIR) + "/search/" + name + ".mu";
}
ir::KernelGraph load_data(const std::string& name) { return parse_ok(read_file(data(name))); }

verify::VerdictKind certify(const ir::KernelGraph& a, const ir::KernelGraph& b) {
  verify::VerifyOptions vo;
  vo.mode = verify::Mode::kCertify;
  return verify::check(a, b, vo).kind;
}

// Small, fast options for LoRA at reduced shapes: kernel-level search only.
SearchOptions lora_options() {
  SearchOptions o;
  o.max_kernel_ops = 2;
  o.max_graph_defined_ops = 0;
  o.threads = 1;
  return o;
}

std::vector<uint64_t> hashes(const SearchResult& r) {
  std::vector<uint64_t> h;
  for (const Candidate& c : r.candidates) h.push_back(c.hash);
  return h;
}

// A program input's scale (scale=, --input-scale) reaches the parts and the stitched whole, so
// the search's checks draw it as the program says.
TEST(LaxPartition, PartsKeepTheProgramsInputScales) {
  const ir::KernelGraph g = parse_ok(R"(
input X : f32[4, 8]
input W : f32[8, 8] scale=0.25
A = matmul(X, W)
R = relu(A)
B = matmul(R, W)
output B
)");
  const Partition p = partition_lax(g);
  ASSERT_EQ(p.parts.size(), 2u);
  for (const ir::LaxPart& part : p.parts) {
    const ir::KernelGraph& q = part.program;
    for (size_t i = 0; i < q.inputs.size(); ++i)
      EXPECT_EQ(q.input_scale(i), q.tensor(q.inputs[i]).name == "W" ? 0.25 : 0.0)
          << q.tensor(q.inputs[i]).name;
  }
  std::vector<ir::KernelGraph> same;
  for (const ir::LaxPart& part : p.parts) same.push_back(part.program);
  const ir::KernelGraph s = stitch(g, p, same);
  EXPECT_EQ(s.input_scale(1), 0.25);
}

TEST(LaxPartition, CutsAtNonLaxOps) {
  const ir::KernelGraph g = parse_ok(R"(
input X : f32[4, 8]
input W : f32[8, 8]
A = matmul(X, W)
R = relu(A)
B = matmul(R, W)
C = exp(B)
D = exp(C)
output D
)");
  const Partition p = partition_lax(g);
  // relu is kept; exp(exp(.)) puts the second exp in a new part.
  ASSERT_EQ(p.kept_ops.size(), 1u);
  EXPECT_EQ(g.ops[p.kept_ops[0]].op, ir::OpKind::kRelu);
  ASSERT_EQ(p.parts.size(), 3u);
  EXPECT_EQ(p.parts[0].ops.size(), 1u);
  EXPECT_EQ(p.parts[1].ops.size(), 2u);  // matmul + the first exp
  EXPECT_EQ(p.parts[2].ops.size(), 1u);
  // Stitching the parts back unchanged gives an equivalent program.
  std::vector<ir::KernelGraph> same;
  for (const LaxPart& part : p.parts) same.push_back(part.program);
  const ir::KernelGraph s = stitch(g, p, same);
  EXPECT_EQ(s.ops.size(), g.ops.size());
  auto diff = driver::compare_graphs(g, s, 1, driver::Precision::kDouble);
  ASSERT_TRUE(diff.ok()) << diff.status().message();
  EXPECT_LT((*diff)[0].max_rel, 1e-12);
}

TEST(LaxPartition, LaxProgramIsOnePart) {
  for (const char* name : {"rms_norm_matmul", "gated_mlp", "gqa", "lora", "ntrans"}) {
    const Partition p = partition_lax(load_example(name));
    EXPECT_EQ(p.parts.size(), 1u) << name;
    EXPECT_TRUE(p.kept_ops.empty()) << name;
  }
}

TEST(FuseThreads, FusesTheEpilogueChainAndPreservesValues) {
  const ir::KernelGraph g = load_data("rms_norm_unfused");
  const ir::KernelGraph f = fuse_thread_graphs(g);
  ASSERT_EQ(f.ops.size(), 1u);
  int threads = 0, thread_ops = 0, computes = 0;
  for (const ir::BlockNode& n : f.ops[0].block->nodes) {
    threads += n.kind == ir::BlockNodeKind::kThreadGraph;
    computes += n.kind == ir::BlockNodeKind::kCompute;
    if (n.thread) thread_ops += static_cast<int>(n.thread->nodes.size());
  }
  // R2: the in-loop chain square -> (sum) is broken by the sum; mul(x, g) is alone before the
  // matmul (R5); the post-loop scale -> sqrt -> div chain becomes one thread graph.
  EXPECT_EQ(threads, 1);
  EXPECT_EQ(thread_ops, 3);
  EXPECT_EQ(computes, 4);  // mul, matmul, square, sum
  EXPECT_EQ(certify(g, f), verify::VerdictKind::kVerified);
  // Idempotent.
  EXPECT_EQ(canonical_hash(fuse_thread_graphs(f)), canonical_hash(f));
}

TEST(FuseThreads, RespectsOrderAndRegisterRules) {
  // e = exp(x) is read by the sum before the mul that could join it: fusing exp with mul
  // would move exp after the sum (R3), so exp stays a plain op.
  const ir::KernelGraph g = parse_ok(R"(
input X : f32[4, 8]
O = graph_defined(X, grid=[1, 1, 1], forloop=1) {
  x = input_iterator(X, imap={}, fmap=phi)
  e = exp(x)
  s = sum(e, dim=1, group=8)
  m = mul(e, s)
  n = neg(m)
  output_saver(n, omap={})
}
output O
)");
  const ir::KernelGraph f = fuse_thread_graphs(g);
  const auto& nodes = f.ops[0].block->nodes;
  ASSERT_EQ(nodes.size(), 5u);  // iterator, exp, sum, thread(mul, neg), saver
  EXPECT_EQ(nodes[1].kind, ir::BlockNodeKind::kCompute);
  EXPECT_EQ(nodes[3].kind, ir::BlockNodeKind::kThreadGraph);
  EXPECT_EQ(certify(g, f), verify::VerdictKind::kVerified);
  // R4: with a 3-register budget nothing fits.
  const ir::KernelGraph tight = fuse_thread_graphs(g, 3);
  for (const ir::BlockNode& n : tight.ops[0].block->nodes)
    EXPECT_NE(n.kind, ir::BlockNodeKind::kThreadGraph);
}

TEST(CanonicalHash, IgnoresNamesAndIndependentOrderButNotMaps) {
  const ir::KernelGraph a = parse_ok(R"(
input X : f32[4, 8]
input W : f32[8, 8]
S = square(X)
M = matmul(X, W)
O = mul(M, M)
P = add(S, X)
output O, P
)");
  const ir::KernelGraph b = parse_ok(R"(
input X : f32[4, 8]
input W : f32[8, 8]
m2 = matmul(X, W)
s2 = square(X)
p2 = add(X, s2)
o2 = mul(m2, m2)
output o2, p2
)");
  EXPECT_EQ(canonical_hash(a), canonical_hash(b));
  const ir::KernelGraph fused = load_example("rms_norm_matmul.fused");
  std::string text = ir::print_graph(fused);
  const size_t at = text.find("imap={x:1}");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 10, "imap={}   ");
  text.replace(text.find("omap={x:1}"), 10, "omap={x:0}");
  const ir::KernelGraph other = parse_ok(text);
  EXPECT_NE(canonical_hash(fused), canonical_hash(other));
}

// Without pruning, every complete uGraph the enumerator reaches is generated once: no two
// complete graphs of a search are structurally equal (before fusion, which may merge).
TEST(Enumerate, CanonicalOrderGeneratesEachGraphOnce) {
  const ir::KernelGraph p = load_data("lora");
  SearchOptions o = lora_options();
  o.prune = false;
  o.max_kernel_ops = 3;
  expr::ExprPool pool;
  expr::Oracle oracle(pool, expr::abstract_expressions(p, pool).outputs);
  Enumerator en(p, o, pool, oracle);
  std::set<uint64_t> seen;
  size_t complete = 0;
  for (int t = 0; t < en.task_count(); ++t) {
    auto out = en.run_task(t, [](uint64_t) { return false; });
    ASSERT_TRUE(out.finished);
    for (const ir::KernelGraph& g : out.complete) {
      ++complete;
      EXPECT_TRUE(seen.insert(canonical_hash(g)).second) << ir::print_graph(g);
    }
  }
  EXPECT_GT(complete, 4u);  // the program itself and the concat_matmul forms, at least
}

// A worker's caches (the oracle's answers, expressions, contents and the block-op memo) outlive
// its task and serve the next one on that thread: they must not change any task's result.
// Each task's graphs and counts are the same with the caches warmed by the tasks before it,
// by the tasks after it (reverse order) and by every task (a second round); and every answer
// the block-op memo gives equals a recomputation (Enumerator::check_memo), also from a table
// of 4 slots, where most lookups find another key.
// A finished task's output, comparable: its graphs (in order), counts and deepest prefix.
struct TaskOut {
  std::vector<uint64_t> graphs;
  uint64_t states = 0, completed = 0;
  std::vector<uint64_t> pruned;
  int deepest = 0;
  expr::Expr deepest_expr = nullptr;
  bool operator==(const TaskOut&) const = default;
};
TaskOut task_out(const Enumerator::TaskOutput& out) {
  EXPECT_TRUE(out.finished);
  TaskOut r;
  for (const ir::KernelGraph& g : out.complete)
    r.graphs.push_back(canonical_hash(g));
  r.states = out.stats.states();
  r.completed = out.stats.completed;
  for (uint64_t n : out.stats.pruned.n)
    r.pruned.push_back(n);
  r.deepest = out.deepest;
  r.deepest_expr = out.deepest_expr;
  return r;
}

// Runs body(program, options, pool, oracle) on small programs at their discovery options with
// loops {1, 4}.
template <class Body>
void on_small_programs(Body&& body) {
  for (const std::string name : {"rms_norm_matmul", "attention", "gated_mlp"}) {
    SCOPED_TRACE(name);
    const ir::KernelGraph p = load_data(name);
    SearchOptions o = testing::discovery_options(name);
    o.forloop_ranges = {1, 4};
    expr::ExprPool pool;
    expr::Oracle oracle(pool, expr::abstract_expressions(p, pool).outputs);
    body(p, o, pool, oracle);
  }
}

TEST(Enumerate, WarmCachesChangeNoTasksResult) {
  using Out = TaskOut;
  auto run = [](const Enumerator& en, int t) {
    return task_out(en.run_task(t, [](uint64_t) { return false; }));
  };
  on_small_programs([&](const ir::KernelGraph& p, const SearchOptions& o, expr::ExprPool& pool,
                        expr::Oracle& oracle) {
    Enumerator forward(p, o, pool, oracle), backward(p, o, pool, oracle);
    forward.check_memo(size_t{1} << 15);  // as in a search
    backward.check_memo(4);               // different keys meet in a slot
    const int n = forward.task_count();
    ASSERT_EQ(n, backward.task_count());
    std::vector<Out> first(static_cast<size_t>(n)), reverse(static_cast<size_t>(n));
    for (int t = 0; t < n; ++t)
      first[static_cast<size_t>(t)] = run(forward, t);
    for (int t = n - 1; t >= 0; --t)
      reverse[static_cast<size_t>(t)] = run(backward, t);
    size_t graphs = 0;
    for (int t = 0; t < n; ++t) {
      const Out& f = first[static_cast<size_t>(t)];
      graphs += f.graphs.size();
      EXPECT_EQ(f, reverse[static_cast<size_t>(t)]) << "task " << t << " (reverse order)";
      EXPECT_EQ(f, run(forward, t)) << "task " << t << " (second round)";
    }
    EXPECT_GT(graphs, 0u);
    EXPECT_GT(n, 10);
  });
}

// A task may hand the rest of its block search to pieces that spare threads run (PIECES OF A
// TASK, worker.h), at any level, and merges them. Each task's graphs (in order), counts and
// deepest prefix are the same as when it runs alone: with its first 8 chances to split taken
// and the pieces run by the task itself in turn, and with 4 pieces a task on average taken
// while 3 threads of the task pool run the tasks and take the pieces.
TEST(Enumerate, PiecesOfATaskChangeNoResult) {
  int cut = 0;  // tasks stopped inside
  using Out = TaskOut;
  const auto out_of = task_out;
  on_small_programs([&](const ir::KernelGraph& p, const SearchOptions& o, expr::ExprPool& pool,
                        expr::Oracle& oracle) {
    Enumerator en(p, o, pool, oracle);
    const int n = en.task_count();
    const auto never = [](uint64_t) { return false; };
    std::vector<Out> alone, inline_pieces(static_cast<size_t>(n)), pooled(static_cast<size_t>(n));
    int split = 0, graphs = 0;
    for (int t = 0; t < n; ++t) {
      alone.push_back(out_of(en.run_task(t, never)));
      SpareThreads forced(8);
      const Enumerator::TaskOutput out = en.run_task(t, never, &forced);
      split += out.pieces > 0;
      graphs += static_cast<int>(out.complete.size());
      inline_pieces[static_cast<size_t>(t)] = out_of(out);
    }
    SpareThreads always(4 * n);
    TaskPoolOptions po;
    po.threads = 3;
    po.spare = &always;
    std::mutex mu;
    int pooled_pieces = 0;
    run_tasks(
        n,
        [&](int t, const StopCheck& stop) {
          const Enumerator::TaskOutput out = en.run_task(t, stop, &always);
          std::lock_guard<std::mutex> lock(mu);
          pooled_pieces += out.pieces;
          pooled[static_cast<size_t>(t)] = out_of(out);
        },
        StopPolicy{}, po);
    for (int t = 0; t < n; ++t) {
      EXPECT_EQ(alone[static_cast<size_t>(t)], inline_pieces[static_cast<size_t>(t)]) << "task " << t;
      EXPECT_EQ(alone[static_cast<size_t>(t)], pooled[static_cast<size_t>(t)]) << "task " << t;
    }
    EXPECT_GT(split, n / 4);  // many tasks were split (else the test would miss a bad merge)
    EXPECT_GT(pooled_pieces, n);
    EXPECT_GT(graphs, 0);
    // A stop inside a piece leaves its task unfinished (run again on resume), and nothing hangs.
    for (int t = 0; t < n; ++t) {
      const uint64_t states = alone[static_cast<size_t>(t)].states;
      if (states < 1200)
        continue;
      uint64_t seen = 0;
      SpareThreads forced(8);
      const auto out =
          en.run_task(t, [&](uint64_t k) { return (seen += k) > states / 3; }, &forced);
      EXPECT_FALSE(out.finished) << "task " << t;
      ++cut;
    }
  });
  EXPECT_GT(cut, 0);
}

// A task's screens are shared with a spare thread (SCREENS SHARED WITH SPARE THREADS,
// screen_task.cc): each task's result (graphs in order, verdicts, counts) is the one of its
// complete uGraphs screened one by one (fused, screen_sampled), whether the task screens alone
// or a second thread, waiting for pieces, runs some of its screens (passing ones included). A
// stop before its screens leaves the task unfinished, with nothing kept, and nothing hangs.
TEST(Screen, ScreensSharedWithASpareThreadChangeNoResult) {
  struct Screens {
    std::vector<std::string> graphs;  // the text: graphs equal up to renaming differ in it
    std::vector<std::string> verdicts;
    uint64_t verified = 0, rejected = 0;
    bool done = false;
    bool operator==(const Screens&) const = default;
  };
  auto of = [](const TaskResult& tr) {
    Screens r;
    for (const ir::KernelGraph& g : tr.graphs) r.graphs.push_back(ir::print_graph(g));
    r.verdicts = tr.verdicts;
    r.verified = tr.stats.verified;
    r.rejected = tr.stats.rejected;
    r.done = tr.done;
    EXPECT_EQ(tr.stats.over_memory, 0u);
    return r;
  };
  std::atomic<int> elsewhere{0};  // passing screens run by the spare thread
  int screened = 0, cut = 0, mid_cut = 0, ordered = 0;
  on_small_programs([&](const ir::KernelGraph& p, const SearchOptions& o, expr::ExprPool& pool,
                        expr::Oracle& oracle) {
    Enumerator en(p, o, pool, oracle);
    const auto never = [](uint64_t) { return false; };
    SpareThreads spare;
    std::atomic<bool> end{false};
    std::thread helper([&] {
      while (!end.load()) spare.serve(std::chrono::milliseconds(1));
    });
    const auto me = std::this_thread::get_id();
    const TaskContext alone{p, o, en, Deadline{}, {}, nullptr};
    const TaskContext shared{p, o, en, Deadline{},
                             [&] { elsewhere += std::this_thread::get_id() != me; }, &spare};
    for (int t = 0; t < en.task_count(); ++t) {
      Screens want;  // the reference: each complete uGraph screened in turn
      want.done = true;
      std::vector<bool> passes;  // per complete uGraph
      const Enumerator::TaskOutput out = en.run_task(t, never);
      for (const ir::KernelGraph& g : out.complete) {
        const ir::KernelGraph fused = fuse_thread_graphs(g);
        std::string text;
        const verify::Verdict v = screen_sampled(p, o, Deadline{}, fused, text);
        passes.push_back(verify::accepted(v.kind));
        if (!passes.back()) {
          ++want.rejected;
          continue;
        }
        ++want.verified;
        want.graphs.push_back(ir::print_graph(in_program_order(fused, v.permutation)));
        want.verdicts.push_back(text);
      }
      ordered += std::set<std::string>(want.graphs.begin(), want.graphs.end()).size() > 1;
      const TaskResult tr = run_screened_task(alone, t, never);
      EXPECT_EQ(want, of(tr)) << "task " << t << " (alone)";
      EXPECT_EQ(want, of(run_screened_task(shared, t, never))) << "task " << t << " (shared)";
      screened += static_cast<int>(want.verified + want.rejected);
      if (want.verified + want.rejected > 0) {
        // Stops at the first look after the enumeration reported its states: the first screen.
        std::atomic<uint64_t> seen{0};
        const uint64_t states = tr.stats.states();
        const auto stop_at_screens = [&](uint64_t k) { return (seen += k) >= states && k == 0; };
        const Screens l = of(run_screened_task(shared, t, stop_at_screens));
        EXPECT_FALSE(l.done) << "task " << t;
        EXPECT_TRUE(l.graphs.empty() && l.verified == 0 && l.rejected == 0) << "task " << t;
        ++cut;
      }
      if (passes.size() > 4) {
        // Stops at the fourth screen drawn (by either thread): what is kept is the reference's
        // first screens, before the first one cut (later ones the other thread finished are
        // dropped).
        std::atomic<uint64_t> seen{0};
        std::atomic<int> looks{0};
        const uint64_t states = tr.stats.states();
        const auto stop_mid = [&](uint64_t k) {
          return (seen += k) >= states && k == 0 && ++looks > 3;
        };
        const Screens l = of(run_screened_task(shared, t, stop_mid));
        const size_t kept = l.verified + l.rejected;
        EXPECT_FALSE(l.done) << "task " << t;
        ASSERT_LE(kept, 3u) << "task " << t;
        const size_t kept_passes = static_cast<size_t>(
            std::count(passes.begin(), passes.begin() + static_cast<std::ptrdiff_t>(kept), true));
        EXPECT_EQ(l.verified, kept_passes) << "task " << t;
        ASSERT_LE(l.graphs.size(), want.graphs.size());
        EXPECT_TRUE(std::equal(l.graphs.begin(), l.graphs.end(), want.graphs.begin()))
            << "task " << t;
        ++mid_cut;
      }
    }
    end = true;
    spare.wake();
    helper.join();
  });
  EXPECT_GT(screened, 20);
  EXPECT_GT(ordered, 5);  // tasks whose passing graphs differ: their order is checked
  EXPECT_GT(cut, 0);
  EXPECT_GT(mid_cut, 0);
  EXPECT_GT(elsewhere.load(), 0);
}

TEST(Search, PruningKeepsTheAnswersAndCutsTheWork) {
  const ir::KernelGraph p = load_data("lora");
  SearchOptions o = lora_options();
  o.max_kernel_ops = 3;
  auto pruned = search_lax(p, o);
  o.prune = false;
  auto full = search_lax(p, o);
  ASSERT_TRUE(pruned.ok() && full.ok());
  EXPECT_EQ(hashes(*pruned), hashes(*full));
  EXPECT_LT(pruned->stats.states(), full->stats.states());
  EXPECT_GT(pruned->stats.pruned[PruneRule::kOracle], 0u);
}

TEST(Search, SameCandidatesWhateverTheThreadCount) {
  const ir::KernelGraph p = load_data("lora");
  SearchOptions o = lora_options();
  o.max_kernel_ops = 3;
  o.threads = 1;
  auto one = search_lax(p, o);
  o.threads = 2;
  auto two = search_lax(p, o);
  ASSERT_TRUE(one.ok() && two.ok());
  EXPECT_FALSE(one->candidates.empty());
  EXPECT_EQ(hashes(*one), hashes(*two));
  EXPECT_EQ(one->stats.states(), two->stats.states());
}

// Neither the steps bound (SearchOptions::prune_by_steps) nor one task per first block op of a
// root graph-defined op (split_block_tasks) changes what the search finds.
TEST(Search, StepsBoundAndSplitTasksKeepTheAnswers) {
  const ir::KernelGraph p = load_data("rms_norm_matmul");
  SearchOptions o = testing::discovery_options("rms_norm_matmul");
  o.forloop_ranges = {1, 4};
  auto both = search_lax(p, o);
  o.prune_by_steps = false;
  auto unbounded = search_lax(p, o);
  o.prune_by_steps = true;
  o.split_block_tasks = false;
  auto unsplit = search_lax(p, o);
  ASSERT_TRUE(both.ok() && unbounded.ok() && unsplit.ok());
  EXPECT_FALSE(both->candidates.empty());
  EXPECT_EQ(hashes(*both), hashes(*unbounded));
  EXPECT_EQ(both->stats.completed, unbounded->stats.completed);
  EXPECT_GT(both->stats.pruned[PruneRule::kSteps], 0u);
  EXPECT_EQ(unbounded->stats.pruned[PruneRule::kSteps], 0u);
  EXPECT_LT(both->stats.block_states, unbounded->stats.block_states);
  EXPECT_EQ(hashes(*both), hashes(*unsplit));
  EXPECT_EQ(both->stats.completed, unsplit->stats.completed);
  EXPECT_GT(both->stats.tasks_total, unsplit->stats.tasks_total);
}

// Interrupt at random points (a state limit), resume from the checkpoint until done, and
// compare with an uninterrupted run: same candidates, nothing lost.
TEST(Search, InterruptAndResumeLosesNothing) {
  const ir::KernelGraph p = load_data("gated_mlp");
  SearchOptions o;
  o.max_kernel_ops = 2;
  o.max_block_ops = 6;
  o.grid_sizes = {1, 2};
  o.min_blocks = 1;
  o.forloop_ranges = {1, 4};
  o.threads = 2;
  const std::string ckpt = ::testing::TempDir() + "/mugraph_resume_test.json";
  // Two kernel ops; one (its block search split into tasks by first block op).
  for (int kernel_ops : {2, 1}) {
    o.max_kernel_ops = kernel_ops;
    auto whole = search_lax(p, o);
    ASSERT_TRUE(whole.ok());
    ASSERT_EQ(whole->stop_reason, StopReason::kExhausted);
    ASSERT_FALSE(whole->candidates.empty());
    const uint64_t total = whole->stats.states();
    ASSERT_GT(total, 1000u);
    for (double fraction : {0.13, 0.41, 0.77}) {
      const auto limit = static_cast<uint64_t>(fraction * static_cast<double>(total));
      std::remove(ckpt.c_str());
      SearchOptions oi = o;
      oi.checkpoint = ckpt;
      oi.max_states = limit;
      auto r = search_lax(p, oi);
      ASSERT_TRUE(r.ok()) << r.status().message();
      int rounds = 0;
      while (r->stop_reason != StopReason::kExhausted && rounds++ < 50) {
        EXPECT_EQ(r->stop_reason, StopReason::kStateLimit);
        oi.resume = true;
        r = search_lax(p, oi);
        ASSERT_TRUE(r.ok()) << r.status().message();
      }
      EXPECT_GT(rounds, 0) << "limit " << limit << " did not interrupt";
      EXPECT_EQ(hashes(*r), hashes(*whole)) << kernel_ops << " kernel ops, limit " << limit;
      EXPECT_EQ(r->stats.completed, whole->stats.completed);
    }
  }
  o.max_kernel_ops = 2;
  const uint64_t total = search_lax(p, o)->stats.states();
  // A checkpoint of other options is refused.
  SearchOptions first = o;
  first.checkpoint = ckpt;
  first.max_states = total / 2;
  ASSERT_TRUE(search_lax(p, first).ok());
  SearchOptions other = o;
  other.checkpoint = ckpt;
  other.resume = true;
  other.max_block_ops = 5;
  auto refused = search_lax(p, other);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("other search options"), std::string::npos);
}

TEST(Search, ExplainsWhenNothingIsFound) {
  const ir::KernelGraph p = load_data("lora");
  SearchOptions o = lora_options();
  o.max_kernel_ops = 1;  // LoRA needs two kernels without graph-defined ops
  auto r = search_lax(p, o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->candidates.empty());
  EXPECT_NE(r->why_none.find("no prefix reached the program's output expressions"),
            std::string::npos)
      << r->why_none;
}

TEST(Search, RejectsBadOptionsAndPrograms) {
  const ir::KernelGraph p = load_data("lora");
  SearchOptions o = lora_options();
  o.forloop_ranges = {0};
  auto r = search_lax(p, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("for-loop range 0"), std::string::npos);
  auto g = search_lax(load_example("lora.concat_matmul"), lora_options());
  EXPECT_TRUE(g.ok());  // predefined ops only: fine
  auto gd = search_lax(load_example("gated_mlp.fused"), lora_options());
  ASSERT_FALSE(gd.ok());
  EXPECT_NE(gd.status().message().find("graph-defined"), std::string::npos);
}

// Issue 19: grid size 0 divided by zero (SIGFPE), negative sizes and an empty block range were
// taken silently, and superoptimize partitioned a graph-defined op away ("no uGraph").
TEST(Search, SuperoptimizeRejectsBadGridsAndGraphDefinedOps) {
  const ir::KernelGraph p = load_data("lora");
  auto error_of = [&](const ir::KernelGraph& g, const SearchOptions& o) {
    auto r = superoptimize(g, o);
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.status().message();
  };
  SearchOptions o = lora_options();
  o.grid_sizes = {1, 0};
  EXPECT_NE(error_of(p, o).find("grid size 0 must be >= 1 (--grid-sizes)"), std::string::npos);
  o.grid_sizes = {4, -2};
  EXPECT_NE(error_of(p, o).find("grid size -2 must be >= 1"), std::string::npos);
  o = lora_options();
  o.min_blocks = 64;
  o.max_blocks = 8;
  EXPECT_NE(error_of(p, o).find("max blocks 8 is below min blocks 64"), std::string::npos);
  o.min_blocks = 0;
  EXPECT_NE(error_of(p, o).find("min blocks 0 must be >= 1"), std::string::npos);
  o = lora_options();
  o.max_kernel_ops = 0;
  EXPECT_NE(error_of(p, o).find("max kernel ops 0 must be >= 1 (--max-kernel-ops)"), std::string::npos);
  o = lora_options();
  o.max_block_ops = -1;
  EXPECT_NE(error_of(p, o).find("max block ops -1 must be >= 0 (--max-block-ops)"), std::string::npos);
  o = lora_options();
  o.max_block_outputs = 0;
  EXPECT_NE(error_of(p, o).find("(--max-block-outputs)"), std::string::npos);
  o = lora_options();
  o.max_kernel_op_inputs = 7;
  EXPECT_NE(error_of(p, o).find("max kernel op inputs 7 must be in 1..6 (--max-kernel-op-inputs)"),
            std::string::npos);
  EXPECT_NE(error_of(load_example("rms_norm_matmul.fused"), lora_options())
                .find("the program must consist of predefined ops; kernel op 'Y' is graph-defined"),
            std::string::npos);
}

}  // namespace
}  // namespace mugraph::search

namespace mugraph::search {
namespace {

// Issue 19, item 3: the screen matches outputs in any order, and the search wrote candidates
// with outputs in program order regardless: for A = X - Y, B = Y - X a third of the written
// "verified" candidates computed swapped outputs. Every candidate now computes the program's
// outputs in the program's order (checked by the float64 interpreter, not the verifier), and
// carries its screen verdict.
// The test on every output entry after the merge (search/screen_task.h): what a search hands
// out passed it; a wrong candidate is dropped and counted rejected; the candidates the deadline
// did not let it reach are dropped and counted unconfirmed.
TEST(Search, CandidatesPassATestOnEveryEntryOrAreDropped) {
  const ir::KernelGraph p = load_data("lora");
  SearchOptions o = lora_options();
  auto r = search_lax(p, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_FALSE(r->candidates.empty());
  EXPECT_EQ(r->stats.confirmed, r->candidates.size());
  EXPECT_EQ(r->stats.unconfirmed, 0u);
  EXPECT_LE(r->stats.space_seconds, r->stats.total_seconds);
  for (const Candidate& c : r->candidates)
    EXPECT_NE(c.verdict_text.find(", 1 on all 256"), std::string::npos) << c.verdict_text;

  std::vector<Candidate> cands = r->candidates;
  Candidate wrong = cands.front();  // O = X W + (X A) B with B's role taken by W's columns
  wrong.graph = parse_ok(
      "input X : f16[4, 32]\ninput W : f16[32, 64]\ninput A : f16[32, 4]\ninput B : f16[4, 64]\n"
      "Y1 = matmul(X, W)\nT = matmul(X, A)\nY2 = matmul(T, B)\nO = sub(Y1, Y2)\noutput O\n");
  cands.insert(cands.begin() + 1, wrong);
  ConfirmStats cs = confirm_every_entry(p, o, Deadline(), 2, cands);
  EXPECT_EQ(cs.rejected, 1);
  EXPECT_EQ(cs.confirmed, static_cast<int>(r->candidates.size()));
  std::vector<uint64_t> kept;
  for (const Candidate& c : cands) kept.push_back(c.hash);
  EXPECT_EQ(kept, hashes(*r));  // the right ones, in their order

  cs = confirm_every_entry(p, o, Deadline::at(Deadline::Clock::now()), 2, cands);
  EXPECT_EQ(cs.unconfirmed, static_cast<int>(r->candidates.size()));
  EXPECT_TRUE(cands.empty());
}

// SearchOptions::confirm_limit (optimize measures the top few): the every-entry test keeps the
// first that many candidates to pass, in rank order whatever the threads, stops there and counts
// the rest beyond_limit; the search is not cut by it (no time limit, no checkpoint).
TEST(Search, TheEveryEntryTestStopsAtItsLimit) {
  const ir::KernelGraph p = load_data("lora");
  SearchOptions o = lora_options();
  auto all = search_lax(p, o);
  ASSERT_TRUE(all.ok()) << all.status().message();
  const std::vector<uint64_t> every = hashes(*all);
  ASSERT_GE(every.size(), 4u);
  o.confirm_limit = 2;
  auto r = search_lax(p, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(hashes(*r), std::vector<uint64_t>(every.begin(), every.begin() + 2));
  EXPECT_EQ(r->stop_reason, StopReason::kExhausted);
  EXPECT_EQ(r->stats.confirmed, 2u);
  EXPECT_EQ(r->stats.unconfirmed, 0u);
  EXPECT_EQ(r->stats.beyond_limit, every.size() - 2);
  EXPECT_NE(r->stats.to_string().find("as many as asked for; " + std::to_string(every.size() - 2) +
                                      " more left out"),
            std::string::npos);

  Candidate wrong = all->candidates.front();  // rejected before the limit: not counted in it
  wrong.graph = parse_ok(
      "input X : f16[4, 32]\ninput W : f16[32, 64]\ninput A : f16[32, 4]\ninput B : f16[4, 64]\n"
      "Y1 = matmul(X, W)\nT = matmul(X, A)\nY2 = matmul(T, B)\nO = sub(Y1, Y2)\noutput O\n");
  for (int threads : {1, 2, 3}) {
    std::vector<Candidate> cands = all->candidates;
    cands.insert(cands.begin() + 1, wrong);
    o.confirm_limit = 3;
    const ConfirmStats cs = confirm_every_entry(p, o, Deadline(), threads, cands);
    EXPECT_EQ(cs.rejected, 1) << threads;
    EXPECT_EQ(cs.confirmed, 3) << threads;
    EXPECT_EQ(cs.beyond_limit, static_cast<int>(every.size()) - 3) << threads;
    std::vector<uint64_t> kept;
    for (const Candidate& c : cands) kept.push_back(c.hash);
    EXPECT_EQ(kept, std::vector<uint64_t>(every.begin(), every.begin() + 3)) << threads;
  }
  // A passing candidate that confirm_counts refuses (optimize: one its backend refuses, or
  // one it throws on) is kept but does not count: the limit of 2 then keeps 3, and one thread
  // stops right there (3 asked); a wrong candidate after that is not tested (left out).
  o.confirm_limit = 2;
  int asked = 0;
  o.confirm_counts = [&](const ir::KernelGraph& g) {
    ++asked;
    if (ir::canonical_hash(g) == every[0]) throw std::runtime_error("refused");
    return true;
  };
  std::vector<Candidate> cands = all->candidates;
  cands.insert(cands.begin() + 3, wrong);
  const ConfirmStats cs = confirm_every_entry(p, o, Deadline(), 1, cands);
  EXPECT_EQ(asked, 3);
  EXPECT_EQ(cs.confirmed, 3);
  EXPECT_EQ(cs.rejected, 0);
  EXPECT_EQ(cs.beyond_limit, static_cast<int>(every.size()) + 1 - 3);
  std::vector<uint64_t> kept;
  for (const Candidate& c : cands) kept.push_back(c.hash);
  EXPECT_EQ(kept, std::vector<uint64_t>(every.begin(), every.begin() + 3));
}

// The sampled screen leaves the float check of a candidate only power-map sqrt can decide to
// the every-entry test (verify::Undecided::kPowerMapThenDefer), which runs it: a candidate wrong
// in floats that the power map cannot tell apart passes the sampled screen (float check
// pending) and the every-entry test rejects it. Here Y = X / sqrt(4 T) against X / (-2 sqrt(T)):
// 4^((p+1)/4) = -2 whenever 2 is a non-residue mod p (p = 3 mod 8), so some draws see no
// difference.
TEST(Search, TheEveryEntryTestRunsTheFloatCheckTheScreenLeftPending) {
  const std::string in = "input X : f32[8, 64]\nS = square(X)\nT = sum(S, dim=1, group=64)\n";
  const ir::KernelGraph p =
      parse_ok(in + "M = scale(T, factor=4)\nR = sqrt(M)\nY = div(X, R)\noutput Y\n");
  Candidate wrong;
  wrong.graph = parse_ok(in + "R = sqrt(T)\nN = scale(R, factor=-2)\nY = div(X, N)\noutput Y\n");
  int pending = 0;
  for (uint64_t seed = 0; seed < 64 && pending < 2; ++seed) {
    SearchOptions o;
    o.seed = seed;
    std::string text;
    const verify::Verdict v = screen_sampled(p, o, Deadline(), wrong.graph, text);
    if (!verify::accepted(v.kind)) continue;  // the power map saw the difference
    ++pending;
    EXPECT_TRUE(verify::float_check_pending(text)) << text;
    std::vector<Candidate> cands{wrong};
    const ConfirmStats cs = confirm_every_entry(p, o, Deadline(), 1, cands);
    EXPECT_EQ(cs.rejected, 1) << "seed " << seed;
    EXPECT_TRUE(cands.empty());
  }
  EXPECT_EQ(pending, 2) << "no draw passed the wrong candidate's sampled screen: nothing tested";
}

// The split stage takes a source whose float check is pending (the every-entry test may still
// reject it) only for a place no other source takes: with kSplitSources + 1 looped kernels and
// the best pending, the forms are exactly those of the other kSplitSources; with kSplitSources
// and the best pending, it fills the last place (the same forms as with none pending).
TEST(Search, ASplitSourceWhoseFloatCheckIsPendingOnlyFillsAFreePlace) {
  const ir::KernelGraph p = parse_ok(read_file(data("gated_mlp")));
  SearchOptions o;
  o.max_kernel_ops = 1;
  o.max_block_ops = 6;
  o.grid_sizes = {1, 2};
  o.min_blocks = 1;
  o.forloop_ranges = {2, 4, 8};
  o.threads = 1;
  auto r = search_lax(p, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::vector<Candidate> looped;  // best first, as the search ranks them
  for (const Candidate& c : r->candidates)
    if (c.graph.ops.size() == 1 && c.graph.ops[0].graph_defined && opt::split_loop(c.graph, 2).ok())
      looped.push_back(c);
  ASSERT_GE(looped.size(), kSplitSources + 1) << "too few looped kernels split_loop applies to";
  looped.resize(kSplitSources + 1);
  const std::set<uint64_t> none;
  auto forms = [&](const std::vector<Candidate>& found) {
    const SearchResult s = split_from_best(p, o, found, none, Deadline());
    std::vector<uint64_t> h;
    for (const Candidate& c : s.candidates) h.push_back(c.hash);
    EXPECT_EQ(s.stats.rejected, 0u);
    return std::make_pair(s.stats.completed, h);
  };
  auto pending = [](std::vector<Candidate> v) {
    v[0].verdict_text += "; " + std::string(verify::kFloatCheckPending);
    return v;
  };
  const std::vector<Candidate> rest(looped.begin() + 1, looped.end());
  const auto rest_forms = forms(rest);
  ASSERT_GT(rest_forms.first, 0u);
  EXPECT_NE(forms(looped), rest_forms) << "the best source's forms are among the others'";
  EXPECT_EQ(forms(pending(looped)), rest_forms);
  const std::vector<Candidate> four(looped.begin(), looped.begin() + kSplitSources);
  EXPECT_EQ(forms(pending(four)), forms(four));
}

TEST(Search, CandidatesComputeTheProgramsOutputsInOrder) {
  const auto program = mugraph::testing::parse_ok(
      "input X : f32[64, 64]\ninput Y : f32[64, 64]\nA = sub(X, Y)\nB = sub(Y, X)\n"
      "output A\noutput B\n");
  SearchOptions o;  // the defaults of `mugraph search`, as in the report
  o.threads = 2;
  auto r = driver::superoptimize(program, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_FALSE(r->parts.empty());
  const auto& cands = r->parts[0].candidates;
  ASSERT_GE(cands.size(), 10u);
  for (const Candidate& c : cands) {
    auto d = driver::compare_graphs(program, c.graph, 1, driver::Precision::kDouble);
    ASSERT_TRUE(d.ok()) << d.status().message();
    for (const driver::OutputDiff& od : *d)
      EXPECT_LE(od.max_rel, 1e-12) << od.name << "\n" << ir::print_graph(c.graph);
    const bool best = &c == &cands.front();  // certified; the others carry their screen verdict
    EXPECT_EQ(c.verdict_text.rfind(best ? "VERIFIED (certify" : "PASSED (screen", 0), 0u)
        << c.verdict_text;
  }
  EXPECT_TRUE(r->verified()) << r->certified.summary;
}

}  // namespace
}  // namespace mugraph::search
