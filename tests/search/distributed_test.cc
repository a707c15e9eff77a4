// The distributed search (search/distributed.h) over in-process ranks (support/transport.h's
// LocalHub): the same candidates, verdicts and counters on 1, 2 and 3 ranks; a rank that dies
// loses no task; a cut search resumes under ranks; wire texts round-trip; a rank that cannot
// run a space (or whose oracle differs from rank 0's) is dropped and named. The same over real
// MPI processes: tests/tools/mpi_test.sh.
#include <gtest/gtest.h>

#include <limits>
#include <sstream>
#include <mutex>
#include <thread>

#include "ir/text.h"
#include "search/checkpoint.h"
#include "search/distributed.h"
#include "search/search.h"
#include "support/transport.h"
#include "target/target.h"
#include "test_util.h"

namespace mugraph::search {
namespace {

ir::KernelGraph load_data(const std::string& name) {
  return testing::parse_ok(
      testing::read_file(std::string(MUGRAPH_TEST_DATA_DIR) + "/search/" + name + ".mu"));
}

// GatedMLP at reduced shapes, two kernel ops: a few hundred tasks, about a second.
SearchOptions gated_mlp_options() {
  SearchOptions o;
  o.max_kernel_ops = 2;
  o.max_block_ops = 6;
  o.grid_sizes = {1, 2};
  o.min_blocks = 1;
  o.forloop_ranges = {1, 4};
  o.threads = 1;
  return o;
}

// Rank 0 (this thread) and ranks 1..n-1 serving on threads of their own, each with one thread.
struct InProcessJob {
  LocalHub hub;
  std::vector<std::thread> servers;
  std::vector<int> codes;
  std::unique_ptr<Ranks> ranks;
  std::mutex mu;
  std::vector<std::string> log;

  InProcessJob(int n, double timeout_s) : hub(n), codes(static_cast<size_t>(n), -1) {
    for (int r = 1; r < n; ++r)
      servers.emplace_back([this, r, timeout_s] {
        codes[static_cast<size_t>(r)] = serve_tasks(hub.endpoint(r), 1, nullptr, timeout_s);
      });
    ranks = std::make_unique<Ranks>(hub.endpoint(0), timeout_s, [this](const std::string& l) {
      std::lock_guard<std::mutex> lock(mu);
      log.push_back(l);
    });
  }
  ~InProcessJob() { finish(); }
  void finish() {
    ranks.reset();  // QUIT
    for (std::thread& t : servers) t.join();
    servers.clear();
  }
  std::string all_log() {
    std::lock_guard<std::mutex> lock(mu);
    std::string s;
    for (const std::string& l : log) s += l + "\n";
    return s;
  }
};

// Everything a user sees of the candidates: their text, verdicts and order, and the counters.
std::string candidates_text(const SearchResult& r) {
  std::string s;
  for (const Candidate& c : r.candidates)
    s += ir::print_graph(c.graph) + "# " + c.verdict_text + " task " + std::to_string(c.task) + "\n";
  s += "completed " + std::to_string(r.stats.completed) + " rejected " +
       std::to_string(r.stats.rejected) + " states " + std::to_string(r.stats.states()) +
       " tasks " + std::to_string(r.stats.tasks_done) + "/" + std::to_string(r.stats.tasks_total);
  return s;
}

TEST(Distributed, SameCandidatesOnOneTwoAndThreeRanks) {
  const ir::KernelGraph p = load_data("gated_mlp");
  for (int kernel_ops : {2, 1}) {  // 1: one graph-defined op, tasks split by first block op
    SearchOptions o = gated_mlp_options();
    o.max_kernel_ops = kernel_ops;
    auto alone = search_lax(p, o);
    ASSERT_TRUE(alone.ok()) << alone.status().message();
    ASSERT_FALSE(alone->candidates.empty());
    EXPECT_EQ(alone->stats.tasks_by_ranks, 0);
    for (int n : {2, 3}) {
      InProcessJob job(n, 30);
      o.ranks = job.ranks.get();
      auto r = search_lax(p, o);
      ASSERT_TRUE(r.ok()) << r.status().message();
      EXPECT_EQ(candidates_text(*r), candidates_text(*alone)) << n << " ranks";
      EXPECT_GT(r->stats.tasks_by_ranks, 0) << n << " ranks: the others ran nothing";
      EXPECT_LT(r->stats.tasks_by_ranks, r->stats.tasks_done);
      job.finish();
      for (int k = 1; k < n; ++k) EXPECT_EQ(job.codes[static_cast<size_t>(k)], 0);
      EXPECT_EQ(job.all_log(), "");
    }
  }
}

// How long a rank may be silent before the others take it for dead. Both sides use it: long
// enough that a live rank starved of CPU for a moment (CI runs two heavy tests at once on 2
// cores; 0.3 s was seen to be too short) is not taken for dead, and that rank 0 building the
// program's oracle before it hands out tasks is not (1.5 s was too short under the sanitizers
// on a slow day: "rank 0 was silent for 1.5 s").
constexpr double kDeathTimeout = 6;

// Rank 1 dies as it sends its first task result (it holds tasks then: that one and the one
// waiting behind it); they never come back, and once it has been silent for the rank timeout
// they run elsewhere. Then rank 2 of 3 dies the same way at its third result while rank 1 lives
// on; and a rank dead before it was ready gets no task at all. Each time: the same candidates
// as one process. (Only results count: a status message, sent on a timer, could otherwise be
// the fatal one and a rank die holding nothing.)
TEST(Distributed, ARankThatDiesLosesNoTask) {
  const ir::KernelGraph p = load_data("gated_mlp");
  SearchOptions o = gated_mlp_options();
  auto alone = search_lax(p, o);
  ASSERT_TRUE(alone.ok());
  for (int n : {2, 3}) {
    // Whether rank n-1 lives to that result depends on the scheduler: on a loaded machine
    // (ctest -j2 on 2 cores) the other ranks can run every task before a starved one has sent
    // its third result (seen once in CI). Such a run must still find the same candidates; the
    // scenario is run again, up to 4 times, until the rank does die.
    bool died = false;
    for (int attempt = 0; attempt < 4 && !died; ++attempt) {
      InProcessJob job(n, kDeathTimeout);
      job.hub.kill_at_send(n - 1, n == 2 ? 1 : 3, wire::kResult);
      o.ranks = job.ranks.get();
      auto r = search_lax(p, o);
      ASSERT_TRUE(r.ok()) << r.status().message();
      EXPECT_EQ(candidates_text(*r), candidates_text(*alone)) << n << " ranks";
      died = job.hub.killed(n - 1);
      if (!died) {
        EXPECT_EQ(job.ranks->lost(), 0);
        continue;
      }
      EXPECT_EQ(job.ranks->lost(), 1);
      EXPECT_EQ(r->stats.tasks_by_ranks > 0, n == 3);
      // One thread: two tasks in flight (one waits there while a result travels back); with 2
      // ranks, rank 1 dies sending its first result, so both are still out; with 3, rank 2 may
      // have been given only one more since.
      const std::string lost = "search: rank " + std::to_string(n - 1) + " was silent for " +
                               [] { std::ostringstream s; s << kDeathTimeout; return s.str(); }() + " s (taken for dead); its ";
      const std::string log = job.all_log();
      EXPECT_NE(log.find(lost + (n == 2 ? "2" : "")), std::string::npos) << log;
      EXPECT_EQ(log.find(lost + "0"), std::string::npos) << log;
      EXPECT_NE(log.find("running task(s) run again elsewhere"), std::string::npos) << log;
      job.finish();
      EXPECT_EQ(job.codes[static_cast<size_t>(n - 1)], 1);  // it heard nothing more from rank 0
    }
    EXPECT_TRUE(died) << "rank " << n - 1 << " of " << n << " never reached the send it dies at";
  }
  InProcessJob job(2, kDeathTimeout);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // its HELLO is sent
  job.hub.kill(1);
  o.ranks = job.ranks.get();
  auto r = search_lax(p, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(candidates_text(*r), candidates_text(*alone));
  EXPECT_EQ(r->stats.tasks_by_ranks, 0);
}

// A search cut by its state limit under ranks, resumed under ranks until done, finds what an
// uninterrupted one does (rank 0 alone writes and reads the checkpoint).
TEST(Distributed, CutAndResumedUnderRanksLosesNothing) {
  const ir::KernelGraph p = load_data("gated_mlp");
  SearchOptions o = gated_mlp_options();
  auto alone = search_lax(p, o);
  ASSERT_TRUE(alone.ok());
  const std::string ckpt = ::testing::TempDir() + "/mugraph_distributed_resume.json";
  std::remove(ckpt.c_str());
  InProcessJob job(3, 30);
  o.ranks = job.ranks.get();
  o.checkpoint = ckpt;
  // A twentieth: the limit counts rank 0's states and what the other ranks have reported, so
  // a rank 0 starved by a loaded machine (one fifth failed once under ctest -j2) still hits it.
  o.max_states = alone->stats.states() / 20;
  auto r = search_lax(p, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  int rounds = 0;
  while (r->stop_reason != StopReason::kExhausted && rounds++ < 50) {
    EXPECT_EQ(r->stop_reason, StopReason::kStateLimit);
    o.resume = true;
    r = search_lax(p, o);
    ASSERT_TRUE(r.ok()) << r.status().message();
  }
  EXPECT_GT(rounds, 0);
  EXPECT_EQ(candidates_text(*r).substr(0, candidates_text(*r).rfind("completed")),
            candidates_text(*alone).substr(0, candidates_text(*alone).rfind("completed")));
  EXPECT_EQ(r->stats.completed, alone->stats.completed);
}

// What rank 0 sends (the space) and what comes back (a task's result) read back as written;
// the fingerprint covers the options a checkpoint must agree on, the oracle's included.
TEST(Distributed, WireTextsRoundTrip) {
  const ir::KernelGraph p = load_data("gated_mlp");
  SearchOptions o = gated_mlp_options();
  o.target = target::local_cpu();
  o.oracle.z3_fallback_budget_s = std::numeric_limits<double>::infinity();
  o.block_ops = {ir::OpKind::kMatmul, ir::OpKind::kExp};
  ir::KernelGraph q;
  SearchOptions back;
  ASSERT_TRUE(read_space(space_text(p, o), q, back).ok());
  EXPECT_EQ(ir::print_graph(q), ir::print_graph(p));
  EXPECT_EQ(space_text(q, back), space_text(p, o));
  EXPECT_EQ(fingerprint(q, back), fingerprint(p, o));
  EXPECT_EQ(back.target.shared_memory_per_block, o.target.shared_memory_per_block);
  SearchOptions other = o;
  other.oracle.unsaturated_rounds += 1;
  EXPECT_NE(fingerprint(p, other), fingerprint(p, o));
  EXPECT_FALSE(read_space("{\"program\": 1}", q, back).ok());

  TaskResult t;
  t.done = true;
  t.graphs = {p};
  t.verdicts = {"PASSED (screen): ok"};
  t.stats.completed = 3;
  t.stats.deepest = 4;
  t.stats.deepest_prefix = "sum(64, mul(X, W))";
  auto u = read_task_result(task_result_text(t));
  ASSERT_TRUE(u.ok()) << u.status().message();
  EXPECT_EQ(task_result_text(*u), task_result_text(t));
  EXPECT_FALSE(read_task_result("{}").ok());
}

// A rank that cannot build the space rank 0 sent (here: a text that is no space; likewise an
// oracle whose e-graph came out other than rank 0's) answers ERROR: rank 0 names it and why on
// its log, drops it, and hands it no task, so the search still finds what one process does.
TEST(Distributed, ARankThatCannotRunTheSpaceIsDroppedAndNamed) {
  InProcessJob job(2, 30);
  {
    RankRunner runner(*job.ranks, "{\"program\": \"not a program\"}", "", 4, Deadline(),
                      [](int, TaskResult) {});
    std::vector<int> handed = {0, 1, 2, 3};
    auto take = [&handed]() -> std::optional<std::pair<int, bool>> {
      if (handed.empty()) return std::nullopt;
      const int i = handed.front();
      handed.erase(handed.begin());
      return std::make_pair(i, false);
    };
    for (int i = 0; i < 2000 && job.ranks->live() > 0; ++i) {
      const RemoteRunner::Pumped p = runner.pump(take, StopReason::kExhausted,
                                                 std::chrono::milliseconds(1));
      EXPECT_TRUE(p.lost.empty());  // it never was ready: it held nothing
    }
    EXPECT_EQ(handed.size(), 4u);
  }
  EXPECT_EQ(job.ranks->live(), 0);
  EXPECT_NE(job.all_log().find("search: rank 1 cannot run this search space (search space: "),
            std::string::npos)
      << job.all_log();
  // A whole search with a rank whose oracle differs: dropped, same answer.
  const ir::KernelGraph p = load_data("gated_mlp");
  SearchOptions o = gated_mlp_options();
  auto alone = search_lax(p, o);
  ASSERT_TRUE(alone.ok());
  InProcessJob other(2, 30);
  const std::string begin_text = space_text(p, o);
  {
    RankRunner runner(*other.ranks, begin_text, "no such e-graph", 1, Deadline(),
                      [](int, TaskResult) {});
    for (int i = 0; i < 2000 && other.ranks->live() > 0; ++i)
      runner.pump([] { return std::nullopt; }, StopReason::kExhausted,
                  std::chrono::milliseconds(1));
  }
  EXPECT_NE(other.all_log().find("its oracle's e-graph ended saturated"), std::string::npos)
      << other.all_log();
}

}  // namespace
}  // namespace mugraph::search
