#include "search/enumerate.h"

#include <algorithm>
#include <deque>
#include <mutex>
#include <set>
#include <sstream>

#include "expr/abstract.h"
#include "ir/builder.h"
#include "search/worker.h"

namespace mugraph::search {
namespace enumeration {

bool Worker::poll() {
  if (stopped_)
    return false;
  if (++since_poll_ >= kPollEvery)
    check_stop();
  return !stopped_;
}

void Worker::check_stop() {
  if (should_stop_ && (*should_stop_)(since_poll_))
    stopped_ = true;
  since_poll_ = 0;
}

bool Worker::not_my_root_choice() {
  if (!kops_.empty())
    return false;
  if (counting_)
    root_parts_.push_back(0);
  return root_counter_++ != task_.root;
}

bool Worker::not_my_root_choice(const std::vector<int>& in, int config, const Rank& rank) {
  if (!kops_.empty())
    return false;
  part_counter_ = 0;
  if (counting_) {
    int parts = 0;
    if (splits_root_block()) {
      start_block(in, config, rank);  // counts its first ops (not_my_block_part), runs none
      parts = std::max(part_counter_, 1);
    }
    root_parts_.push_back(parts);
    ++root_counter_;
    return true;
  }
  return root_counter_++ != task_.root;
}

bool Worker::not_my_block_part() {
  return frame_->split && frame_->ops.empty() && part_counter_++ != task_.part;
}

OracleAnswer Worker::ask_oracle(expr::Expr e) {
  if (!c_.opt.prune)
    return OracleAnswer{};
  auto [it, fresh] = answers_.try_emplace(e);
  if (fresh) {
    it->second.keep = c_.oracle.may_lead_to(e);
    if (it->second.keep && c_.bound_steps)
      it->second.steps = c_.oracle.steps_to_output(e).value_or(0);
    check_stop();  // a new query may have gone to Z3 (slow): look at the clock
  }
  return it->second;
}

bool Worker::oracle_keeps(expr::Expr e) {
  if (ask_oracle(e).keep)
    return true;
  ++st_.pruned[PruneRule::kOracle];
  return false;
}

const OracleAnswer& Worker::ask_oracle(ExprEntry& entry) {
  if (!entry.asked) {
    entry.answer = ask_oracle(entry.e);
    entry.asked = true;
  }
  return entry.answer;
}

expr::Expr Worker::expression(OpKind op, const ir::OpAttrs& attrs,
                              const std::vector<expr::Expr>& es,
                              const std::vector<TensorType>& types) {
  return expression_entry(op, attrs, es, types).e;
}

ExprEntry& Worker::expression_entry(OpKind op, const ir::OpAttrs& attrs,
                                            const std::vector<expr::Expr>& es,
                                            const std::vector<TensorType>& types) {
  ExprKey key{};
  key.op = static_cast<int>(op);
  key.group = attrs.group;
  for (size_t i = 0; i < es.size() && i < key.in.size(); ++i) {
    key.in[i] = es[i];
    key.k[i] = types[i].shape[types[i].shape.rank - 1];
  }
  auto [it, fresh] = expr_cache_.try_emplace(key);
  if (fresh)
    it->second.e = expr::op_expression(c_.pool, op, attrs, es, types);
  return it->second;
}

size_t ContentHash::operator()(const Content& c) const {
  size_t h = hash_mix(static_cast<size_t>(c.type.dtype), reinterpret_cast<size_t>(c.e));
  for (int d = 0; d < c.type.shape.rank; ++d)
    h = hash_mix(h, static_cast<size_t>(c.type.shape[d]));
  for (int l : c.lab)
    h = hash_mix(h, static_cast<size_t>(static_cast<unsigned>(l)));
  return hash_finish(h);
}

uint32_t Worker::content_id(const TensorType& type, expr::Expr e, const Labels& lab) {
  Content c{type, e, lab};
  auto [it, fresh] = content_ids_.try_emplace(c, static_cast<uint32_t>(contents_.size()));
  if (fresh)
    contents_.push_back(std::move(c));
  return it->second;
}

std::unique_ptr<WorkerCache> CachePool::take() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      auto cache = std::move(free_.back());
      free_.pop_back();
      return cache;
    }
  }
  return std::make_unique<WorkerCache>(memo_slots_);
}

void CachePool::set_memo_slots(size_t slots) {
  std::lock_guard<std::mutex> lock(mu_);
  memo_slots_ = slots;
  free_.clear();
}

void CachePool::give(std::unique_ptr<WorkerCache> cache) {
  if (cache->entries() > kMaxEntries)
    return;
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(std::move(cache));
}

bool Worker::ranges_like_a_rigid_sum(int red, uint64_t summand) const {
  // In a block graph, a tile dim the grid or the loop splits down to one element has no
  // label (index_labels.h): the summand may miss those indices.
  uint64_t split = 0;
  if (frame_) {
    for (int g : frame_->grid_label)
      if (g >= 0 && g <= kMaxSummandClass)
        split |= uint64_t{1} << g;
    if (frame_->loop_label >= 0 && frame_->loop_label <= kMaxSummandClass)
      split |= uint64_t{1} << frame_->loop_label;
  }
  const auto& sums = c_.rigid_sums;
  for (auto it = std::lower_bound(sums.begin(), sums.end(), SumShape{red, 0});
       it != sums.end() && it->index == red; ++it)
    if ((summand & ~it->summand) == 0 && (it->summand & ~summand & ~split) == 0)
      return true;
  return false;
}

std::optional<std::pair<TensorType, Labels>> Worker::output_of(OpKind op, const ir::OpAttrs& attrs,
                                                               const std::vector<TensorType>& types,
                                                               const std::vector<Labels>& labs) {
  if (!shapes_may_fit(op, types)) {
    ++st_.pruned[PruneRule::kShape];
    return std::nullopt;
  }
  auto type = ir::infer_type(op, attrs, types);
  if (!type.ok()) {
    ++st_.pruned[PruneRule::kShape];
    return std::nullopt;
  }
  auto lab = labels_for(op, attrs, types, labs, *type);
  if (!lab)
    return std::nullopt;
  return std::make_pair(*type, *lab);
}

std::optional<Labels> Worker::labels_for(OpKind op, const ir::OpAttrs& attrs,
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
      ok = ranges_like_a_rigid_sum(red, r->summand[k]);
    // In the last block graph, a reduction over an index the grid splits stays partial:
    // no later kernel can add up the blocks' parts (split-KV needs a second kernel).
    if (ok && red >= 0 && frame_ && frame_->last)
      for (int g : frame_->grid_label)
        ok &= g != red;
  }
  if (!ok) {
    ++st_.pruned[PruneRule::kShape];
    return std::nullopt;
  }
  return r->out;
}

bool Worker::redundant(const std::vector<Tensor>& ts, const TensorType& type, expr::Expr e,
                       Phase phase) {
  for (const Tensor& t : ts)
    if (t.e == e && t.phase == phase && t.type == type)
      return true;
  return false;
}

bool Worker::anchor_used(int64_t anchor) const {
  const int code = static_cast<int>(c_.anchors[static_cast<size_t>(anchor)].op);
  if (frame_) {
    for (const BlockOpRec& op : frame_->ops)
      if (!op.acc && op.rank.code == code && op.rank.attr == anchor)
        return true;
    return false;
  }
  for (const KernelOpRec& op : kops_)
    if (!op.gd && op.rank.code == code && op.rank.attr == anchor)
      return true;
  return false;
}

void Worker::attr_choices(OpKind op, const std::vector<TensorType>& types,
                          const std::vector<expr::Expr>& es,
                          std::vector<std::pair<ir::OpAttrs, int64_t>>& out) {
  out.clear();
  if (op == OpKind::kSum) {
    const ir::Shape& s = types[0].shape;
    for (int d = 0; d < s.rank; ++d) {
      if (s[d] == 1)
        continue;
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
      if (an.op != op || anchor_used(static_cast<int64_t>(i)))
        continue;
      bool match = true;
      for (size_t j = 0; j < es.size() && match; ++j)
        match = c_.oracle.equivalent(es[j], an.inputs[j]).value_or(false);
      if (match)
        out.push_back({an.attrs, static_cast<int64_t>(i)});
    }
    return;
  }
  out.push_back({ir::OpAttrs{}, 0});
}

Worker::OpScratch& Worker::scratch(std::deque<OpScratch>& pool, size_t depth,
                                   const std::vector<int>& in, const std::vector<Tensor>& ts) {
  while (pool.size() <= depth)
    pool.emplace_back();
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

void Worker::kernel_step() {
  if (!poll())
    return;
  ++st_.kernel_states;
  if (!kops_.empty())
    try_complete_kernel();
  if (static_cast<int>(kops_.size()) >= c_.opt.max_kernel_ops)
    return;
  if (!kernel_can_finish())
    return;
  const int n = static_cast<int>(kt_.size());
  const int lo = kops_.empty() ? 0 : kops_.back().rank.in[0];
  std::vector<int> tuple;
  for (OpKind op : c_.kernel_ops) {
    const int arity = ir::op_info(op).arity;
    for_each_tuple(n, arity, lo, commutative(op), tuple,
                   [&](const std::vector<int>& in) { try_kernel_op(op, in); });
    if (stopped_)
      return;
  }
  if (gd_count_ < c_.opt.max_graph_defined_ops)
    graph_defined_ops(n, lo);
}

bool Worker::kernel_can_finish() const {
  int unconsumed = 0;
  for (size_t i = c_.program.inputs.size(); i < kt_.size(); ++i)
    unconsumed += kt_[i].uses == 0;
  const int need = unconsumed - static_cast<int>(c_.program.outputs.size());
  const int left = c_.opt.max_kernel_ops - static_cast<int>(kops_.size());
  // Every program input must be read by some op (the program reads them all).
  if (unread_inputs() > left * c_.max_arity_kernel)
    return false;
  return need <= left * std::max(c_.max_arity_kernel - 1, 1);
}

bool Worker::last_op_may_complete(const std::vector<int>& in) const {
  const int n_inputs = static_cast<int>(c_.program.inputs.size());
  int left_open = 0;
  for (int i = 0; i < static_cast<int>(kt_.size()); ++i) {
    if (kt_[i].uses > 0 || std::find(in.begin(), in.end(), i) != in.end())
      continue;
    if (i < n_inputs)
      return false;
    bool is_output = false;
    for (size_t o = 0; o < c_.program.outputs.size() && !is_output; ++o)
      is_output = c_.oracle.equals_output(kt_[i].e, o).value_or(true);
    if (!is_output)
      return false;
    ++left_open;
  }
  return left_open < static_cast<int>(c_.program.outputs.size());
}

int Worker::unread_inputs() const {
  int n = 0;
  for (size_t i = 0; i < c_.program.inputs.size(); ++i)
    n += kt_[i].uses == 0;
  return n;
}

void Worker::try_kernel_op(OpKind op, const std::vector<int>& in) {
  for (int i : in)
    if (kt_[i].partial())
      return;  // partial sums are added up by a block graph's loop
  if (last_kernel_op() && !last_op_may_complete(in))
    return;
  OpScratch& sc = scratch(kernel_scratch_, kops_.size(), in, kt_);
  attr_choices(op, sc.types, sc.es, sc.choices);
  const auto& [types, es, labs, choices] = sc;
  for (const auto& [attrs, attr_code] : choices) {
    const Rank rank = make_rank(in, static_cast<int>(op), attr_code);
    if (!kops_.empty() && !(kops_.back().rank < rank))
      continue;
    if (not_my_root_choice())
      continue;
    auto out = output_of(op, attrs, types, labs);
    if (!out)
      continue;
    const auto& [type, lab] = *out;
    expr::Expr e = expression(op, attrs, es, types);
    if (redundant(kt_, type, e, Phase::kInLoop)) {
      ++st_.pruned[PruneRule::kRedundant];
      continue;
    }
    if (!oracle_keeps(e))
      continue;
    note_depth(static_cast<int>(kops_.size()) + 1, e);
    KernelOpRec rec{false, op, attrs, in, {static_cast<int>(kt_.size())}, nullptr, rank};
    push_kernel(std::move(rec), {{type, e, 0, Phase::kInLoop, lab, false}});
    kernel_step();
    pop_kernel();
    if (stopped_)
      return;
  }
}

void Worker::push_kernel(KernelOpRec rec, const std::vector<Tensor>& outs) {
  for (int i : rec.in)
    ++kt_[i].uses;
  for (const Tensor& t : outs)
    kt_.push_back(t);
  gd_count_ += rec.gd;
  kops_.push_back(std::move(rec));
}

void Worker::pop_kernel() {
  const KernelOpRec& rec = kops_.back();
  for (int i : rec.in)
    --kt_[i].uses;
  kt_.resize(kt_.size() - rec.out.size());
  gd_count_ -= rec.gd;
  kops_.pop_back();
}

void Worker::graph_defined_ops(int n, int lo) {
  // Input sets: ascending index lists of size 1..max_kernel_op_inputs with max >= lo.
  const int max_in = std::min(c_.opt.max_kernel_op_inputs, n);
  std::vector<int> set;
  std::function<void(int)> rec = [&](int next) {
    if (!set.empty() && set.back() >= lo && (!last_kernel_op() || last_op_may_complete(set))) {
      const Rank rank = make_rank(set, kCodeGraphDefined, 0);
      if (kops_.empty() || kops_.back().rank < rank)
        for (size_t b = 0; b < c_.blocks.size(); ++b) {
          if (not_my_root_choice(set, static_cast<int>(b), rank))
            continue;
          start_block(set, static_cast<int>(b), rank);
          if (stopped_)
            return;
        }
    }
    if (static_cast<int>(set.size()) == max_in)
      return;
    for (int i = next; i < n; ++i) {
      set.push_back(i);
      rec(i + 1);
      set.pop_back();
      if (stopped_)
        return;
    }
  };
  rec(0);
}

void Worker::try_complete_kernel() {
  std::vector<int> open;
  for (size_t i = c_.program.inputs.size(); i < kt_.size(); ++i)
    if (kt_[i].uses == 0)
      open.push_back(static_cast<int>(i));
  const size_t nout = c_.program.outputs.size();
  if (open.size() != nout)
    return;
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
      complete_keys_.push_back(replay_key_);
      return;
    }
  } while (std::next_permutation(perm.begin(), perm.end()));
}

ir::KernelGraph Worker::build_kernel_graph(const std::vector<int>& outputs) const {
  ir::KernelBuilder kb;
  std::vector<ir::TensorId> id(kt_.size(), -1);
  auto name_of = [&](int t) -> std::string {
    for (size_t i = 0; i < outputs.size(); ++i)
      if (outputs[i] == t)
        return c_.program.tensor(c_.program.outputs[i]).name;
    return "";
  };
  for (size_t i = 0; i < c_.program.inputs.size(); ++i) {
    const ir::Tensor& in = c_.program.tensor(c_.program.inputs[i]);
    id[i] = kb.input(in.name, in.type).value();
  }
  for (const KernelOpRec& op : kops_) {
    std::vector<ir::TensorId> ins;
    for (int i : op.in)
      ins.push_back(id[i]);
    if (!op.gd) {
      id[op.out[0]] = kb.op(op.op, ins, op.attrs, name_of(op.out[0])).value();
      continue;
    }
    std::vector<std::string> names;
    for (int o : op.out)
      names.push_back(name_of(o));
    auto outs = kb.graph_defined(ins, op.block, names).value();
    for (size_t j = 0; j < outs.size(); ++j)
      id[op.out[j]] = outs[j];
  }
  for (int o : outputs)
    MG_CHECK(kb.output(id[o]).ok(), "search: output");
  return std::move(kb).finish().value();
}

}  // namespace enumeration

using enumeration::abstracted;
using enumeration::Anchor;
using enumeration::kMaxRankInputs;
using enumeration::Worker;
using ir::OpKind;

std::vector<OpKind> default_ops(const ir::KernelGraph& program, bool kernel_level) {
  std::set<OpKind> ops;
  for (const ir::KernelOp& op : program.ops)
    if (!op.graph_defined)
      ops.insert(op.op);
  if (kernel_level && ops.count(OpKind::kMatmul) && ops.count(OpKind::kAdd))
    ops.insert(OpKind::kConcatMatmul);
  if (!kernel_level)
    ops.erase(OpKind::kConcatMatmul);
  std::vector<OpKind> out;
  const unsigned level = kernel_level ? ir::kLevelK : ir::kLevelB;
  for (OpKind k : ops)
    if (ir::op_info(k).levels & level)
      out.push_back(k);
  return out;
}

Enumerator::Enumerator(const ir::KernelGraph& program, const SearchOptions& options,
                       expr::ExprPool& pool, expr::Oracle& oracle)
    : cfg_(std::make_unique<Config>(program, options, pool, oracle)) {
  Config& c = *cfg_;
  c.kernel_ops = options.kernel_ops.empty() ? default_ops(program, true) : options.kernel_ops;
  c.block_ops = options.block_ops.empty() ? default_ops(program, false) : options.block_ops;
  for (OpKind k : c.kernel_ops)
    c.max_arity_kernel = std::max(c.max_arity_kernel, ir::op_info(k).arity);
  if (options.max_graph_defined_ops > 0)
    c.max_arity_kernel = std::max(c.max_arity_kernel, options.max_kernel_op_inputs);
  for (OpKind k : c.block_ops)
    c.max_arity_block = std::max(c.max_arity_block, ir::op_info(k).arity);
  c.bound_steps = options.prune && options.prune_by_steps &&
                  oracle.steps_to_output(oracle.program().front()).has_value() &&
                  std::all_of(c.block_ops.begin(), c.block_ops.end(), expr::adds_one_step);
  MG_CHECK(options.max_kernel_op_inputs <= kMaxRankInputs,
           "max_kernel_op_inputs above " << kMaxRankInputs);

  const expr::GraphExprs ge = expr::abstract_expressions(program, pool);
  for (ir::TensorId id : program.inputs)
    c.input_exprs.push_back(ge.tensors[id]);
  ProgramLabels pl = program_labels(program);
  c.input_labels = std::move(pl.inputs);
  c.reduced = std::move(pl.reduced);
  c.reduced_by_every_output = std::move(pl.reduced_by_every_output);
  c.rigid_sums = std::move(pl.rigid_sums);
  c.freely_summed = std::move(pl.freely_summed);
  for (const ir::KernelOp& op : program.ops) {
    if (op.graph_defined || !abstracted(op.op))
      continue;
    Anchor a{op.op, op.attrs, {}};
    for (ir::TensorId i : op.inputs)
      a.inputs.push_back(ge.tensors[i]);
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
    for (int64_t d : dims)
      divides |= d % s == 0;
    if (divides)
      sizes.push_back(s);
  }
  if (std::find(sizes.begin(), sizes.end(), 1) == sizes.end())
    sizes.insert(sizes.begin(), 1);
  for (int64_t x : sizes)
    for (int64_t y : sizes)
      for (int64_t z : sizes) {
        const int dims_used = (x > 1) + (y > 1) + (z > 1);
        if (dims_used > options.max_grid_dims)
          continue;
        if ((y > 1 && x == 1) || (z > 1 && y == 1))
          continue;  // grid dims in order x, y, z
        const int64_t blocks = x * y * z;
        if (blocks < options.min_blocks || blocks > options.max_blocks)
          continue;
        for (int64_t r : options.forloop_ranges)
          c.blocks.push_back({ir::Dim3{{x, y, z}}, r});
      }
  // Coarsest grids (fewest blocks) first: what a time budget reaches first; the same
  // candidates.
  if (options.coarse_grids_first)
    std::stable_sort(c.blocks.begin(), c.blocks.end(), [](const auto& a, const auto& b) {
      return a.grid[0] * a.grid[1] * a.grid[2] < b.grid[0] * b.grid[1] * b.grid[2];
    });

  auto cache = c.caches.take();
  Worker counter(c, -1, nullptr, *cache);
  counter.run();
  c.caches.give(std::move(cache));
  const std::vector<int>& parts = counter.root_parts();
  for (int r = 0; r < static_cast<int>(parts.size()); ++r) {
    if (parts[static_cast<size_t>(r)] == 0)
      c.tasks.push_back({r, -1});
    for (int p = 0; p < parts[static_cast<size_t>(r)]; ++p)
      c.tasks.push_back({r, p});
  }
}

Enumerator::~Enumerator() = default;

int Enumerator::task_count() const { return static_cast<int>(cfg_->tasks.size()); }

void Enumerator::check_memo(size_t slots) {
  MG_CHECK(slots > 0 && (slots & (slots - 1)) == 0, "check_memo: " << slots << " slots");
  cfg_->check_memo = true;
  cfg_->caches.set_memo_slots(slots);  // the counting pass's cache had the default
}

std::string Enumerator::describe() const {
  const Config& c = *cfg_;
  std::ostringstream os;
  auto list = [&](const std::vector<OpKind>& ops) {
    for (size_t i = 0; i < ops.size(); ++i)
      os << (i ? "," : "") << ir::op_name(ops[i]);
  };
  os << "kernel ops {";
  list(c.kernel_ops);
  os << "}, block ops {";
  list(c.block_ops);
  os << "}, " << c.blocks.size() << " block configurations (grid x range), " << c.tasks.size()
     << " tasks";
  return os.str();
}

}  // namespace mugraph::search
