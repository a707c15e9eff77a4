#include "search/enumerate.h"

#include <algorithm>
#include <array>
#include <deque>
#include <limits>
#include <optional>
#include <map>
#include <unordered_map>
#include <set>
#include <sstream>

#include "expr/abstract.h"
#include "ir/builder.h"
#include "search/block_maps.h"
#include "search/index_labels.h"
#include "support/hash.h"

namespace mugraph::search {
namespace {

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

Rank make_rank(const std::vector<int>& inputs, int code, int64_t attr) {
  MG_CHECK(inputs.size() <= kMaxRankInputs, "too many op inputs for a rank");
  Rank r;
  r.in.fill(-1);
  std::copy(inputs.begin(), inputs.end(), r.in.begin());
  std::sort(r.in.begin(), r.in.end(), std::greater<int>());
  r.code = code;
  r.attr = attr;
  return r;
}

bool commutative(OpKind op) { return op == OpKind::kAdd || op == OpKind::kMul; }

// Ops the abstraction cannot see: their expression equals (one of) their input(s).
bool abstracted(OpKind op) {
  return op == OpKind::kScale || op == OpKind::kNeg || op == OpKind::kSub;
}

// Calls fn(tuple) for every `arity`-tuple over [0, n) with at least one index >= lo (the rank
// rule), non-decreasing for commutative ops.
template <class Fn>
void for_each_tuple(int n, int arity, int lo, bool comm, std::vector<int>& t, Fn&& fn) {
  const int k = static_cast<int>(t.size());
  if (k == arity) {
    if (*std::max_element(t.begin(), t.end()) >= lo) fn(t);
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
bool shapes_may_fit(OpKind op, const std::vector<TensorType>& in) {
  switch (ir::op_info(op).cls) {
    case ir::OpClass::kBinary:
      return ir::broadcast_shapes(in[0].shape, in[1].shape).has_value();
    case ir::OpClass::kMatmul: {
      const ir::Shape &a = in[0].shape, &b = in[1].shape;
      return a.rank >= 2 && b.rank >= 2 && a[a.rank - 1] == b[b.rank - 2];
    }
    default:
      return true;
  }
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

}  // namespace

std::vector<OpKind> default_ops(const ir::KernelGraph& program, bool kernel_level) {
  std::set<OpKind> ops;
  for (const ir::KernelOp& op : program.ops)
    if (!op.graph_defined) ops.insert(op.op);
  if (kernel_level && ops.count(OpKind::kMatmul) && ops.count(OpKind::kAdd))
    ops.insert(OpKind::kConcatMatmul);
  if (!kernel_level) ops.erase(OpKind::kConcatMatmul);
  std::vector<OpKind> out;
  const unsigned level = kernel_level ? ir::kLevelK : ir::kLevelB;
  for (OpKind k : ops)
    if (ir::op_info(k).levels & level) out.push_back(k);
  return out;
}

struct Enumerator::Config {
  ir::KernelGraph program;
  SearchOptions opt;
  expr::ExprPool& pool;
  expr::Oracle& oracle;
  std::vector<OpKind> kernel_ops, block_ops;
  std::vector<Anchor> anchors;
  std::vector<BlockConfig> blocks;
  std::vector<expr::Expr> input_exprs;
  std::vector<Labels> input_labels;  // per program input, canonical index classes
  std::vector<bool> reduced;         // per index class: does the program sum over it?
  std::vector<bool> reduced_by_every_output;  // ... and does every output depend on that sum?
  std::vector<SumShape> rigid_sums;           // ProgramLabels::rigid_sums
  std::vector<bool> freely_summed;            // ProgramLabels::freely_summed
  int max_arity_kernel = 1, max_arity_block = 1;
  int tasks = 0;

  Config(const ir::KernelGraph& p, const SearchOptions& o, expr::ExprPool& pl, expr::Oracle& orc)
      : program(p), opt(o), pool(pl), oracle(orc) {}
};

namespace {

// One tensor of a prefix (kernel or block level).
struct Tensor {
  TensorType type;
  expr::Expr e = nullptr;
  int uses = 0;
  Phase phase = Phase::kInLoop;
  Labels lab{};
  bool loop_dep = false;  // block level: depends on an input tiled by the for-loop
  // Kernel level: per dim, 0, or the number of partial sums concatenated along it (an earlier
  // block graph whose grid split a summed index wrote one part per block; `lab` keeps the
  // index of one part). Block level: the tile is one part of such a dim, read by the loop.
  std::array<int, ir::kMaxRank> parts{};
  bool partial() const { return std::any_of(parts.begin(), parts.end(), [](int p) { return p > 0; }); }
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
  std::vector<Tensor> t;    // iterators first
  std::vector<BlockOpRec> ops;
  int64_t smem = 0;
  std::array<int, 3> grid_label{kAnyLabel, kAnyLabel, kAnyLabel};  // index each grid dim splits
  int loop_label = kAnyLabel;                                       // index the loop tiles
  bool last = false;    // the last kernel op: its outputs are the program's
  int max_outputs = 1;
};

class Worker {
 public:
  Worker(const Enumerator::Config& c, int task, const std::function<bool(uint64_t)>* should_stop)
      : c_(c), task_(task), should_stop_(should_stop) {
    for (size_t i = 0; i < c_.program.inputs.size(); ++i)
      kt_.push_back({c_.program.tensor(c_.program.inputs[i]).type, c_.input_exprs[i], 0,
                     Phase::kInLoop, c_.input_labels[i], false});
  }

  void run() { kernel_step(); }
  int root_choices() const { return root_counter_; }
  bool stopped() const { return stopped_; }
  SearchStats& stats() { return st_; }
  std::vector<ir::KernelGraph>& complete() { return complete_; }

 private:
  // ---------------------------------------------------------------------------------------
  // Common checks.

  bool poll() {
    if (stopped_) return false;
    if (++since_poll_ >= kPollEvery) check_stop();
    return !stopped_;
  }
  void check_stop() {
    if (should_stop_ && (*should_stop_)(since_poll_)) stopped_ = true;
    since_poll_ = 0;
  }

  // At the root, each choice of a first op is a task: true if this choice is not ours.
  bool not_my_root_choice() {
    if (!kops_.empty()) return false;
    return root_counter_++ != task_;
  }

  // Whether the oracle keeps `e` (always, with pruning off).
  // The oracle's answer, cached per worker: the oracle and the expression pool are shared by
  // all threads behind locks; these worker-local caches keep the threads off them.
  bool oracle_keeps(expr::Expr e) {
    if (!c_.opt.prune) return true;
    auto [it, fresh] = keep_cache_.try_emplace(e, false);
    if (fresh) {
      it->second = c_.oracle.may_lead_to(e);
      check_stop();  // a new query may have gone to Z3 (slow): look at the clock
    }
    if (it->second) return true;
    ++st_.pruned_oracle;
    return false;
  }

  // expr::op_expression through a worker-local cache. The expression depends on the op, the
  // attribute that enters it (sum group), the input expressions and the reduction sizes.
  // An op's expression and, once asked, the oracle's answer for it: the block level's inner
  // loop then needs one hash lookup per tried op.
  struct ExprEntry {
    expr::Expr e = nullptr;
    int keep = -1;  // -1: not asked yet
  };
  bool oracle_keeps(ExprEntry& entry) {
    if (entry.keep < 0) return (entry.keep = oracle_keeps(entry.e));
    if (!entry.keep) ++st_.pruned_oracle;
    return entry.keep;
  }

  expr::Expr expression(OpKind op, const ir::OpAttrs& attrs, const std::vector<expr::Expr>& es,
                        const std::vector<TensorType>& types) {
    return expression_entry(op, attrs, es, types).e;
  }
  ExprEntry& expression_entry(OpKind op, const ir::OpAttrs& attrs, const std::vector<expr::Expr>& es,
                              const std::vector<TensorType>& types) {
    ExprKey key{};
    key.op = static_cast<int>(op);
    key.group = attrs.group;
    for (size_t i = 0; i < es.size() && i < key.in.size(); ++i) {
      key.in[i] = es[i];
      key.k[i] = types[i].shape[types[i].shape.rank - 1];
    }
    auto [it, fresh] = expr_cache_.try_emplace(key);
    if (fresh) it->second.e = expr::op_expression(c_.pool, op, attrs, es, types);
    return it->second;
  }
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
      return h;
    }
  };
  std::unordered_map<expr::Expr, bool> keep_cache_;
  std::unordered_map<ExprKey, ExprEntry, ExprKeyHash> expr_cache_;  // node-based: entries stay put

  // Type and labels of an op's output, or nullopt (counted as a shape prune) when the inputs
  // do not fit the operator (ir::infer_type) or their labels do not (labels_for).
  std::optional<std::pair<TensorType, Labels>> output_of(OpKind op, const ir::OpAttrs& attrs,
                                                         const std::vector<TensorType>& types,
                                                         const std::vector<Labels>& labs) {
    if (!shapes_may_fit(op, types)) {
      ++st_.pruned_shape;
      return std::nullopt;
    }
    auto type = ir::infer_type(op, attrs, types);
    if (!type.ok()) {
      ++st_.pruned_shape;
      return std::nullopt;
    }
    auto lab = labels_for(op, attrs, types, labs, *type);
    if (!lab) return std::nullopt;
    return std::make_pair(*type, *lab);
  }

  // Labels of an op's output, or nullopt (counted as a shape prune) when it pairs different
  // indices or sums over one the program never sums over.
  std::optional<Labels> labels_for(OpKind op, const ir::OpAttrs& attrs,
                                   const std::vector<TensorType>& types,
                                   const std::vector<Labels>& labs, const TensorType& out) {
    auto r = propagate_labels(op, attrs, types, labs, out, nullptr);
    bool ok = r.has_value();
    for (int k = 0; ok && k < 2; ++k) {
      const int red = r->reduced[k];
      ok = red < 0 || red == kAnyLabel || c_.reduced[static_cast<size_t>(red)];
      // A sum the program cannot regroup: the summand ranges over the indices of one of
      // the program's sums over `red` (ProgramLabels::rigid_sums).
      if (ok && red >= 0 && !r->summand_any[k] && !c_.freely_summed[static_cast<size_t>(red)])
        ok = std::binary_search(c_.rigid_sums.begin(), c_.rigid_sums.end(),
                                SumShape{red, r->summand[k]});
      // In the last block graph, a reduction over an index the grid splits stays partial:
      // no later kernel can add up the blocks' parts (split-KV needs a second kernel).
      if (ok && red >= 0 && frame_ && frame_->last)
        for (int g : frame_->grid_label) ok &= g != red;
    }
    if (!ok) {
      ++st_.pruned_shape;
      return std::nullopt;
    }
    return r->out;
  }

  static bool redundant(const std::vector<Tensor>& ts, const TensorType& type, expr::Expr e,
                        Phase phase) {
    for (const Tensor& t : ts)
      if (t.e == e && t.phase == phase && t.type == type) return true;
    return false;
  }

  // Whether the current graph level already placed the program op `anchor` (once each).
  bool anchor_used(int64_t anchor) const {
    const int code = static_cast<int>(c_.anchors[static_cast<size_t>(anchor)].op);
    if (frame_) {
      for (const BlockOpRec& op : frame_->ops)
        if (!op.acc && op.rank.code == code && op.rank.attr == anchor) return true;
      return false;
    }
    for (const KernelOpRec& op : kops_)
      if (!op.gd && op.rank.code == code && op.rank.attr == anchor) return true;
    return false;
  }

  // Attribute choices for `op` on inputs of these types/expressions: (attrs, rank attr).
  void attr_choices(OpKind op, const std::vector<TensorType>& types,
                    const std::vector<expr::Expr>& es, std::vector<std::pair<ir::OpAttrs, int64_t>>& out) {
    out.clear();
    if (op == OpKind::kSum) {
      const ir::Shape& s = types[0].shape;
      for (int d = 0; d < s.rank; ++d) {
        if (s[d] == 1) continue;
        ir::OpAttrs a;
        a.dim = d;
        a.group = s[d];
        out.push_back({a, d});
      }
      return;
    }
    if (abstracted(op)) {
      for (size_t i = 0; i < c_.anchors.size(); ++i) {
        const Anchor& an = c_.anchors[i];
        if (an.op != op || anchor_used(static_cast<int64_t>(i))) continue;
        bool match = true;
        for (size_t j = 0; j < es.size() && match; ++j)
          match = c_.oracle.equivalent(es[j], an.inputs[j]).value_or(false);
        if (match) out.push_back({an.attrs, static_cast<int64_t>(i)});
      }
      return;
    }
    out.push_back({ir::OpAttrs{}, 0});
  }

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
                            const std::vector<Tensor>& ts) {
    while (pool.size() <= depth) pool.emplace_back();
    OpScratch& sc = pool[depth];
    sc.types.clear();
    sc.es.clear();
    sc.labs.clear();
    for (int i : in) {
      sc.types.push_back(ts[static_cast<size_t>(i)].type);
      sc.es.push_back(ts[static_cast<size_t>(i)].e);
      sc.labs.push_back(ts[static_cast<size_t>(i)].lab);
    }
    return sc;
  }

  // ---------------------------------------------------------------------------------------
  // Kernel level (Algorithm 1 lines 9-19).

  void kernel_step() {
    if (!poll()) return;
    ++st_.kernel_states;
    if (!kops_.empty()) try_complete_kernel();
    if (static_cast<int>(kops_.size()) >= c_.opt.max_kernel_ops) return;
    if (!kernel_can_finish()) return;
    const int n = static_cast<int>(kt_.size());
    const int lo = kops_.empty() ? 0 : kops_.back().rank.in[0];
    std::vector<int> tuple;
    for (OpKind op : c_.kernel_ops) {
      const int arity = ir::op_info(op).arity;
      for_each_tuple(n, arity, lo, commutative(op), tuple,
                     [&](const std::vector<int>& in) { try_kernel_op(op, in); });
      if (stopped_) return;
    }
    if (gd_count_ < c_.opt.max_graph_defined_ops) graph_defined_ops(n, lo);
  }

  bool kernel_can_finish() const {
    int unconsumed = 0;
    for (size_t i = c_.program.inputs.size(); i < kt_.size(); ++i) unconsumed += kt_[i].uses == 0;
    const int need = unconsumed - static_cast<int>(c_.program.outputs.size());
    const int left = c_.opt.max_kernel_ops - static_cast<int>(kops_.size());
    // Every program input must be read by some op (the program reads them all).
    if (unread_inputs() > left * c_.max_arity_kernel) return false;
    return need <= left * std::max(c_.max_arity_kernel - 1, 1);
  }

  bool last_kernel_op() const { return static_cast<int>(kops_.size()) + 1 == c_.opt.max_kernel_ops; }

  // Whether the last kernel op, reading `in`, can leave a complete graph: it must read every
  // program input not read yet, and what it leaves open besides its own output(s) must be
  // program outputs already (at most all but one of them).
  bool last_op_may_complete(const std::vector<int>& in) const {
    const int n_inputs = static_cast<int>(c_.program.inputs.size());
    int left_open = 0;
    for (int i = 0; i < static_cast<int>(kt_.size()); ++i) {
      if (kt_[i].uses > 0 || std::find(in.begin(), in.end(), i) != in.end()) continue;
      if (i < n_inputs) return false;
      bool is_output = false;
      for (size_t o = 0; o < c_.program.outputs.size() && !is_output; ++o)
        is_output = c_.oracle.equals_output(kt_[i].e, o).value_or(true);
      if (!is_output) return false;
      ++left_open;
    }
    return left_open < static_cast<int>(c_.program.outputs.size());
  }

  int unread_inputs() const {
    int n = 0;
    for (size_t i = 0; i < c_.program.inputs.size(); ++i) n += kt_[i].uses == 0;
    return n;
  }

  void try_kernel_op(OpKind op, const std::vector<int>& in) {
    for (int i : in)
      if (kt_[i].partial()) return;  // partial sums are added up by a block graph's loop
    if (last_kernel_op() && !last_op_may_complete(in)) return;
    OpScratch& sc = scratch(kernel_scratch_, kops_.size(), in, kt_);
    attr_choices(op, sc.types, sc.es, sc.choices);
    const auto& [types, es, labs, choices] = sc;
    for (const auto& [attrs, attr_code] : choices) {
      const Rank rank = make_rank(in, static_cast<int>(op), attr_code);
      if (!kops_.empty() && !(kops_.back().rank < rank)) continue;
      if (not_my_root_choice()) continue;
      auto out = output_of(op, attrs, types, labs);
      if (!out) continue;
      const auto& [type, lab] = *out;
      expr::Expr e = expression(op, attrs, es, types);
      if (redundant(kt_, type, e, Phase::kInLoop)) {
        ++st_.pruned_redundant;
        continue;
      }
      if (!oracle_keeps(e)) continue;
      KernelOpRec rec{false, op, attrs, in, {static_cast<int>(kt_.size())}, nullptr, rank};
      push_kernel(std::move(rec), {{type, e, 0, Phase::kInLoop, lab, false}});
      kernel_step();
      pop_kernel();
      if (stopped_) return;
    }
  }

  void push_kernel(KernelOpRec rec, const std::vector<Tensor>& outs) {
    for (int i : rec.in) ++kt_[i].uses;
    for (const Tensor& t : outs) kt_.push_back(t);
    gd_count_ += rec.gd;
    kops_.push_back(std::move(rec));
  }
  void pop_kernel() {
    const KernelOpRec& rec = kops_.back();
    for (int i : rec.in) --kt_[i].uses;
    kt_.resize(kt_.size() - rec.out.size());
    gd_count_ -= rec.gd;
    kops_.pop_back();
  }

  void graph_defined_ops(int n, int lo) {
    // Input sets: ascending index lists of size 1..max_kernel_op_inputs with max >= lo.
    const int max_in = std::min(c_.opt.max_kernel_op_inputs, n);
    std::vector<int> set;
    std::function<void(int)> rec = [&](int next) {
      if (!set.empty() && set.back() >= lo && (!last_kernel_op() || last_op_may_complete(set))) {
        const Rank rank = make_rank(set, kCodeGraphDefined, 0);
        if (kops_.empty() || kops_.back().rank < rank)
          for (size_t b = 0; b < c_.blocks.size(); ++b) {
            if (not_my_root_choice()) continue;
            start_block(set, static_cast<int>(b), rank);
            if (stopped_) return;
          }
      }
      if (static_cast<int>(set.size()) == max_in) return;
      for (int i = next; i < n; ++i) {
        set.push_back(i);
        rec(i + 1);
        set.pop_back();
        if (stopped_) return;
      }
    };
    rec(0);
  }

  // ---------------------------------------------------------------------------------------
  // Kernel completion.

  void try_complete_kernel() {
    std::vector<int> open;
    for (size_t i = c_.program.inputs.size(); i < kt_.size(); ++i)
      if (kt_[i].uses == 0) open.push_back(static_cast<int>(i));
    const size_t nout = c_.program.outputs.size();
    if (open.size() != nout) return;
    // Find an assignment of open tensors to program outputs (few outputs: permutations).
    std::vector<int> perm = open;
    std::sort(perm.begin(), perm.end());
    do {
      bool ok = true;
      for (size_t i = 0; i < nout && ok; ++i) {
        const Tensor& t = kt_[perm[i]];
        const TensorType& want = c_.program.tensor(c_.program.outputs[i]).type;
        ok = t.type.shape == want.shape && t.type.dtype == want.dtype &&
             c_.oracle.equals_output(t.e, i).value_or(true);
      }
      if (ok) {
        ++st_.completed;
        complete_.push_back(build_kernel_graph(perm));
        return;
      }
    } while (std::next_permutation(perm.begin(), perm.end()));
  }

  ir::KernelGraph build_kernel_graph(const std::vector<int>& outputs) const {
    ir::KernelBuilder kb;
    std::vector<ir::TensorId> id(kt_.size(), -1);
    auto name_of = [&](int t) -> std::string {
      for (size_t i = 0; i < outputs.size(); ++i)
        if (outputs[i] == t) return c_.program.tensor(c_.program.outputs[i]).name;
      return "";
    };
    for (size_t i = 0; i < c_.program.inputs.size(); ++i) {
      const ir::Tensor& in = c_.program.tensor(c_.program.inputs[i]);
      id[i] = kb.input(in.name, in.type).value();
    }
    for (const KernelOpRec& op : kops_) {
      std::vector<ir::TensorId> ins;
      for (int i : op.in) ins.push_back(id[i]);
      if (!op.gd) {
        id[op.out[0]] = kb.op(op.op, ins, op.attrs, name_of(op.out[0])).value();
        continue;
      }
      std::vector<std::string> names;
      for (int o : op.out) names.push_back(name_of(o));
      auto outs = kb.graph_defined(ins, op.block, names).value();
      for (size_t j = 0; j < outs.size(); ++j) id[op.out[j]] = outs[j];
    }
    for (int o : outputs) MG_CHECK(kb.output(id[o]).ok(), "search: output");
    return std::move(kb).finish().value();
  }

  // ---------------------------------------------------------------------------------------
  // Block level (Algorithm 1 lines 21-28).

  // A finished block graph: what the kernel level needs to add it as a graph-defined op.
  struct DoneBlock {
    std::shared_ptr<const ir::BlockGraph> block;
    std::vector<Tensor> outs;  // kernel-level types and expressions of its outputs
  };

  // The block graphs over kernel tensors `kin` depend only on their types and expressions and
  // on the configuration, not on the rest of the kernel prefix: they are searched once per
  // task and replayed after every kernel prefix that offers the same inputs.
  void start_block(const std::vector<int>& kin, int config, const Rank& rank) {
    // As the last kernel op, the block graph must produce the program's outputs itself.
    const bool last = last_kernel_op();
    std::vector<std::pair<expr::Expr, std::string>> key_in;
    for (int k : kin) key_in.push_back({kt_[k].e, kt_[k].type.to_string()});
    auto key = std::make_pair(key_in, config * 2 + last);
    auto it = memo_.find(key);
    if (it == memo_.end()) {
      std::vector<DoneBlock> done;
      search_blocks(kin, c_.blocks[static_cast<size_t>(config)], last, done);
      it = memo_.emplace(std::move(key), std::move(done)).first;
    }
    for (const DoneBlock& d : it->second) {
      if (stopped_) return;
      bool fresh = true;
      for (const Tensor& t : d.outs) fresh &= !redundant(kt_, t.type, t.e, Phase::kInLoop);
      if (!fresh) {
        ++st_.pruned_redundant;
        continue;
      }
      KernelOpRec rec;
      rec.gd = true;
      rec.in = kin;
      rec.rank = rank;
      rec.block = d.block;
      for (size_t j = 0; j < d.outs.size(); ++j) rec.out.push_back(static_cast<int>(kt_.size() + j));
      push_kernel(std::move(rec), d.outs);
      kernel_step();
      pop_kernel();
    }
  }

  void search_blocks(const std::vector<int>& kin, const BlockConfig& bc, bool last,
                     std::vector<DoneBlock>& done) {
    BlockFrame f;
    f.cfg = bc;
    f.kin = kin;
    f.last = last;
    f.max_outputs = last ? static_cast<int>(c_.program.outputs.size()) : c_.opt.max_block_outputs;
    for (int k : kin) {
      // A tile that alone overflows shared memory can never be chosen.
      std::vector<IterChoice> cs;
      for (IterChoice& ch : iterator_choices(kt_[k].type, bc.grid, bc.forloop)) {
        if (ch.tile.bytes() > c_.opt.target.shared_memory_per_block) {
          ++st_.pruned_memory;
          continue;
        }
        if (last && splits_an_index_every_output_sums(kt_[k].lab, ch)) {
          ++st_.pruned_shape;
          continue;
        }
        if (kt_[k].partial() && !reads_one_part_per_iteration(kt_[k], ch, bc.forloop)) {
          ++st_.pruned_shape;
          continue;
        }
        cs.push_back(std::move(ch));
      }
      unsigned bits = 0;
      for (const IterChoice& ch : cs) bits |= map_bits(ch);
      f.can_map.push_back(bits);
      f.choices.push_back(std::move(cs));
      f.t.push_back({TensorType{}, kt_[k].e, 0, Phase::kInLoop, kt_[k].lab, false, kt_[k].parts});
      f.chosen.push_back(-1);
    }
    // Every grid dim of size > 1 must be able to partition some input.
    for (int g = 0; g < 3; ++g) {
      if (bc.grid[g] == 1) continue;
      bool any = false;
      for (const auto& cs : f.choices)
        for (const IterChoice& ch : cs) any |= ch.imap[g] != ir::kReplica;
      if (!any) {
        ++st_.pruned_shape;
        return;
      }
    }
    frame_ = &f;
    done_ = &done;
    block_step();
    frame_ = nullptr;
    done_ = nullptr;
  }

  // In the last block graph, a grid dim that splits an index every program output sums over
  // leaves each block part of that sum, and no later kernel adds the parts up (split-KV needs
  // a second kernel): such input maps are never chosen there.
  bool splits_an_index_every_output_sums(const Labels& lab, const IterChoice& ch) const {
    for (int g = 0; g < 3; ++g) {
      if (ch.imap[g] == ir::kReplica) continue;
      const int label = lab[ch.imap[g]];
      if (label >= 0 && c_.reduced_by_every_output[static_cast<size_t>(label)]) return true;
    }
    return false;
  }

  // Partial sums are added up by the loop, one part per iteration: the fmap runs along their
  // (only) dim of parts with a range equal to the number of parts, and the grid splits the
  // other dims only.
  static bool reads_one_part_per_iteration(const Tensor& t, const IterChoice& ch, int64_t range) {
    int dims = 0;
    for (int d = 0; d < ir::kMaxRank; ++d) dims += t.parts[d] > 0;
    if (dims != 1 || ch.fmap == ir::kReplica || t.parts[ch.fmap] != range) return false;
    for (int g = 0; g < 3; ++g)
      if (ch.imap[g] != ir::kReplica && t.parts[ch.imap[g]] > 0) return false;
    return true;
  }

  int block_compute_ops() const { return static_cast<int>(frame_->ops.size()); }

  void block_step() {
    if (!poll()) return;
    ++st_.block_states;
    BlockFrame& f = *frame_;
    try_complete_block();
    if (block_compute_ops() >= c_.opt.max_block_ops || stopped_) return;
    if (!block_can_finish()) return;
    const int n = static_cast<int>(f.t.size());
    const int lo = f.ops.empty() ? 0 : f.ops.back().rank.in[0];
    std::vector<int> tuple;
    for (OpKind op : c_.block_ops) {
      const int arity = ir::op_info(op).arity;
      // No attribute can put these inputs after the last op in canonical order: skip them
      // before enumerating the map choices of the iterators among them.
      const int code = static_cast<int>(op);
      for_each_tuple(n, arity, lo, commutative(op), tuple, [&](const std::vector<int>& in) {
        if (!f.ops.empty() && !(f.ops.back().rank < make_rank(in, code, kMaxAttr))) return;
        with_iterators(in, 0, [&] { try_block_op(op, in); });
      });
      if (stopped_) return;
    }
    // Accumulators take computed tensors (accumulating an input tile is a copy or a plain sum,
    // which a sum op in the loop or a predefined kernel does as well), and inputs of partial
    // sums, which nothing else may read (their parts are interleaved with another index).
    if (f.cfg.forloop > 1) {
      const int n_in = static_cast<int>(f.kin.size());
      for (int i = lo; i < n_in && !stopped_; ++i)
        if (f.t[i].partial()) try_partial_sum_accumulator(i);
      for (int i = std::max(lo, n_in); i < n && !stopped_; ++i) try_accumulators(i);
    }
  }

  // An input of partial sums is read one part per iteration (search_blocks) and added up by
  // accumulating the tile itself.
  void try_partial_sum_accumulator(int i) {
    BlockFrame& f = *frame_;
    const Rank rank = make_rank({i}, kCodeAccumulator, ir::kReplica + 1);
    if (!f.ops.empty() && !(f.ops.back().rank < rank)) return;
    with_iterators({i}, 0, [&] {
      const int out = static_cast<int>(f.t.size());
      add_block_tensor({f.t[i].type, c_.pool.sum(f.cfg.forloop, f.t[i].e), 0, Phase::kPostLoop, f.t[i].lab, false},
                       true, nullptr,
                       [&] { return BlockOpRec{true, OpKind::kAdd, {}, ir::kReplica, {i}, out, rank}; });
    });
  }

  // Calls fn once per map choice of each iterator in `in` not read yet (fixing it for the
  // call), or once if all are fixed.
  template <class Fn>
  void with_iterators(const std::vector<int>& in, size_t k, Fn&& fn) {
    BlockFrame& f = *frame_;
    for (; k < in.size(); ++k) {
      const int i = in[k];
      if (i >= static_cast<int>(f.kin.size()) || f.chosen[i] >= 0) continue;
      for (size_t c = 0; c < f.choices[i].size() && !stopped_; ++c) {
        const IterChoice& ch = f.choices[i][c];
        const int64_t bytes = ch.tile.bytes();
        if (f.smem + bytes > c_.opt.target.shared_memory_per_block) {
          ++st_.pruned_memory;
          continue;
        }
        // One index per grid dim and one for the loop, whichever input they split.
        const auto saved_grid = f.grid_label;
        const int saved_loop = f.loop_label;
        bool fits = true;
        auto claim = [&](int& slot, int label) {
          if (label == kAnyLabel || label < 0) return;
          if (slot == kAnyLabel) slot = label;
          else fits &= slot == label;
        };
        for (int g = 0; g < 3; ++g)
          if (ch.imap[g] != ir::kReplica) claim(f.grid_label[static_cast<size_t>(g)], f.t[i].lab[ch.imap[g]]);
        // The loop over partial sums runs over the parts, not over the index of one part.
        if (ch.fmap != ir::kReplica && !f.t[i].partial()) claim(f.loop_label, f.t[i].lab[ch.fmap]);
        if (!fits) {
          f.grid_label = saved_grid;
          f.loop_label = saved_loop;
          ++st_.pruned_shape;
          continue;
        }
        f.chosen[i] = static_cast<int>(c);
        f.t[i].type = ch.tile;
        f.t[i].loop_dep = ch.fmap != ir::kReplica;
        f.smem += bytes;
        with_iterators(in, k + 1, fn);
        f.smem -= bytes;
        f.chosen[i] = -1;
        f.t[i].loop_dep = false;
        f.grid_label = saved_grid;
        f.loop_label = saved_loop;
      }
      return;
    }
    fn();
  }

  bool block_can_finish() const {
    const BlockFrame& f = *frame_;
    int need = 0, open_in = 0, open_post = 0;
    for (size_t i = 0; i < f.t.size(); ++i) {
      if (i < f.kin.size()) {
        need += f.t[i].uses == 0;
        continue;
      }
      if (f.t[i].uses > 0) continue;
      if (f.cfg.forloop > 1 && f.t[i].phase == Phase::kInLoop)
        ++open_in;
      else
        ++open_post;
    }
    need += open_in;
    need += std::max(0, open_post - f.max_outputs);
    if (open_in + open_post > c_.opt.max_open_tensors) return false;
    if (!maps_still_possible()) return false;
    const int left = c_.opt.max_block_ops - block_compute_ops();
    return need <= left * std::max(c_.max_arity_block - 1, 1);
  }

  // The grid dims (bits 0-2) and the loop (bit 3) along which an iterator choice partitions.
  static unsigned map_bits(const IterChoice& ch) {
    unsigned bits = ch.fmap != ir::kReplica ? 8u : 0u;
    for (int g = 0; g < 3; ++g) bits |= ch.imap[g] != ir::kReplica ? 1u << g : 0u;
    return bits;
  }

  // Whether every grid dim of size > 1 can still be partitioned by an input, and the loop
  // still tile one (try_complete_block requires both): by an iterator already read, or by a
  // choice of one not read yet.
  bool maps_still_possible() const {
    const BlockFrame& f = *frame_;
    unsigned need = f.cfg.forloop > 1 ? 8u : 0u, have = 0;
    for (int g = 0; g < 3; ++g) need |= f.cfg.grid[g] > 1 ? 1u << g : 0u;
    for (size_t i = 0; i < f.kin.size(); ++i)
      have |= f.chosen[i] >= 0 ? map_bits(f.choices[i][static_cast<size_t>(f.chosen[i])]) : f.can_map[i];
    return (need & ~have) == 0;
  }

  void try_block_op(OpKind op, const std::vector<int>& in) {
    BlockFrame& f = *frame_;
    const Phase phase = f.t[in[0]].phase;
    // With a loop, reductions belong in it: post-loop ops are element-wise (the epilogue).
    if (phase == Phase::kPostLoop && f.cfg.forloop > 1 && !ir::is_elementwise(op)) return;
    bool loop_dep = false;
    for (int i : in) {
      if (f.t[i].phase != phase) return;  // ops never mix phases
      if (f.t[i].partial()) return;       // one part of partial sums: only accumulated
      loop_dep |= f.t[i].loop_dep;
    }
    OpScratch& sc = scratch(block_scratch_, f.ops.size(), in, f.t);
    attr_choices(op, sc.types, sc.es, sc.choices);
    const auto& [types, es, labs, choices] = sc;
    for (const auto& [attrs, attr_code] : choices) {
      const Rank rank = make_rank(in, static_cast<int>(op), attr_code);
      if (!f.ops.empty() && !(f.ops.back().rank < rank)) continue;
      auto out = output_of(op, attrs, types, labs);
      if (!out) continue;
      ExprEntry& entry = expression_entry(op, attrs, es, types);
      const int id = static_cast<int>(f.t.size());
      add_block_tensor({out->first, entry.e, 0, phase, out->second, loop_dep}, !abstracted(op), &entry,
                       [&] { return BlockOpRec{false, op, attrs, ir::kReplica, in, id, rank}; });
      if (stopped_) return;
    }
  }

  void try_accumulators(int i) {
    BlockFrame& f = *frame_;
    if (f.t[i].phase != Phase::kInLoop) return;
    // Only a tensor that varies with the loop is accumulated: summed (phi) if the loop's
    // index was reduced inside the tile, concatenated along the dim that carries it otherwise.
    if (!f.t[i].loop_dep) return;
    // Copies: add_block_tensor grows f.t, which would leave references dangling.
    const TensorType in = f.t[i].type;
    const Labels lab = f.t[i].lab;
    int loop_dim = ir::kReplica;
    for (int d = 0; d < in.shape.rank; ++d)
      if (f.loop_label != kAnyLabel && lab[d] == f.loop_label) loop_dim = d;
    for (int fmap = ir::kReplica; fmap < in.shape.rank && !stopped_; ++fmap) {
      if (f.loop_label != kAnyLabel && fmap != loop_dim) continue;
      const Rank rank = make_rank({i}, kCodeAccumulator, fmap + 1);
      if (!f.ops.empty() && !(f.ops.back().rank < rank)) continue;
      ir::Shape s = in.shape;
      if (fmap != ir::kReplica) s[fmap] *= f.cfg.forloop;
      expr::Expr e = fmap == ir::kReplica ? c_.pool.sum(f.cfg.forloop, f.t[i].e) : f.t[i].e;
      const int out = static_cast<int>(f.t.size());
      add_block_tensor({TensorType::make(in.dtype, s), e, 0, Phase::kPostLoop, lab, false}, true,
                       nullptr, [&] { return BlockOpRec{true, OpKind::kAdd, {}, fmap, {i}, out, rank}; });
    }
  }

  // Shared tail of try_block_op / try_accumulators: memory, redundancy, oracle (through the
  // expression's cache entry when the caller has it), then the op record (built only now:
  // most tries stop before) and the recursion.
  template <class MakeRec>
  void add_block_tensor(const Tensor& t, bool check_redundant, ExprEntry* entry, MakeRec&& make_rec) {
    BlockFrame& f = *frame_;
    const int64_t bytes = t.type.bytes();
    if (f.smem + bytes > c_.opt.target.shared_memory_per_block) {
      ++st_.pruned_memory;
      return;
    }
    if (check_redundant && redundant(f.t, t.type, t.e, t.phase)) {
      ++st_.pruned_redundant;
      return;
    }
    if (!(entry ? oracle_keeps(*entry) : oracle_keeps(t.e))) return;
    f.ops.push_back(make_rec());
    const std::vector<int>& in = f.ops.back().in;
    for (int i : in) ++f.t[i].uses;
    f.t.push_back(t);
    f.smem += bytes;
    block_step();
    f.smem -= bytes;
    f.t.pop_back();
    for (int i : f.ops.back().in) --f.t[i].uses;
    f.ops.pop_back();
  }

  // ---------------------------------------------------------------------------------------
  // Block completion (Algorithm 1 lines 22-24).

  void try_complete_block() {
    BlockFrame& f = *frame_;
    const size_t n_in = f.kin.size();
    for (size_t i = 0; i < n_in; ++i)
      if (f.chosen[i] < 0) return;
    for (int g = 0; g < 3; ++g) {
      if (f.cfg.grid[g] == 1) continue;
      bool mapped = false;
      for (size_t i = 0; i < n_in; ++i) mapped |= f.choices[i][f.chosen[i]].imap[g] != ir::kReplica;
      if (!mapped) return;  // the blocks along g would all compute the same thing
    }
    if (f.cfg.forloop > 1) {
      bool tiled = false;
      for (size_t i = 0; i < n_in; ++i) tiled |= f.choices[i][f.chosen[i]].fmap != ir::kReplica;
      if (!tiled) return;  // every iteration would be the same
    }
    std::vector<int> outs;
    for (size_t i = n_in; i < f.t.size(); ++i) {
      if (f.t[i].uses > 0) continue;
      if (f.cfg.forloop > 1 && f.t[i].phase != Phase::kPostLoop) return;
      outs.push_back(static_cast<int>(i));
    }
    if (outs.empty() || static_cast<int>(outs.size()) > f.max_outputs) return;
    if (f.last) {
      if (outs.size() != c_.program.outputs.size()) return;
      for (int o : outs) {
        bool matches = false;
        for (size_t i = 0; i < c_.program.outputs.size() && !matches; ++i)
          matches = c_.oracle.equals_output(f.t[o].e, i).value_or(true);
        if (!matches) return;
      }
    }
    std::vector<std::vector<ir::DimMap>> omaps;
    for (int o : outs) {
      std::vector<ir::DimMap> ms;
      for (const ir::DimMap& m : omap_choices(f.t[o].type, f.cfg.grid)) {
        // Grid dim g writes along the dim carrying g's index. A dim of size 1 has no label
        // (-1): it carries g's index when the grid split that index down to one per block
        // (8 blocks over 8 rows), so it may take g as well.
        // A grid dim that splits an index the block sums over leaves partial sums; before a
        // later kernel (which adds them up) they go along one canonical dim (split-KV).
        bool follows = true;
        for (int g = 0; g < 3; ++g) {
          if (m[g] == ir::kReplica || f.grid_label[static_cast<size_t>(g)] == kAnyLabel) continue;
          const int lab = f.t[o].lab[m[g]];
          if (writes_partial_sums(f.t[o].lab, g))
            follows &= m[g] == partial_sums_dim(m, g, f.t[o].type.shape.rank);
          else
            follows &= lab == kAnyLabel || lab == -1 || lab == f.grid_label[static_cast<size_t>(g)];
        }
        if (follows) ms.push_back(m);
      }
      if (ms.empty()) return;
      omaps.push_back(std::move(ms));
    }
    std::vector<ir::DimMap> pick(outs.size());
    std::function<void(size_t)> rec = [&](size_t k) {
      if (stopped_) return;
      if (k == outs.size()) {
        finish_block(outs, pick);
        return;
      }
      for (const ir::DimMap& m : omaps[k]) {
        pick[k] = m;
        rec(k + 1);
      }
    };
    rec(0);
  }

  // Whether grid dim g splits an index that the program sums over and that block output
  // `lab` no longer ranges over (the block summed over its part), in a block graph a later
  // kernel can follow: the blocks' outputs are partial sums, to be added up by that kernel.
  bool writes_partial_sums(const Labels& lab, int g) const {
    const int split = frame_->grid_label[static_cast<size_t>(g)];
    if (frame_->last || split < 0 || !c_.reduced[static_cast<size_t>(split)]) return false;
    return std::find(lab.begin(), lab.end(), split) == lab.end();
  }

  // Partial sums are concatenated along one canonical dim (any would do for the kernel that
  // adds them up): the last dim no other grid dim of `m` writes along.
  static int partial_sums_dim(const ir::DimMap& m, int g, int rank) {
    for (int d = rank - 1; d >= 0; --d) {
      bool taken = false;
      for (int h = 0; h < 3; ++h) taken |= h != g && m[h] == d;
      if (!taken) return d;
    }
    return ir::kReplica;
  }

  void finish_block(const std::vector<int>& outs, const std::vector<ir::DimMap>& omaps) {
    BlockFrame& f = *frame_;
    DoneBlock d;
    for (size_t j = 0; j < outs.size(); ++j) {
      Tensor t{saved_type(f.t[outs[j]].type, omaps[j], f.cfg.grid), f.t[outs[j]].e, 0,
               Phase::kInLoop, f.t[outs[j]].lab, false};
      for (int g = 0; g < 3; ++g)
        if (omaps[j][g] != ir::kReplica && writes_partial_sums(f.t[outs[j]].lab, g))
          t.parts[omaps[j][g]] = static_cast<int>(f.cfg.grid[g]);
      d.outs.push_back(t);
    }
    d.block = build_block_graph(outs, omaps);
    done_->push_back(std::move(d));
  }

  std::shared_ptr<const ir::BlockGraph> build_block_graph(const std::vector<int>& outs,
                                                          const std::vector<ir::DimMap>& omaps) {
    const BlockFrame& f = *frame_;
    std::vector<TensorType> in_types;
    for (int k : f.kin) in_types.push_back(kt_[k].type);
    auto bb = ir::BlockBuilder::make(in_types, f.cfg.grid, f.cfg.forloop).value();
    std::vector<ir::TensorId> id(f.t.size(), -1);
    for (size_t i = 0; i < f.kin.size(); ++i) {
      const IterChoice& ch = f.choices[i][f.chosen[i]];
      id[i] = bb.input_iterator(static_cast<int>(i), ch.imap, ch.fmap).value();
    }
    for (const BlockOpRec& op : f.ops) {
      std::vector<ir::TensorId> ins;
      for (int i : op.in) ins.push_back(id[i]);
      id[op.out] = op.acc ? bb.accumulator(ins[0], op.fmap).value()
                          : bb.op(op.op, ins, op.attrs).value();
    }
    for (size_t j = 0; j < outs.size(); ++j) {
      Status s = bb.output_saver(id[outs[j]], omaps[j]);
      MG_CHECK(s.ok(), "search built an invalid block graph: " << s.message());
    }
    return std::move(bb).finish().value();
  }

  const Enumerator::Config& c_;
  const int task_;
  const std::function<bool(uint64_t)>* should_stop_;
  SearchStats st_;
  std::vector<ir::KernelGraph> complete_;
  std::vector<Tensor> kt_;
  std::vector<KernelOpRec> kops_;
  int gd_count_ = 0;
  BlockFrame* frame_ = nullptr;
  std::vector<DoneBlock>* done_ = nullptr;
  std::map<std::pair<std::vector<std::pair<expr::Expr, std::string>>, int>,
           std::vector<DoneBlock>> memo_;
  int root_counter_ = 0;
  bool stopped_ = false;
  uint64_t since_poll_ = 0;
};

}  // namespace

Enumerator::Enumerator(const ir::KernelGraph& program, const SearchOptions& options,
                       expr::ExprPool& pool, expr::Oracle& oracle)
    : cfg_(std::make_unique<Config>(program, options, pool, oracle)) {
  Config& c = *cfg_;
  c.kernel_ops = options.kernel_ops.empty() ? default_ops(program, true) : options.kernel_ops;
  c.block_ops = options.block_ops.empty() ? default_ops(program, false) : options.block_ops;
  for (OpKind k : c.kernel_ops) c.max_arity_kernel = std::max(c.max_arity_kernel, ir::op_info(k).arity);
  if (options.max_graph_defined_ops > 0)
    c.max_arity_kernel = std::max(c.max_arity_kernel, options.max_kernel_op_inputs);
  for (OpKind k : c.block_ops) c.max_arity_block = std::max(c.max_arity_block, ir::op_info(k).arity);
  MG_CHECK(options.max_kernel_op_inputs <= kMaxRankInputs,
           "max_kernel_op_inputs above " << kMaxRankInputs);

  const expr::GraphExprs ge = expr::abstract_expressions(program, pool);
  for (ir::TensorId id : program.inputs) c.input_exprs.push_back(ge.tensors[id]);
  ProgramLabels pl = program_labels(program);
  c.input_labels = std::move(pl.inputs);
  c.reduced = std::move(pl.reduced);
  c.reduced_by_every_output = std::move(pl.reduced_by_every_output);
  c.rigid_sums = std::move(pl.rigid_sums);
  c.freely_summed = std::move(pl.freely_summed);
  for (const ir::KernelOp& op : program.ops) {
    if (op.graph_defined || !abstracted(op.op)) continue;
    Anchor a{op.op, op.attrs, {}};
    for (ir::TensorId i : op.inputs) a.inputs.push_back(ge.tensors[i]);
    c.anchors.push_back(std::move(a));
  }

  // Block configurations: grids (up to max_grid_dims dims of size > 1, each dividing some
  // input dim) x for-loop ranges.
  std::set<int64_t> dims;
  for (ir::TensorId id : program.inputs)
    for (int d = 0; d < program.tensor(id).type.shape.rank; ++d)
      dims.insert(program.tensor(id).type.shape[d]);
  std::vector<int64_t> sizes;
  for (int64_t s : options.grid_sizes) {
    bool divides = s == 1;
    for (int64_t d : dims) divides |= d % s == 0;
    if (divides) sizes.push_back(s);
  }
  if (std::find(sizes.begin(), sizes.end(), 1) == sizes.end()) sizes.insert(sizes.begin(), 1);
  for (int64_t x : sizes)
    for (int64_t y : sizes)
      for (int64_t z : sizes) {
        const int dims_used = (x > 1) + (y > 1) + (z > 1);
        if (dims_used > options.max_grid_dims) continue;
        if ((y > 1 && x == 1) || (z > 1 && y == 1)) continue;  // grid dims in order x, y, z
        const int64_t blocks = x * y * z;
        if (blocks < options.min_blocks || blocks > options.max_blocks) continue;
        for (int64_t r : options.forloop_ranges) c.blocks.push_back({ir::Dim3{{x, y, z}}, r});
      }

  Worker counter(c, -1, nullptr);
  counter.run();
  c.tasks = counter.root_choices();
}

Enumerator::~Enumerator() = default;

int Enumerator::task_count() const { return cfg_->tasks; }

Enumerator::TaskOutput Enumerator::run_task(int task,
                                            const std::function<bool(uint64_t)>& should_stop) const {
  Worker w(*cfg_, task, &should_stop);
  w.run();
  TaskOutput out;
  out.complete = std::move(w.complete());
  out.stats = w.stats();
  out.finished = !w.stopped();
  return out;
}

std::string Enumerator::describe() const {
  const Config& c = *cfg_;
  std::ostringstream os;
  auto list = [&](const std::vector<OpKind>& ops) {
    for (size_t i = 0; i < ops.size(); ++i) os << (i ? "," : "") << ir::op_name(ops[i]);
  };
  os << "kernel ops {";
  list(c.kernel_ops);
  os << "}, block ops {";
  list(c.block_ops);
  os << "}, " << c.blocks.size() << " block configurations (grid x range), " << c.tasks
     << " tasks";
  return os.str();
}

}  // namespace mugraph::search
