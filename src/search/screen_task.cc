#include "search/screen_task.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "expr/abstract.h"
#include "ir/canonical.h"
#include "opt/fuse_threads.h"

namespace mugraph::search {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The screen's options: every candidate of a search gets the same draw (primes, inputs, sampled
// entries), so the program's sampled evaluation is computed once (verify caches it); a wrong
// candidate that this draw misses is caught by the every-entry test after the merge, which
// repeats the sampled test first and then tests every entry.
verify::VerifyOptions screen_options(const SearchOptions& o, const Deadline& deadline,
                                     bool every_entry) {
  verify::VerifyOptions vo;
  vo.mode = verify::Mode::kScreen;
  vo.screen_samples = o.screen_samples;
  vo.threads = 1;  // the search's workers already use every core
  vo.seed = o.seed;
  vo.undecided = verify::Undecided::kPowerMapThenFloatCheck;
  vo.float_seed = o.seed;               // one reference float run for all candidates (cached)
  vo.screen_every_entry = every_entry;  // confirm_every_entry
  vo.every_entry_seed = o.seed;         // one reference evaluation for all candidates (cached)
  vo.deadline = deadline;               // a screen past the budget stops inside (Verdict::cut)
  return vo;
}

std::string verdict_text(const verify::Verdict& v, const verify::VerifyOptions& vo) {
  return std::string(verify::verdict_name(v.kind)) + " (screen, seed " + std::to_string(vo.seed) +
         "): " + v.summary;
}

// Screens `g` (fused) against the program on sampled entries; a pass is kept in `tr`. False:
// the screen was cut (the budget or Ctrl-C), neither passed nor failed.
bool screen(const TaskContext& c, ir::KernelGraph g, TaskResult& tr) {
  const verify::VerifyOptions vo = screen_options(c.options, c.deadline, false);
  const verify::Verdict v = verify::check(c.program, g, vo);
  if (v.cut == "memory budget") {  // never checkable here: counted, said, not kept
    ++tr.stats.over_memory;
    return true;
  }
  if (!v.cut.empty()) return false;
  if (!verify::accepted(v.kind)) {
    ++tr.stats.rejected;
    return true;
  }
  ++tr.stats.verified;
  tr.graphs.push_back(in_program_order(std::move(g), v.permutation));
  tr.verdicts.push_back(verdict_text(v, vo));
  if (c.on_found) c.on_found();
  return true;
}

}  // namespace

verify::Verdict screen_sampled(const ir::KernelGraph& program, const SearchOptions& o,
                               const Deadline& deadline, const ir::KernelGraph& g,
                               std::string& text) {
  const verify::VerifyOptions vo = screen_options(o, deadline, false);
  verify::Verdict v = verify::check(program, g, vo);
  text = verdict_text(v, vo);
  return v;
}

ConfirmStats confirm_every_entry(const ir::KernelGraph& program, const SearchOptions& o,
                                 const Deadline& deadline, int threads,
                                 std::vector<Candidate>& candidates) {
  enum class Fate { kNotReached, kPassed, kRejected, kOverMemory };
  const size_t n = candidates.size();
  std::vector<Fate> fate(n, Fate::kNotReached);
  std::vector<double> seconds(static_cast<size_t>(std::max(threads, 1)), 0);
  std::atomic<size_t> next{0};
  auto work = [&](size_t w) {
    const auto t0 = Clock::now();
    for (size_t i; (i = next++) < n;) {  // best first
      if (deadline.passed()) break;
      Candidate& c = candidates[i];
      const verify::VerifyOptions vo = screen_options(o, deadline, true);
      const verify::Verdict v = verify::check(program, c.graph, vo);
      if (v.cut == "memory budget") {
        fate[i] = Fate::kOverMemory;
      } else if (!v.cut.empty()) {
        break;  // the deadline (or Ctrl-C): the rest is not reached
      } else if (!verify::accepted(v.kind)) {
        fate[i] = Fate::kRejected;
      } else {
        fate[i] = Fate::kPassed;
        c.graph = in_program_order(std::move(c.graph), v.permutation);
        c.verdict = v.kind;
        c.verdict_text = verdict_text(v, vo);
      }
    }
    seconds[w] = since(t0);
  };
  std::vector<std::thread> pool;
  for (size_t w = 1; w < seconds.size() && w < n; ++w) pool.emplace_back(work, w);
  work(0);
  for (std::thread& t : pool) t.join();
  ConfirmStats st;
  for (double s : seconds) st.seconds += s;
  std::vector<Candidate> kept;
  for (size_t i = 0; i < n; ++i) {
    switch (fate[i]) {
      case Fate::kPassed: ++st.confirmed, kept.push_back(std::move(candidates[i])); break;
      case Fate::kRejected: ++st.rejected; break;
      case Fate::kOverMemory: ++st.over_memory; break;
      case Fate::kNotReached: ++st.unconfirmed; break;
    }
  }
  candidates = std::move(kept);
  return st;
}

ir::KernelGraph in_program_order(ir::KernelGraph g, const std::vector<int>& perm) {
  if (perm.empty()) return g;
  MG_CHECK(perm.size() == g.outputs.size(), "permutation of " << perm.size() << " outputs");
  std::vector<ir::TensorId> outs;
  for (int j : perm) outs.push_back(g.outputs[static_cast<size_t>(j)]);
  g.outputs = outs;
  return g;
}

TaskResult run_screened_task(const TaskContext& c, int task, const StopCheck& stop) {
  Enumerator::TaskOutput out = c.enumerator.run_task(task, stop, c.spare);
  TaskResult tr;
  tr.stats = out.stats;
  tr.stats.deepest = out.deepest;
  if (out.deepest_expr)
    tr.stats.deepest_prefix = expr::to_string_abbreviated(out.deepest_expr, {}, 240);
  tr.stats.enumerate_seconds = out.seconds;
  const auto tv = Clock::now();
  for (const ir::KernelGraph& complete : out.complete) {
    // A screen of a paper-size candidate can take seconds: past the budget (or on Ctrl-C) the
    // task stops here and is re-run on resume, like one stopped inside. What is screened is
    // what is handed out: the fused graph.
    if (stop(0) || !screen(c, opt::fuse_thread_graphs(complete), tr)) {
      stop(0);  // a cut screen: let the pool see why (the deadline, Ctrl-C)
      out.finished = false;
      break;
    }
  }
  tr.stats.verify_seconds = since(tv);
  tr.done = out.finished;
  return tr;
}

}  // namespace mugraph::search
