#include "search/screen_task.h"

#include <chrono>

#include "expr/abstract.h"
#include "ir/canonical.h"
#include "opt/fuse_threads.h"

namespace mugraph::search {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Screens `g` (fused) against the program; a pass is kept in `tr`. False: the screen was cut
// (the budget or Ctrl-C), neither passed nor failed.
bool screen(const TaskContext& c, ir::KernelGraph g, TaskResult& tr) {
  const SearchOptions& o = c.options;
  verify::VerifyOptions vo;
  vo.mode = verify::Mode::kScreen;
  vo.screen_samples = o.screen_samples;
  vo.threads = 1;  // the search's workers already use every core
  vo.seed = o.seed ^ ir::canonical_hash(g);
  vo.undecided = verify::Undecided::kPowerMapThenFloatCheck;
  vo.float_seed = o.seed;        // one reference float run for all candidates (cached)
  vo.screen_every_entry = true;  // what is written passed a test on every entry
  vo.every_entry_seed = o.seed;  // one reference evaluation for all candidates (cached)
  vo.deadline = c.deadline;      // a screen past the budget stops inside (Verdict::cut)
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
  tr.verdicts.push_back(std::string(verify::verdict_name(v.kind)) + " (screen, seed " +
                        std::to_string(vo.seed) + "): " + v.summary);
  if (c.on_found) c.on_found();
  return true;
}

}  // namespace

ir::KernelGraph in_program_order(ir::KernelGraph g, const std::vector<int>& perm) {
  if (perm.empty()) return g;
  MG_CHECK(perm.size() == g.outputs.size(), "permutation of " << perm.size() << " outputs");
  std::vector<ir::TensorId> outs;
  for (int j : perm) outs.push_back(g.outputs[static_cast<size_t>(j)]);
  g.outputs = outs;
  return g;
}

TaskResult run_screened_task(const TaskContext& c, int task, const StopCheck& stop) {
  const auto te = Clock::now();
  Enumerator::TaskOutput out = c.enumerator.run_task(task, stop);
  TaskResult tr;
  tr.stats = out.stats;
  tr.stats.deepest = out.deepest;
  if (out.deepest_expr)
    tr.stats.deepest_prefix = expr::to_string_abbreviated(out.deepest_expr, {}, 240);
  tr.stats.enumerate_seconds = since(te);
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
