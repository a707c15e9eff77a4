#include "search/screen_task.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
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
  // The sampled screen leaves the float check of a candidate the field cannot decide (sqrt
  // identities) to the every-entry test, which every candidate that passed the screen gets and
  // which runs that float check anyway: once instead of twice, and after the merge, for the
  // distinct candidates only.
  vo.undecided = every_entry ? verify::Undecided::kPowerMapThenFloatCheck
                             : verify::Undecided::kPowerMapThenDefer;
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

// One complete uGraph's screen on sampled entries.
struct Screened {
  enum class Fate { kCut, kPassed, kRejected, kOverMemory } fate = Fate::kCut;
  ir::KernelGraph graph;  // passed: fused, outputs in the program's order
  std::string verdict;    // passed: the verdict's text
  double seconds = 0;     // the screen's time, on whichever thread ran it
};

// Screens `g` (fused) against the program on sampled entries. kCut: the budget or Ctrl-C cut
// it, neither passed nor failed.
Screened screen(const TaskContext& c, ir::KernelGraph g) {
  const verify::VerifyOptions vo = screen_options(c.options, c.deadline, false);
  const verify::Verdict v = verify::check(c.program, g, vo);
  Screened s;
  if (v.cut == "memory budget")  // never checkable here: counted, said, not kept
    s.fate = Screened::Fate::kOverMemory;
  else if (!v.cut.empty())
    s.fate = Screened::Fate::kCut;
  else if (!verify::accepted(v.kind))
    s.fate = Screened::Fate::kRejected;
  else {
    s.fate = Screened::Fate::kPassed;
    s.graph = in_program_order(std::move(g), v.permutation);
    s.verdict = verdict_text(v, vo);
    if (c.on_found) c.on_found();
  }
  return s;
}

// SCREENS SHARED WITH SPARE THREADS. A task's complete uGraphs are screened one after another
// (a screen of a paper-size candidate can take a second, and one task may hold hundreds). A
// pool thread with no task left takes screens of the same list (a piece posted to the pool's
// spare threads, drawing the next unscreened index as the task does); the results are kept
// by index and read in order, so the task's result does not depend on who screened what. A
// cut screen (the budget, Ctrl-C) ends the task unfinished: what came after it in the list is
// dropped, as if never screened.
struct ScreenList {
  const TaskContext& c;
  const std::vector<ir::KernelGraph>& complete;
  const StopCheck& stop;
  std::vector<Screened> out;  // by index; each written by the one thread that drew it
  std::atomic<size_t> next{0};
  std::atomic<bool> cut{false};

  // Screens until the list is drawn or a screen was cut; `between` runs after each screen.
  // A throw also ends the others' draws (the task rethrows it).
  void work(const std::function<void()>& between = {}) {
    try {
      for (size_t i; !cut.load() && (i = next++) < complete.size();) {
        const auto t0 = Clock::now();
        // What is screened is what is handed out: the fused graph.
        if (stop(0) || (out[i] = screen(c, opt::fuse_thread_graphs(complete[i]))).fate ==
                           Screened::Fate::kCut) {
          stop(0);  // a cut screen: let the pool see why (the deadline, Ctrl-C)
          cut = true;
        }
        out[i].seconds = since(t0);
        if (between) between();
      }
    } catch (...) {
      cut = true;
      throw;
    }
  }
};

// Screens every complete uGraph (with the spare threads when some wait); false: cut.
bool screen_all(const TaskContext& c, const std::vector<ir::KernelGraph>& complete,
                const StopCheck& stop, TaskResult& tr) {
  ScreenList list{c, complete, stop, std::vector<Screened>(complete.size())};
  std::vector<std::shared_ptr<SpareThreads::Piece>> pieces;
  pieces.reserve(complete.size());  // a posted piece is always kept (and finished)
  // A piece per thread waiting, while more screens are left to draw than pieces were posted.
  auto share = [&] {
    while (c.spare && !list.cut.load() &&
           pieces.size() + 1 < complete.size() - std::min(list.next.load(), complete.size()) &&
           c.spare->wanted())
      pieces.push_back(c.spare->post(&list, [&list] { list.work(); }));
  };
  // The pieces refer to `list`: each is finished before it goes, whatever threw.
  auto finish = [&] {
    if (!c.spare) return;  // no piece was posted
    c.spare->finish_all([&pieces](size_t i, std::shared_ptr<SpareThreads::Piece>& p) {
      if (i >= pieces.size()) return false;
      p = pieces[i];
      return true;
    });
  };
  try {
    share();
    list.work(share);  // offering the rest again after each screen: a thread may have come free
  } catch (...) {
    list.cut = true;  // (a throw in share())
    try {
      finish();
    } catch (...) {
    }
    throw;
  }
  finish();
  for (const Screened& s : list.out) tr.stats.verify_seconds += s.seconds;  // thread time
  for (Screened& s : list.out) {
    switch (s.fate) {
      case Screened::Fate::kCut:
        return false;  // this one and those after it: not screened (or dropped)
      case Screened::Fate::kOverMemory:
        ++tr.stats.over_memory;
        break;
      case Screened::Fate::kRejected:
        ++tr.stats.rejected;
        break;
      case Screened::Fate::kPassed:
        ++tr.stats.verified;
        tr.graphs.push_back(std::move(s.graph));
        tr.verdicts.push_back(std::move(s.verdict));
        break;
    }
  }
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
  enum class Fate { kNotReached, kPassed, kPassedUncounted, kRejected, kOverMemory };
  const size_t n = candidates.size();
  std::vector<Fate> fate(n, Fate::kNotReached);
  std::vector<double> seconds(static_cast<size_t>(std::max(threads, 1)), 0);
  std::atomic<size_t> next{0};
  const size_t limit = o.confirm_limit > 0 ? static_cast<size_t>(o.confirm_limit) : n;
  std::atomic<size_t> passed{0};  // enough: the workers take no more
  auto work = [&](size_t w) {
    const auto t0 = Clock::now();
    for (size_t i; passed < limit && (i = next++) < n;) {  // best first
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
        c.graph = in_program_order(std::move(c.graph), v.permutation);
        bool counts = true;
        if (o.confirm_counts) {
          try {  // on this worker thread, an exception would end the process
            counts = o.confirm_counts(c.graph);
          } catch (const std::exception&) {
            counts = false;  // kept, not counted: whoever reads the candidate sees the error
          }
        }
        fate[i] = counts ? Fate::kPassed : Fate::kPassedUncounted;
        if (counts) ++passed;
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
  verify::release_every_entry_cache();
  ConfirmStats st;
  for (double s : seconds) st.seconds += s;
  std::vector<Candidate> kept;
  size_t counted = 0;
  for (size_t i = 0; i < n; ++i) {
    // Past the limit's last counted candidate: the rest (passed by threads still running,
    // rejected, or never taken) is not handed out and counted apart, so the same candidates
    // and counts come out whatever the threads.
    if (counted == limit) {
      ++st.beyond_limit;
      continue;
    }
    switch (fate[i]) {
      case Fate::kPassed:
        ++counted;
        [[fallthrough]];
      case Fate::kPassedUncounted:
        ++st.confirmed, kept.push_back(std::move(candidates[i]));
        break;
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
  // Past the budget (or on Ctrl-C) the task stops in its screens and is re-run on resume, like
  // one stopped inside.
  if (!screen_all(c, out.complete, stop, tr)) out.finished = false;
  tr.done = out.finished;
  return tr;
}

}  // namespace mugraph::search
