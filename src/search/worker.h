// The enumerator's worker (Mirage Algorithm 1), internal to src/search: one Worker runs one task
// (a choice of first op) depth-first over uGraph prefixes in canonical order. The common checks
// and the kernel level are in enumerate.cc, the block level (iterator maps, block ops,
// accumulators, completion) in block_search.cc, the pieces of a task (below) in pieces.cc.
#pragma once

#include <algorithm>
#include <array>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <absl/container/flat_hash_map.h>

#include "expr/abstract.h"
#include "search/block_maps.h"
#include "search/enumerate.h"
#include "search/index_labels.h"
#include "search/task_pool.h"
#include "support/hash.h"

namespace mugraph::search {
namespace enumeration {

using ir::OpKind;
using ir::Phase;
using ir::TensorType;

constexpr int kMaxRankInputs = 6;
constexpr int64_t kMaxAttr = std::numeric_limits<int64_t>::max();  // above every rank attribute
constexpr int kCodeAccumulator = 1000;
constexpr int kCodeGraphDefined = 2000;
constexpr uint64_t kPollEvery = 256;

// The rank of Mirage §4.1: input indices in decreasing order (padded with -1), type, attribute.
struct Rank {
  std::array<int, kMaxRankInputs> in;
  int code = 0;
  int64_t attr = 0;
  auto operator<=>(const Rank&) const = default;
};

inline Rank make_rank(const std::vector<int>& inputs, int code, int64_t attr) {
  MG_CHECK(inputs.size() <= kMaxRankInputs, "too many op inputs for a rank");
  Rank r;
  r.in.fill(-1);
  int n = 0;  // insertion, decreasing: a few inputs (std::sort was a hot spot of the search)
  for (int v : inputs) {
    int j = n++;
    for (; j > 0 && r.in[static_cast<size_t>(j - 1)] < v; --j)
      r.in[static_cast<size_t>(j)] = r.in[static_cast<size_t>(j - 1)];
    r.in[static_cast<size_t>(j)] = v;
  }
  r.code = code;
  r.attr = attr;
  return r;
}

inline bool commutative(OpKind op) { return op == OpKind::kAdd || op == OpKind::kMul; }

// Ops the abstraction cannot see: their expression equals (one of) their input(s). Their
// attributes come from the program's own instances of them (anchors).
inline bool abstracted(OpKind op) {
  return op == OpKind::kScale || op == OpKind::kNeg || op == OpKind::kSub ||
         op == OpKind::kTranspose;
}

// Calls fn(tuple) for every `arity`-tuple over [0, n) with at least one index >= lo (the rank
// rule), non-decreasing for commutative ops.
template <class Fn>
void for_each_tuple(int n, int arity, int lo, bool comm, std::vector<int>& t, Fn&& fn) {
  const int k = static_cast<int>(t.size());
  // Unary and binary ops (every block op) without the recursion, in the same order.
  if (k == 0 && arity == 1) {
    t.assign(1, 0);
    for (int i = std::max(lo, 0); i < n; ++i) {
      t[0] = i;
      fn(t);
    }
    t.clear();
    return;
  }
  if (k == 0 && arity == 2) {
    t.assign(2, 0);
    for (int i = 0; i < n; ++i)
      for (int j = std::max(comm ? i : 0, i >= lo ? 0 : lo); j < n; ++j) {
        t[0] = i;
        t[1] = j;
        fn(t);
      }
    t.clear();
    return;
  }
  if (k == arity) {
    if (*std::max_element(t.begin(), t.end()) >= lo)
      fn(t);
    return;
  }
  for (int i = (comm && k > 0) ? t.back() : 0; i < n; ++i) {
    t.push_back(i);
    for_each_tuple(n, arity, lo, comm, t, fn);
    t.pop_back();
  }
}

// A cheap necessary condition for infer_type to succeed (it formats an error message on
// failure, too slow for the search's inner loop).
// For two-input ops, `a` and `b` are their shapes (others: unused).
inline bool shapes_may_fit(OpKind op, const ir::Shape& a, const ir::Shape& b) {
  switch (ir::op_info(op).cls) {
  case ir::OpClass::kBinary: {  // ir::broadcast_shapes succeeds, without building the shape
    const int rank = std::max(a.rank, b.rank);
    for (int i = 0; i < rank; ++i) {
      const int ia = a.rank - rank + i, ib = b.rank - rank + i;
      const int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
      if (da != db && da != 1 && db != 1)
        return false;
    }
    return true;
  }
  case ir::OpClass::kMatmul:
    return a.rank >= 2 && b.rank >= 2 && a[a.rank - 1] == b[b.rank - 2];
  default:
    return true;
  }
}
inline bool shapes_may_fit(OpKind op, const std::vector<TensorType>& in) {
  return in.size() < 2 || shapes_may_fit(op, in[0].shape, in[1].shape);
}

struct BlockConfig {
  ir::Dim3 grid;
  int64_t forloop = 1;
};

// A program op the abstraction cannot see, with its inputs' expressions.
struct Anchor {
  OpKind op;
  ir::OpAttrs attrs;
  std::vector<expr::Expr> inputs;
};

// The worker's caches of pure functions of one search (its oracle, pool and options): they
// outlive a task. The oracle and the expression pool are shared by all threads behind locks;
// a cache is used by one worker at a time (CachePool), which keeps the threads off them, and
// serves a later task warm, on whichever thread (the tasks of a search differ in grid, loop and
// first op, and meet the same expressions again).

// The oracle's answer for an expression: whether it keeps it (always, with pruning off) and,
// when Config::bound_steps, a lower bound on the ops between it and a program output
// (expr::Oracle::steps_to_output; 0 otherwise).
struct OracleAnswer {
  bool keep = true;
  int steps = 0;
};

// An op's expression and, once asked, the oracle's answer for it.
struct ExprEntry {
  expr::Expr e = nullptr;
  OracleAnswer answer;  // by value: a pointer into the answers' table missed the caches
  bool asked = false;   // `answer` holds the oracle's answer for `e`
};
struct ExprKey {
  int op = 0;
  int64_t group = 0;
  std::array<expr::Expr, 4> in{};
  std::array<int64_t, 4> k{};
  bool operator==(const ExprKey&) const = default;
};
struct ExprKeyHash {
  size_t operator()(const ExprKey& k) const {
    size_t h = hash_mix(static_cast<size_t>(k.op), static_cast<size_t>(k.group));
    for (size_t i = 0; i < 4; ++i)
      h = hash_mix(hash_mix(h, reinterpret_cast<size_t>(k.in[i])), static_cast<size_t>(k.k[i]));
    return hash_finish(h);
  }
};

// A block tensor's content (type, expression, labels), named by a small id within a cache:
// what output_of and the expression of an op on it depend on.
struct Content {
  TensorType type;
  expr::Expr e = nullptr;
  Labels lab{};
  bool operator==(const Content&) const = default;
};
struct ContentHash {
  size_t operator()(const Content& c) const;
};

// try_block_op's pure part, memoized: whether an op with a rank attribute on inputs of these
// contents fits (output_of, which also reads the frame's grid and loop labels and whether it
// is the last block graph) and, if so, its output's content id and expression entry (with
// the oracle's answer once asked). The enumerator tries ~40 ops per prefix, nearly all of
// which its ancestors tried on the same inputs; a direct-mapped table answers them without
// output_of's type and label inference or a lookup in the expression table, which missed the
// caches. One cache line per slot.
struct alignas(64) OpMemoSlot {
  bool filled = false;
  int op_last = -1;  // op * 2 + last
  int attr = 0;      // the rank attribute (a dim or an anchor: small)
  uint32_t a = 0, b = 0;
  std::array<int, 4> labels{};  // grid_label[0..2], loop_label
  uint32_t result = 0;          // content id of the output; 0: does not fit (a shape prune)
  ExprEntry entry;
};
static_assert(sizeof(OpMemoSlot) == 64);

struct WorkerCache {
  static constexpr size_t kOpMemoSlots = size_t{1} << 15;  // 2 MiB
  explicit WorkerCache(size_t memo_slots) : memo(memo_slots) {}
  // Open addressing (absl's Swiss tables): a lookup that misses the memo reads one group of
  // control bytes and one slot, where a node-based table chased a bucket and its node. An
  // entry moves when its table grows: callers copy what they read before the next insert.
  absl::flat_hash_map<expr::Expr, OracleAnswer> answers;
  absl::flat_hash_map<ExprKey, ExprEntry, ExprKeyHash> exprs;
  absl::flat_hash_map<Content, uint32_t, ContentHash> content_ids;
  std::vector<Content> contents{Content{}};  // by id; id 0: none
  std::vector<OpMemoSlot> memo;  // a power of two of slots
  size_t entries() const { return answers.size() + exprs.size() + content_ids.size(); }
};

// The caches of one search's workers: a task takes one (a fresh one if none is free) and
// gives it back. A cache past kMaxEntries is dropped when given back (its memory, ~100 bytes
// an entry, stays bounded).
class CachePool {
 public:
  static constexpr size_t kMaxEntries = size_t{1} << 22;
  std::unique_ptr<WorkerCache> take();
  void give(std::unique_ptr<WorkerCache> cache);
  // Tests: the memo's slots in the caches made from now on; the free caches are dropped.
  void set_memo_slots(size_t slots);

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<WorkerCache>> free_;
  size_t memo_slots_ = WorkerCache::kOpMemoSlots;
};

}  // namespace enumeration

struct Enumerator::Config {
  ir::KernelGraph program;
  SearchOptions opt;
  expr::ExprPool& pool;
  expr::Oracle& oracle;
  std::vector<ir::OpKind> kernel_ops, block_ops;
  std::vector<enumeration::Anchor> anchors;
  std::vector<enumeration::BlockConfig> blocks;
  std::vector<expr::Expr> input_exprs;
  std::vector<Labels> input_labels;           // per program input, canonical index classes
  std::vector<bool> reduced;                  // per index class: does the program sum over it?
  std::vector<bool> reduced_by_every_output;  // ... and does every output depend on that sum?
  std::vector<SumShape> rigid_sums;           // ProgramLabels::rigid_sums
  std::vector<bool> freely_summed;            // ProgramLabels::freely_summed
  int max_arity_kernel = 1, max_arity_block = 1;
  // Whether the last block graph's prefixes are pruned by the ops they still need
  // (expr::Oracle::steps_to_output): pruning is on, the oracle's e-graph saturated, and every
  // block op adds one step (expr::adds_one_step).
  bool bound_steps = false;
  // The tasks: at the kernel graph's root, each choice of a first op; when that op is
  // graph-defined and the last (SearchOptions::split_block_tasks), one task per choice of its
  // block graph's first op (a task's block graphs are those starting with its choice), so
  // that one large block search is shared by the threads. Per task: the root choice and the
  // block part (-1: the whole root choice).
  struct Task {
    int root = 0, part = -1;
  };
  std::vector<Task> tasks;
  mutable enumeration::CachePool caches;
  // Tests: every hit of the block-op memo is recomputed and compared (Enumerator::check_memo).
  bool check_memo = false;

  Config(const ir::KernelGraph& p, const SearchOptions& o, expr::ExprPool& pl, expr::Oracle& orc)
      : program(p), opt(o), pool(pl), oracle(orc) {}
};

namespace enumeration {

// One tensor of a prefix (kernel or block level).
struct Tensor {
  TensorType type;
  expr::Expr e = nullptr;
  int uses = 0;
  Phase phase = Phase::kInLoop;
  Labels lab{};
  bool loop_dep = false;  // block level: depends on an input tiled by the for-loop
  int steps = 0;          // block level: OracleAnswer::steps of `e`
  // Kernel level: per dim, 0, or the number of partial sums concatenated along it (an earlier
  // block graph whose grid split a summed index wrote one part per block; `lab` keeps the
  // index of one part). Block level: the tile is one part of such a dim, read by the loop.
  std::array<int, ir::kMaxRank> parts{};
  uint32_t id = 0;  // block level: Worker::content_id of (type, e, lab) once placed
  bool partial() const {
    return std::any_of(parts.begin(), parts.end(), [](int p) { return p > 0; });
  }
};

struct KernelOpRec {
  bool gd = false;
  OpKind op = OpKind::kAdd;
  ir::OpAttrs attrs;
  std::vector<int> in, out;
  std::shared_ptr<const ir::BlockGraph> block;
  Rank rank;
};

struct BlockOpRec {
  bool acc = false;
  OpKind op = OpKind::kAdd;
  ir::OpAttrs attrs;
  int fmap = ir::kReplica;  // accumulator
  std::vector<int> in;
  int out = -1;
  Rank rank;
};

struct BlockFrame {
  BlockConfig cfg;
  std::vector<int> kin;  // kernel tensors read
  std::vector<std::vector<IterChoice>> choices;
  std::vector<int> chosen;  // per iterator; -1 = not read yet
  // Per iterator, bit g (grid dim g < 3; bit 3: the loop): some choice partitions along it.
  std::vector<unsigned> can_map;
  std::vector<std::vector<uint32_t>> choice_ids;  // per iterator and choice: its content id
  std::vector<Tensor> t;  // iterators first
  std::vector<BlockOpRec> ops;
  int64_t smem = 0;
  std::array<int, 3> grid_label{kAnyLabel, kAnyLabel, kAnyLabel};  // index each grid dim splits
  int loop_label = kAnyLabel;                                      // index the loop tiles
  bool last = false;   // the last kernel op: its outputs are the program's
  bool split = false;  // the root choice's block search, split into tasks by its first op
  int max_outputs = 1;
};

// PIECES OF A TASK. In a task whose block search is split (Config::Task::part >= 0), the ops
// after the first are choices at levels 1, 2, ... (the ops placed before them), numbered in
// order within their parent choice before the memory, redundancy, oracle and steps rules
// (after the rank and shape checks, which depend on the prefix alone). While a thread is spare
// (SpareThreads::wanted), a worker at a choice hands the rest of a range to a piece: the
// choices after its current one at the shallowest level where some may remain. A piece
// (PieceRange: the choices on the path to its level, then a range [lo, hi) there) walks that
// path and runs only its range, and may hand on its own rest the same way; the worker that
// split it off skips it. A piece keeps only what its range makes (block graphs, the kernel
// graphs completed from them, counts, depth); the rest is its parent's. Every block graph and
// kernel graph carries an order key (per level: 2c + 1 inside choice c, 2c after c choices),
// so that a task merges its pieces' graphs into the order one worker would have made them in
// (Enumerator::run_task).
struct PieceRange {
  static constexpr int kNoEnd = std::numeric_limits<int>::max();
  std::vector<int> path;  // the choices at levels 1 .. level - 1
  int lo = 0, hi = kNoEnd;
  int level() const { return static_cast<int>(path.size()) + 1; }
  bool whole() const { return path.empty() && lo == 0 && hi == kNoEnd; }
};
using OrderKey = std::vector<int>;

class Worker {
public:
  // task -1: counts the tasks (root_parts()) instead of running one. `range`: the piece of
  // the task to run (all of it by default); `split_off(piece)`, when given, hands a piece to
  // another worker while `spare` wants one.
  Worker(const Enumerator::Config& c, int task, const std::function<bool(uint64_t)>* should_stop,
         WorkerCache& cache, PieceRange range = {},
         const std::function<void(PieceRange)>* split_off = nullptr,
         const SpareThreads* spare = nullptr)
      : answers_(cache.answers), expr_cache_(cache.exprs), content_ids_(cache.content_ids),
        contents_(cache.contents), op_memo_(cache.memo), c_(c),
        task_(task < 0 ? Enumerator::Config::Task{-1, -1} : c.tasks[static_cast<size_t>(task)]),
        counting_(task < 0), should_stop_(should_stop), range_(std::move(range)),
        piece_(!range_.whole()), level_(range_.level()),
        split_off_(spare ? split_off : nullptr), spare_(spare) {
    const size_t levels = static_cast<size_t>(std::max(c.opt.max_block_ops, level_)) + 2;
    counter_.assign(levels, 0);
    cur_.assign(levels, 0);
    hi_.assign(levels, PieceRange::kNoEnd);
    key_.assign(levels, 0);
    for (size_t i = 0; i < c_.program.inputs.size(); ++i)
      kt_.push_back({c_.program.tensor(c_.program.inputs[i]).type, c_.input_exprs[i], 0,
                     Phase::kInLoop, c_.input_labels[i], false});
  }

  // Runs the task, then reports the states not reported yet, so that the stop policy counts
  // them against its state limit. The enumeration is finished whatever the policy answers; a
  // stop this report triggers applies to what comes next (the task's screen may then stop
  // it: it runs again, nothing is lost).
  void run() {
    kernel_step();
    if (!stopped_ && since_poll_ > 0 && should_stop_)
      (*should_stop_)(since_poll_);
    since_poll_ = 0;
    if (piece_)
      st_ = counted_;
  }
  // Counting: per root choice, its block parts (0: not split).
  const std::vector<int>& root_parts() const { return root_parts_; }
  bool stopped() const { return stopped_; }
  SearchStats& stats() { return st_; }
  std::vector<ir::KernelGraph>& complete() { return complete_; }
  // Per complete graph, its order key (PIECES OF A TASK).
  const std::vector<OrderKey>& complete_keys() const { return complete_keys_; }
  // The deepest prefix the oracle kept (ops: kernel ops before it plus the block ops of the
  // graph it is in) and the expression of its last op; 0 / null before any.
  int deepest() const { return deepest_; }
  expr::Expr deepest_expr() const { return deepest_expr_; }

private:
  // ---------------------------------------------------------------------------------------
  // Common checks.

  bool poll();
  void check_stop();

  // At the root, each choice of a first op is a task (Config::tasks): true if this choice is
  // not ours. With arguments: a graph-defined op on kernel tensors `in` with block
  // configuration `config`, whose block search is split into parts (counted when counting).
  bool not_my_root_choice();
  bool not_my_root_choice(const std::vector<int>& in, int config, const Rank& rank);
  // Within a split block search: true if this choice of its first op is not our part.
  bool not_my_block_part();
  // Whether a graph-defined op placed now has its block search split into tasks: at the root,
  // when it is the last kernel op (otherwise each part would redo the block searches of the
  // ops after it, which one task shares between the block graphs it finds: memo_).
  bool splits_root_block() const {
    return kops_.empty() && last_kernel_op() && c_.opt.split_block_tasks;
  }

  OracleAnswer ask_oracle(expr::Expr e);  // by value: the answers' table may move it
  bool oracle_keeps(expr::Expr e);  // ask_oracle(e).keep, counting a prune
  const OracleAnswer& ask_oracle(ExprEntry& entry);

  // expr::op_expression through the cache. The expression depends on the op, the attribute
  // that enters it (sum group), the input expressions and the reduction sizes.
  expr::Expr expression(OpKind op, const ir::OpAttrs& attrs, const std::vector<expr::Expr>& es,
                        const std::vector<TensorType>& types);
  ExprEntry& expression_entry(OpKind op, const ir::OpAttrs& attrs,
                              const std::vector<expr::Expr>& es,
                              const std::vector<TensorType>& types);

  uint32_t content_id(const TensorType& type, expr::Expr e, const Labels& lab);

  // The search's caches (WorkerCache), this task's while it runs.
  absl::flat_hash_map<expr::Expr, OracleAnswer>& answers_;
  absl::flat_hash_map<ExprKey, ExprEntry, ExprKeyHash>& expr_cache_;
  absl::flat_hash_map<Content, uint32_t, ContentHash>& content_ids_;
  std::vector<Content>& contents_;
  std::vector<OpMemoSlot>& op_memo_;
  OpMemoSlot wide_slot_;  // block_op_result of an op of more than two inputs (not memoized)

  // Type and labels of an op's output, or nullopt (counted as a shape prune) when the inputs
  // do not fit the operator (ir::infer_type) or their labels do not (labels_for).
  std::optional<std::pair<TensorType, Labels>> output_of(OpKind op, const ir::OpAttrs& attrs,
                                                         const std::vector<TensorType>& types,
                                                         const std::vector<Labels>& labs);

  // Labels of an op's output, or nullopt (counted as a shape prune) when it pairs different
  // indices or sums over one the program never sums over.
  // Whether a sum over `red` whose summand ranges over `summand` (class bits) ranges like one
  // of the program's rigid sums over `red` (ProgramLabels::rigid_sums).
  bool ranges_like_a_rigid_sum(int red, uint64_t summand) const;
  std::optional<Labels> labels_for(OpKind op, const ir::OpAttrs& attrs,
                                   const std::vector<TensorType>& types,
                                   const std::vector<Labels>& labs, const TensorType& out);

  static bool redundant(const std::vector<Tensor>& ts, const TensorType& type, expr::Expr e,
                        Phase phase);

  // Whether the current graph level already placed the program op `anchor` (once each).
  bool anchor_used(int64_t anchor) const;

  // Attribute choices for `op` on inputs of these types/expressions: (attrs, rank attr).
  void attr_choices(OpKind op, const std::vector<TensorType>& types,
                    const std::vector<expr::Expr>& es,
                    std::vector<std::pair<ir::OpAttrs, int64_t>>& out);

  // An op's operands (types, expressions, labels) and its attribute choices, in buffers kept
  // per search depth (one op per depth is being tried at a time): the enumerator's inner
  // loop then allocates nothing.
  struct OpScratch {
    std::vector<TensorType> types;
    std::vector<expr::Expr> es;
    std::vector<Labels> labs;
    std::vector<std::pair<ir::OpAttrs, int64_t>> choices;
  };
  // Per kernel-op depth and per block-op depth (a block search runs to its end before the
  // kernel level goes deeper); deques: growing one keeps outer depths' references valid.
  std::deque<OpScratch> kernel_scratch_, block_scratch_;
  static OpScratch& scratch(std::deque<OpScratch>& pool, size_t depth, const std::vector<int>& in,
                            const std::vector<Tensor>& ts);

  // ---------------------------------------------------------------------------------------
  // Kernel level (Algorithm 1 lines 9-19).

  void kernel_step();

  bool kernel_can_finish() const;

  bool last_kernel_op() const {
    return static_cast<int>(kops_.size()) + 1 == c_.opt.max_kernel_ops;
  }

  // Whether the last kernel op, reading `in`, can leave a complete graph: it must read every
  // program input not read yet, and what it leaves open besides its own output(s) must be
  // program outputs already (at most all but one of them).
  bool last_op_may_complete(const std::vector<int>& in) const;

  int unread_inputs() const;

  void try_kernel_op(OpKind op, const std::vector<int>& in);

  void push_kernel(KernelOpRec rec, const std::vector<Tensor>& outs);
  void pop_kernel();

  void graph_defined_ops(int n, int lo);

  // ---------------------------------------------------------------------------------------
  // Kernel completion.

  void try_complete_kernel();

  ir::KernelGraph build_kernel_graph(const std::vector<int>& outputs) const;

  // ---------------------------------------------------------------------------------------
  // Block level (Algorithm 1 lines 21-28).

  // A finished block graph: what the kernel level needs to add it as a graph-defined op.
  struct DoneBlock {
    std::shared_ptr<const ir::BlockGraph> block;
    std::vector<Tensor> outs;  // kernel-level types and expressions of its outputs
    OrderKey key;              // its order key (PIECES OF A TASK)
  };

  // The block graphs over kernel tensors `kin` depend only on their types and expressions and
  // on the configuration, not on the rest of the kernel prefix: they are searched once per
  // task and replayed after every kernel prefix that offers the same inputs.
  void start_block(const std::vector<int>& kin, int config, const Rank& rank);

  void search_blocks(const std::vector<int>& kin, const BlockConfig& bc, bool last, bool split,
                     std::vector<DoneBlock>& done);

  // In the last block graph, a grid dim that splits an index every program output sums over
  // leaves each block part of that sum, and no later kernel adds the parts up (split-KV needs
  // a second kernel): such input maps are never chosen there.
  bool splits_an_index_every_output_sums(const Labels& lab, const IterChoice& ch) const;

  // Partial sums are added up by the loop, one part per iteration: the fmap runs along their
  // (only) dim of parts with a range equal to the number of parts, and the grid splits the
  // other dims only.
  static bool reads_one_part_per_iteration(const Tensor& t, const IterChoice& ch, int64_t range);

  int block_compute_ops() const { return static_cast<int>(frame_->ops.size()); }

  void block_step();

  // An input of partial sums is read one part per iteration (search_blocks) and added up by
  // accumulating the tile itself.
  void try_partial_sum_accumulator(int i);

  // Calls fn once per map choice of each iterator in `in` not read yet (fixing it for the
  // call), or once if all are fixed.
  template <class Fn> void with_iterators(const std::vector<int>& in, size_t k, Fn&& fn);

  bool block_can_finish() const;

  // The grid dims (bits 0-2) and the loop (bit 3) along which an iterator choice partitions.
  static unsigned map_bits(const IterChoice& ch);

  // Whether every grid dim of size > 1 can still be partitioned by an input, and the loop
  // still tile one (try_complete_block requires both): by an iterator already read, or by a
  // choice of one not read yet.
  bool maps_still_possible() const;

  void try_block_op(OpKind op, const std::vector<int>& in);

  // The memoized pure part of try_block_op (OpMemoSlot): the slot, or null (a shape prune,
  // counted) when the op does not fit. `sc`: the operands' scratch, filled on a miss if null.
  OpMemoSlot* block_op_result(OpKind op, const ir::OpAttrs& attrs, int64_t attr_code,
                                    const std::vector<int>& in, OpScratch*& sc);
  // Config::check_memo: recomputes a hit's answer and fails (MG_CHECK) if it differs.
  void check_memo_hit(OpKind op, const ir::OpAttrs& attrs, const std::vector<int>& in,
                      const OpMemoSlot& s);

  void try_accumulators(int i);

  // Shared tail of try_block_op / try_accumulators: memory, redundancy, oracle (through the
  // expression's cache entry when the caller has it), then the op record (built only now:
  // most tries stop before) and the recursion.
  template <class MakeRec>
  void add_block_tensor(const Tensor& t, bool check_redundant, ExprEntry* entry,
                        MakeRec&& make_rec);
  template <class MakeRec>
  void place_block_tensor(const Tensor& t, bool check_redundant, ExprEntry* entry,
                          MakeRec& make_rec);
  // PIECES OF A TASK: whether choice c at level m is this worker's; hands a piece to a
  // spare thread (the rest of the shallowest level with choices left, after the current one).
  bool my_choice(size_t m, int c) const;
  void split_rest(size_t m, int c);

  // What runs while one lives counts in a piece's stats (PIECES OF A TASK): the subtree of
  // one of its choices, the replay of its block graphs. No-op outside a piece (`on` false).
  // The counters a worker keeps (a snapshot of them: no strings, nothing to allocate).
  struct Counts {
    uint64_t kernel_states = 0, block_states = 0, completed = 0;
    PruneCounts pruned;
  };
  struct Window {
    Worker& w;
    const bool on;
    Counts before;
    Window(Worker& worker, bool on_) : w(worker), on(on_) {
      if (on) {
        before = {w.st_.kernel_states, w.st_.block_states, w.st_.completed, w.st_.pruned};
        ++w.window_;
      }
    }
    ~Window() {
      if (on) {
        --w.window_;
        w.count_since(before);
      }
    }
  };
  void count_since(const Counts& before);
  bool outside_window() const { return piece_ && window_ == 0; }

  // ---------------------------------------------------------------------------------------
  // Block completion (Algorithm 1 lines 22-24).

  void try_complete_block();

  // Whether grid dim g splits an index that the program sums over and that block output
  // `lab` no longer ranges over (the block summed over its part), in a block graph a later
  // kernel can follow: the blocks' outputs are partial sums, to be added up by that kernel.
  bool writes_partial_sums(const Labels& lab, int g) const;

  // Partial sums are concatenated along one canonical dim (any would do for the kernel that
  // adds them up): the last dim no other grid dim of `m` writes along.
  static int partial_sums_dim(const ir::DimMap& m, int g, int rank);

  void finish_block(const std::vector<int>& outs, const std::vector<ir::DimMap>& omaps);

  std::shared_ptr<const ir::BlockGraph> build_block_graph(const std::vector<int>& outs,
                                                          const std::vector<ir::DimMap>& omaps);

  const Enumerator::Config& c_;
  const Enumerator::Config::Task task_;
  const bool counting_;
  std::vector<int> root_parts_;
  int part_counter_ = 0;
  const std::function<bool(uint64_t)>* should_stop_;
  SearchStats st_;
  int deepest_ = 0;
  expr::Expr deepest_expr_ = nullptr;
  void note_depth(int ops, expr::Expr e) {
    if (ops > deepest_ && !outside_window()) deepest_ = ops, deepest_expr_ = e;
  }
  std::vector<ir::KernelGraph> complete_;
  std::vector<OrderKey> complete_keys_;
  // PIECES OF A TASK. Per level m (1 = the second op): choices met within the current parent
  // choice, the current one, the end of this worker's range, the order key's entry.
  const PieceRange range_;
  const bool piece_;  // split off: counts only inside its windows
  const int level_;
  const std::function<void(PieceRange)>* split_off_;
  const SpareThreads* spare_;
  std::vector<int> counter_, cur_, hi_, key_;
  OrderKey replay_key_;  // order key of a kernel graph completed now
  int window_ = 0;
  SearchStats counted_;     // a piece's counts (Window)
  std::vector<Tensor> kt_;
  std::vector<KernelOpRec> kops_;
  int gd_count_ = 0;
  BlockFrame* frame_ = nullptr;
  std::vector<DoneBlock>* done_ = nullptr;
  std::map<std::pair<std::vector<std::pair<expr::Expr, std::string>>, int>, std::vector<DoneBlock>>
      memo_;
  int root_counter_ = 0;
  bool stopped_ = false;
  uint64_t since_poll_ = 0;
};

}  // namespace enumeration
}  // namespace mugraph::search
