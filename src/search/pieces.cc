// PIECES OF A TASK (worker.h): a worker's count window and the hand-off of the rest of its
// choices to a piece, and Enumerator::run_task, which runs a task with the pieces it split off
// and merges them in the order one worker would have made them.
#include <algorithm>
#include <chrono>
#include <deque>
#include <exception>
#include <mutex>

#include "search/enumerate.h"
#include "search/worker.h"

namespace mugraph::search {
namespace enumeration {

void Worker::count_since(const Counts& before) {
  counted_.kernel_states += st_.kernel_states - before.kernel_states;
  counted_.block_states += st_.block_states - before.block_states;
  for (size_t r = 0; r < kPruneRuleCount; ++r)
    counted_.pruned.n[r] += st_.pruned.n[r] - before.pruned.n[r];
  counted_.completed += st_.completed - before.completed;
}

bool Worker::my_choice(size_t m, int c) const {
  const int level = static_cast<int>(m);
  if (level < level_)
    return c == range_.path[m - 1];
  if (level == level_)
    return c >= range_.lo && c < hi_[m];
  return c < hi_[m];
}

void Worker::split_rest(size_t m, int c) {
  auto hand = [&](size_t j, int lo) {
    PieceRange p;
    for (size_t l = 1; l < j; ++l)
      p.path.push_back(static_cast<int>(l) < level_ ? range_.path[l - 1] : cur_[l]);
    p.lo = lo;
    p.hi = hi_[j];
    hi_[j] = lo;
    (*split_off_)(std::move(p));
  };
  for (size_t j = static_cast<size_t>(level_); j < m; ++j)
    if (cur_[j] + 1 < hi_[j])
      return hand(j, cur_[j] + 1);
  if (c + 1 < hi_[m])
    hand(m, c + 1);
}

}  // namespace enumeration

namespace {

using enumeration::OrderKey;
using enumeration::PieceRange;
using enumeration::Worker;

// What one piece of a task made (worker.h, PIECES OF A TASK).
struct PieceOutput {
  PieceRange range;
  std::vector<ir::KernelGraph> complete;
  std::vector<enumeration::OrderKey> keys;  // per complete graph, its order key
  SearchStats stats;
  bool finished = false;
  int deepest = 0;
  expr::Expr deepest_expr = nullptr;
  double seconds = 0;
};

// The pieces one task split off: posted to the spare threads, merged by the task.
struct Pieces {
  const Enumerator::Config& c;
  int task;
  const std::function<bool(uint64_t)>& should_stop;
  SpareThreads* spare;
  struct Part {
    PieceOutput out;  // written by the thread that runs it
    std::shared_ptr<SpareThreads::Piece> piece;
  };
  std::mutex mu;
  std::deque<Part> parts;  // guarded by mu (a deque: a part stays where it is)
};

PieceOutput run_piece(Pieces& ps, PieceRange range) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::function<void(PieceRange)> split_off = [&ps](PieceRange piece) {
    std::lock_guard<std::mutex> lock(ps.mu);
    Pieces::Part& part = ps.parts.emplace_back();
    part.out.range = std::move(piece);
    // If post throws, the part stays without a piece: never run, unfinished (the task runs
    // again on resume).
    part.piece = ps.spare->post(&ps, [&ps, &part] { part.out = run_piece(ps, part.out.range); });
  };
  auto cache = ps.c.caches.take();
  Worker w(ps.c, ps.task, &ps.should_stop, *cache, range, &split_off, ps.spare);
  w.run();
  ps.c.caches.give(std::move(cache));
  PieceOutput out;
  out.range = range;
  out.complete = std::move(w.complete());
  out.keys = w.complete_keys();
  out.stats = w.stats();
  out.finished = !w.stopped();
  out.deepest = w.deepest();
  out.deepest_expr = w.deepest_expr();
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace

Enumerator::TaskOutput Enumerator::run_task(int task,
                                            const std::function<bool(uint64_t)>& should_stop,
                                            SpareThreads* spare) const {
  Pieces ps{*cfg_, task, should_stop, spare, {}, {}};
  // The pieces split off, done (they may split off more while they run), whatever threw:
  // they refer to `ps`.
  auto finish_pieces = [&ps, spare] {
    if (!spare)
      return;  // no piece was split off
    spare->finish_all([&ps](size_t i, std::shared_ptr<SpareThreads::Piece>& p) {
      std::lock_guard<std::mutex> lock(ps.mu);
      if (i >= ps.parts.size())
        return false;
      p = ps.parts[i].piece;
      return true;
    });
  };
  PieceOutput own;
  try {
    own = run_piece(ps, PieceRange{});
  } catch (...) {
    try {
      finish_pieces();
    } catch (...) {
    }
    throw;
  }
  finish_pieces();
  TaskOutput out;
  out.stats = own.stats;
  out.finished = own.finished;
  out.deepest = own.deepest;
  out.deepest_expr = own.deepest_expr;
  out.seconds = own.seconds;
  out.pieces = static_cast<int>(ps.parts.size());
  if (ps.parts.empty()) {
    out.complete = std::move(own.complete);
    return out;
  }
  // Merged in the order one worker would have made them: by order key (two workers never make
  // the same key: a piece makes only keys of its range, which its parent skipped).
  std::vector<PieceOutput*> parts;
  for (Pieces::Part& p : ps.parts)
    parts.push_back(&p.out);
  auto start = [](const PieceRange& r) {
    OrderKey k = r.path;
    k.push_back(r.lo);
    return k;
  };
  std::sort(parts.begin(), parts.end(), [&](const PieceOutput* a, const PieceOutput* b) {
    return start(a->range) < start(b->range);
  });
  std::vector<std::pair<const OrderKey*, ir::KernelGraph*>> all;
  for (size_t i = 0; i < own.complete.size(); ++i)
    all.push_back({&own.keys[i], &own.complete[i]});
  for (PieceOutput* p : parts) {
    out.stats.add(p->stats);
    out.finished = out.finished && p->finished;
    if (p->deepest > out.deepest)
      out.deepest = p->deepest, out.deepest_expr = p->deepest_expr;
    out.seconds += p->seconds;
    for (size_t i = 0; i < p->complete.size(); ++i)
      all.push_back({&p->keys[i], &p->complete[i]});
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const auto& a, const auto& b) { return *a.first < *b.first; });
  for (auto& [key, g] : all)
    out.complete.push_back(std::move(*g));
  return out;
}

}  // namespace mugraph::search
