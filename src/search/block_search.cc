// The block level of the enumerator (Mirage Algorithm 1 lines 21-28): for a graph-defined op
// over some kernel tensors and one grid x for-loop configuration, every block graph in
// canonical order (iterator maps, block ops, accumulators), completed with output maps.
#include <algorithm>
#include <functional>
#include <sstream>

#include "ir/builder.h"
#include "search/worker.h"

namespace mugraph::search::enumeration {

void Worker::start_block(const std::vector<int>& kin, int config, const Rank& rank) {
  // As the last kernel op, the block graph must produce the program's outputs itself.
  const bool last = last_kernel_op();
  const bool split = splits_root_block();
  std::vector<std::pair<expr::Expr, std::string>> key_in;
  for (int k : kin)
    key_in.push_back({kt_[k].e, kt_[k].type.to_string()});
  auto key = std::make_pair(key_in, (config * 2 + last) * 2 + split);
  if (counting_) {  // counts the first ops of a root choice's block search (no memo: it
    std::vector<DoneBlock> none;  // finds nothing)
    search_blocks(kin, c_.blocks[static_cast<size_t>(config)], last, split, none);
    return;
  }
  auto it = memo_.find(key);
  if (it == memo_.end()) {
    std::vector<DoneBlock> done;
    search_blocks(kin, c_.blocks[static_cast<size_t>(config)], last, split, done);
    it = memo_.emplace(std::move(key), std::move(done)).first;
  }
  for (const DoneBlock& d : it->second) {
    if (stopped_)
      return;
    replay_key_ = d.key;
    const Window window(*this, piece_ && split);  // a piece's block graphs are all its own
    bool fresh = true;
    for (const Tensor& t : d.outs)
      fresh &= !redundant(kt_, t.type, t.e, Phase::kInLoop);
    if (!fresh) {
      ++st_.pruned[PruneRule::kRedundant];
      continue;
    }
    KernelOpRec rec;
    rec.gd = true;
    rec.in = kin;
    rec.rank = rank;
    rec.block = d.block;
    for (size_t j = 0; j < d.outs.size(); ++j)
      rec.out.push_back(static_cast<int>(kt_.size() + j));
    push_kernel(std::move(rec), d.outs);
    kernel_step();
    pop_kernel();
  }
}

void Worker::search_blocks(const std::vector<int>& kin, const BlockConfig& bc, bool last,
                           bool split, std::vector<DoneBlock>& done) {
  BlockFrame f;
  f.cfg = bc;
  f.kin = kin;
  f.last = last;
  f.split = split;
  f.max_outputs = last ? static_cast<int>(c_.program.outputs.size()) : c_.opt.max_block_outputs;
  for (int k : kin) {
    // A tile that alone overflows shared memory can never be chosen.
    std::vector<IterChoice> cs;
    for (IterChoice& ch : iterator_choices(kt_[k].type, bc.grid, bc.forloop)) {
      if (ch.tile.bytes() > c_.opt.target.shared_memory_per_block) {
        ++st_.pruned[PruneRule::kMemory];
        continue;
      }
      if (last && splits_an_index_every_output_sums(kt_[k].lab, ch)) {
        ++st_.pruned[PruneRule::kShape];
        continue;
      }
      if (kt_[k].partial() && !reads_one_part_per_iteration(kt_[k], ch, bc.forloop)) {
        ++st_.pruned[PruneRule::kShape];
        continue;
      }
      cs.push_back(std::move(ch));
    }
    unsigned bits = 0;
    for (const IterChoice& ch : cs)
      bits |= map_bits(ch);
    f.can_map.push_back(bits);
    std::vector<uint32_t> ids;
    for (const IterChoice& ch : cs)
      ids.push_back(content_id(ch.tile, kt_[k].e, kt_[k].lab));
    f.choice_ids.push_back(std::move(ids));
    f.choices.push_back(std::move(cs));
    f.t.push_back({TensorType{}, kt_[k].e, 0, Phase::kInLoop, kt_[k].lab, false, 0, kt_[k].parts});
    if (last)
      f.t.back().steps = ask_oracle(kt_[k].e).steps;
    f.chosen.push_back(-1);
  }
  // Every grid dim of size > 1 must be able to partition some input.
  for (int g = 0; g < 3; ++g) {
    if (bc.grid[g] == 1)
      continue;
    bool any = false;
    for (const auto& cs : f.choices)
      for (const IterChoice& ch : cs)
        any |= ch.imap[g] != ir::kReplica;
    if (!any) {
      ++st_.pruned[PruneRule::kShape];
      return;
    }
  }
  frame_ = &f;
  done_ = &done;
  block_step();
  frame_ = nullptr;
  done_ = nullptr;
}

bool Worker::splits_an_index_every_output_sums(const Labels& lab, const IterChoice& ch) const {
  for (int g = 0; g < 3; ++g) {
    if (ch.imap[g] == ir::kReplica)
      continue;
    const int label = lab[ch.imap[g]];
    if (label >= 0 && c_.reduced_by_every_output[static_cast<size_t>(label)])
      return true;
  }
  return false;
}

bool Worker::reads_one_part_per_iteration(const Tensor& t, const IterChoice& ch, int64_t range) {
  int dims = 0;
  for (int d = 0; d < ir::kMaxRank; ++d)
    dims += t.parts[d] > 0;
  if (dims != 1 || ch.fmap == ir::kReplica || t.parts[ch.fmap] != range)
    return false;
  for (int g = 0; g < 3; ++g)
    if (ch.imap[g] != ir::kReplica && t.parts[ch.imap[g]] > 0)
      return false;
  return true;
}

void Worker::block_step() {
  if (!poll())
    return;
  ++st_.block_states;
  BlockFrame& f = *frame_;
  try_complete_block();
  if (block_compute_ops() >= c_.opt.max_block_ops || stopped_)
    return;
  if (!block_can_finish())
    return;
  const int n = static_cast<int>(f.t.size());
  const int lo = f.ops.empty() ? 0 : f.ops.back().rank.in[0];
  std::vector<int> tuple;
  for (OpKind op : c_.block_ops) {
    const int arity = ir::op_info(op).arity;
    // No attribute can put these inputs after the last op in canonical order: skip them
    // before enumerating the map choices of the iterators among them.
    const int code = static_cast<int>(op);
    for_each_tuple(n, arity, lo, commutative(op), tuple, [&](const std::vector<int>& in) {
      if (!f.ops.empty() && !(f.ops.back().rank < make_rank(in, code, kMaxAttr)))
        return;
      with_iterators(in, 0, [&] { try_block_op(op, in); });
    });
    if (stopped_)
      return;
  }
  // Accumulators take computed tensors (accumulating an input tile is a copy or a plain sum,
  // which a sum op in the loop or a predefined kernel does as well), and inputs of partial
  // sums, which nothing else may read (their parts are interleaved with another index).
  if (f.cfg.forloop > 1) {
    const int n_in = static_cast<int>(f.kin.size());
    for (int i = lo; i < n_in && !stopped_; ++i)
      if (f.t[i].partial())
        try_partial_sum_accumulator(i);
    for (int i = std::max(lo, n_in); i < n && !stopped_; ++i)
      try_accumulators(i);
  }
}

void Worker::try_partial_sum_accumulator(int i) {
  BlockFrame& f = *frame_;
  const Rank rank = make_rank({i}, kCodeAccumulator, ir::kReplica + 1);
  if (!f.ops.empty() && !(f.ops.back().rank < rank))
    return;
  with_iterators({i}, 0, [&] {
    const int out = static_cast<int>(f.t.size());
    add_block_tensor(
        {f.t[i].type, c_.pool.sum(f.cfg.forloop, f.t[i].e), 0, Phase::kPostLoop, f.t[i].lab, false},
        true, nullptr,
        [&] { return BlockOpRec{true, OpKind::kAdd, {}, ir::kReplica, {i}, out, rank}; });
  });
}

template <class Fn> void Worker::with_iterators(const std::vector<int>& in, size_t k, Fn&& fn) {
  BlockFrame& f = *frame_;
  for (; k < in.size(); ++k) {
    const int i = in[k];
    if (i >= static_cast<int>(f.kin.size()) || f.chosen[i] >= 0)
      continue;
    for (size_t c = 0; c < f.choices[i].size() && !stopped_; ++c) {
      const IterChoice& ch = f.choices[i][c];
      const int64_t bytes = ch.tile.bytes();
      if (f.smem + bytes > c_.opt.target.shared_memory_per_block) {
        ++st_.pruned[PruneRule::kMemory];
        continue;
      }
      // One index per grid dim and one for the loop, whichever input they split.
      const auto saved_grid = f.grid_label;
      const int saved_loop = f.loop_label;
      bool fits = true;
      auto claim = [&](int& slot, int label) {
        if (label == kAnyLabel || label < 0)
          return;
        if (slot == kAnyLabel)
          slot = label;
        else
          fits &= slot == label;
      };
      for (int g = 0; g < 3; ++g)
        if (ch.imap[g] != ir::kReplica)
          claim(f.grid_label[static_cast<size_t>(g)], f.t[i].lab[ch.imap[g]]);
      // The loop over partial sums runs over the parts, not over the index of one part.
      if (ch.fmap != ir::kReplica && !f.t[i].partial())
        claim(f.loop_label, f.t[i].lab[ch.fmap]);
      if (!fits) {
        f.grid_label = saved_grid;
        f.loop_label = saved_loop;
        ++st_.pruned[PruneRule::kShape];
        continue;
      }
      f.chosen[i] = static_cast<int>(c);
      f.t[i].type = ch.tile;
      f.t[i].id = f.choice_ids[i][c];
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

bool Worker::block_can_finish() const {
  const BlockFrame& f = *frame_;
  const int left = c_.opt.max_block_ops - block_compute_ops();
  int need = 0, open_in = 0, open_post = 0;
  for (size_t i = 0; i < f.t.size(); ++i) {
    if (f.t[i].uses == 0 && f.t[i].steps > left)
      return false;  // unused, and too far from the outputs (add_block_tensor)
    if (i < f.kin.size()) {
      need += f.t[i].uses == 0;
      continue;
    }
    if (f.t[i].uses > 0)
      continue;
    if (f.cfg.forloop > 1 && f.t[i].phase == Phase::kInLoop)
      ++open_in;
    else
      ++open_post;
  }
  need += open_in;
  need += std::max(0, open_post - f.max_outputs);
  if (open_in + open_post > c_.opt.max_open_tensors)
    return false;
  if (!maps_still_possible())
    return false;
  return need <= left * std::max(c_.max_arity_block - 1, 1);
}

unsigned Worker::map_bits(const IterChoice& ch) {
  unsigned bits = ch.fmap != ir::kReplica ? 8u : 0u;
  for (int g = 0; g < 3; ++g)
    bits |= ch.imap[g] != ir::kReplica ? 1u << g : 0u;
  return bits;
}

bool Worker::maps_still_possible() const {
  const BlockFrame& f = *frame_;
  unsigned need = f.cfg.forloop > 1 ? 8u : 0u, have = 0;
  for (int g = 0; g < 3; ++g)
    need |= f.cfg.grid[g] > 1 ? 1u << g : 0u;
  for (size_t i = 0; i < f.kin.size(); ++i)
    have |=
        f.chosen[i] >= 0 ? map_bits(f.choices[i][static_cast<size_t>(f.chosen[i])]) : f.can_map[i];
  return (need & ~have) == 0;
}

void Worker::try_block_op(OpKind op, const std::vector<int>& in) {
  BlockFrame& f = *frame_;
  const Phase phase = f.t[in[0]].phase;
  // With a loop, reductions belong in it: post-loop ops are element-wise (the epilogue).
  if (phase == Phase::kPostLoop && f.cfg.forloop > 1 && !ir::is_elementwise(op))
    return;
  bool loop_dep = false;
  for (int i : in) {
    if (f.t[i].phase != phase)
      return;  // ops never mix phases
    if (f.t[i].partial())
      return;  // one part of partial sums: only accumulated
    loop_dep |= f.t[i].loop_dep;
  }
  // An op with one attribute choice (rank attribute 0) whose shapes cannot fit: cut here as the
  // loop below would (same rule, same count), before copying its operands.
  if (in.size() == 2 && op != OpKind::kSum && !abstracted(op)) {
    if (!f.ops.empty() && !(f.ops.back().rank < make_rank(in, static_cast<int>(op), 0)))
      return;
    if (!shapes_may_fit(op, f.t[in[0]].type.shape, f.t[in[1]].type.shape)) {
      ++st_.pruned[PruneRule::kShape];
      return;
    }
  }
  // Most ops have one attribute choice; sums and abstracted ops read their operands for them.
  static const std::vector<std::pair<ir::OpAttrs, int64_t>> kOneChoice{{ir::OpAttrs{}, 0}};
  OpScratch* sc = nullptr;
  const std::vector<std::pair<ir::OpAttrs, int64_t>>* choices = &kOneChoice;
  if (op == OpKind::kSum || abstracted(op)) {
    sc = &scratch(block_scratch_, f.ops.size(), in, f.t);
    attr_choices(op, sc->types, sc->es, sc->choices);
    choices = &sc->choices;
  }
  for (const auto& [attrs, attr_code] : *choices) {
    const Rank rank = make_rank(in, static_cast<int>(op), attr_code);
    if (!f.ops.empty() && !(f.ops.back().rank < rank))
      continue;
    OpMemoSlot* r = block_op_result(op, attrs, attr_code, in, sc);
    if (!r)
      continue;
    // Copied out: the recursion below may reuse the slot (and grow contents_). The slot's
    // entry keeps the oracle's answer: add_block_tensor asks it before the recursion.
    ExprEntry* entry = &r->entry;
    const Content& out = contents_[r->result];
    Tensor t{out.type, out.e, 0, phase, out.lab, loop_dep};
    t.id = r->result;
    const int id = static_cast<int>(f.t.size());
    add_block_tensor(t, !abstracted(op), entry,
                     [&] { return BlockOpRec{false, op, attrs, ir::kReplica, in, id, rank}; });
    if (stopped_)
      return;
  }
}

OpMemoSlot* Worker::block_op_result(OpKind op, const ir::OpAttrs& attrs, int64_t attr_code,
                                    const std::vector<int>& in, OpScratch*& sc) {
  const BlockFrame& f = *frame_;
  const uint32_t a = f.t[static_cast<size_t>(in[0])].id;
  const uint32_t b = in.size() > 1 ? f.t[static_cast<size_t>(in[1])].id : 0;
  MG_CHECK(a != 0 && (in.size() == 1 || b != 0), "block op memo: an input without content id");
  const int op_last = static_cast<int>(op) * 2 + (f.last ? 1 : 0);
  MG_CHECK(attr_code >= 0 && attr_code <= std::numeric_limits<int>::max(),
           "block op memo: rank attribute " << attr_code);
  const int attr = static_cast<int>(attr_code);
  const std::array<int, 4> labels{f.grid_label[0], f.grid_label[1], f.grid_label[2],
                                  f.loop_label};
  size_t h = hash_mix(static_cast<size_t>(op_last), static_cast<size_t>(attr_code));
  h = hash_mix(h, (size_t{a} << 32) | b);
  for (int l : labels)
    h = hash_mix(h, static_cast<size_t>(static_cast<unsigned>(l)));
  OpMemoSlot& s =
      in.size() > 2 ? wide_slot_ : op_memo_[hash_finish(h) & (op_memo_.size() - 1)];
  if (in.size() <= 2 && s.filled && s.attr == attr && s.a == a && s.b == b &&
      s.op_last == op_last && s.labels == labels) {
    if (c_.check_memo)
      check_memo_hit(op, attrs, in, s);
    if (s.result == 0) {
      ++st_.pruned[PruneRule::kShape];  // as output_of counted it the first time
      return nullptr;
    }
    return &s;
  }
  if (!sc)
    sc = &scratch(block_scratch_, f.ops.size(), in, f.t);
  auto out = output_of(op, attrs, sc->types, sc->labs);  // counts a shape prune
  ExprEntry entry = out ? expression_entry(op, attrs, sc->es, sc->types) : ExprEntry{};
  const uint32_t result = out ? content_id(out->first, entry.e, out->second) : 0;
  s = OpMemoSlot{true, op_last, attr, a, b, labels, result, entry};
  return result ? &s : nullptr;
}

void Worker::check_memo_hit(OpKind op, const ir::OpAttrs& attrs, const std::vector<int>& in,
                            const OpMemoSlot& s) {
  const PruneCounts counted = st_.pruned;  // the recomputation counts nothing
  OpScratch& sc = scratch(block_scratch_, frame_->ops.size(), in, frame_->t);
  auto out = output_of(op, attrs, sc.types, sc.labs);
  st_.pruned = counted;
  const expr::Expr e = out ? expression(op, attrs, sc.es, sc.types) : nullptr;
  const uint32_t result = out ? content_id(out->first, e, out->second) : 0;
  std::ostringstream on;
  for (size_t i = 0; i < in.size(); ++i)
    on << (i ? "," : "") << in[i];
  MG_CHECK(result == s.result && (!out || e == s.entry.e),
           "block op memo: a stale answer for " << ir::op_name(op) << " on block tensors "
                                                << on.str());
}

void Worker::try_accumulators(int i) {
  BlockFrame& f = *frame_;
  if (f.t[i].phase != Phase::kInLoop)
    return;
  // Only a tensor that varies with the loop is accumulated: summed (phi) if the loop's
  // index was reduced inside the tile, concatenated along the dim that carries it otherwise.
  if (!f.t[i].loop_dep)
    return;
  // Copies: add_block_tensor grows f.t, which would leave references dangling.
  const TensorType in = f.t[i].type;
  const Labels lab = f.t[i].lab;
  int loop_dim = ir::kReplica;
  for (int d = 0; d < in.shape.rank; ++d)
    if (f.loop_label != kAnyLabel && lab[d] == f.loop_label)
      loop_dim = d;
  for (int fmap = ir::kReplica; fmap < in.shape.rank && !stopped_; ++fmap) {
    if (f.loop_label != kAnyLabel && fmap != loop_dim)
      continue;
    const Rank rank = make_rank({i}, kCodeAccumulator, fmap + 1);
    if (!f.ops.empty() && !(f.ops.back().rank < rank))
      continue;
    ir::Shape s = in.shape;
    if (fmap != ir::kReplica)
      s[fmap] *= f.cfg.forloop;
    expr::Expr e = fmap == ir::kReplica ? c_.pool.sum(f.cfg.forloop, f.t[i].e) : f.t[i].e;
    const int out = static_cast<int>(f.t.size());
    add_block_tensor({TensorType::make(in.dtype, s), e, 0, Phase::kPostLoop, lab, false}, true,
                     nullptr,
                     [&] { return BlockOpRec{true, OpKind::kAdd, {}, fmap, {i}, out, rank}; });
  }
}

template <class MakeRec>
void Worker::add_block_tensor(const Tensor& t, bool check_redundant, ExprEntry* entry,
                              MakeRec&& make_rec) {
  if (not_my_block_part())
    return;
  const size_t m = frame_->ops.size();
  if (!frame_->split) {
    place_block_tensor(t, check_redundant, entry, make_rec);
    return;
  }
  if (m == 0) {  // the task's first op (its part): level 1 starts
    counter_[1] = 0;
    key_[1] = 0;
    hi_[1] = level_ == 1 ? range_.hi : PieceRange::kNoEnd;
    place_block_tensor(t, check_redundant, entry, make_rec);
    return;
  }
  // A choice at level m, numbered before the memory, redundancy, oracle and steps rules: this
  // worker's, or skipped (PIECES OF A TASK).
  const int c = counter_[m]++;
  if (my_choice(m, c)) {
    if (split_off_ && !stopped_ && static_cast<int>(m) >= level_ && spare_->wanted())
      split_rest(m, c);  // not on the path to this piece's level: that is its parent's
    cur_[m] = c;
    key_[m] = 2 * c + 1;
    counter_[m + 1] = 0;
    key_[m + 1] = 0;
    hi_[m + 1] = static_cast<int>(m) + 1 == level_ ? range_.hi : PieceRange::kNoEnd;
    const Window window(*this, piece_ && static_cast<int>(m) == level_);
    place_block_tensor(t, check_redundant, entry, make_rec);
  }
  key_[m] = 2 * c + 2;
}

template <class MakeRec>
void Worker::place_block_tensor(const Tensor& t, bool check_redundant, ExprEntry* entry,
                                MakeRec& make_rec) {
  BlockFrame& f = *frame_;
  const int64_t bytes = t.type.bytes();
  if (f.smem + bytes > c_.opt.target.shared_memory_per_block) {
    ++st_.pruned[PruneRule::kMemory];
    return;
  }
  if (check_redundant && redundant(f.t, t.type, t.e, t.phase)) {
    ++st_.pruned[PruneRule::kRedundant];
    return;
  }
  const OracleAnswer& answer = entry ? ask_oracle(*entry) : ask_oracle(t.e);
  if (!answer.keep) {
    ++st_.pruned[PruneRule::kOracle];
    return;
  }
  // The last block graph must carry every tensor to a program output within the ops left.
  if (f.last && answer.steps > c_.opt.max_block_ops - block_compute_ops() - 1) {
    ++st_.pruned[PruneRule::kSteps];
    return;
  }
  note_depth(static_cast<int>(kops_.size()) + block_compute_ops() + 1, t.e);
  f.ops.push_back(make_rec());
  const std::vector<int>& in = f.ops.back().in;
  for (int i : in)
    ++f.t[i].uses;
  f.t.push_back(t);
  f.t.back().steps = f.last ? answer.steps : 0;
  if (!t.id)
    f.t.back().id = content_id(t.type, t.e, t.lab);
  f.smem += bytes;
  block_step();
  f.smem -= bytes;
  f.t.pop_back();
  for (int i : f.ops.back().in)
    --f.t[i].uses;
  f.ops.pop_back();
}

void Worker::try_complete_block() {
  BlockFrame& f = *frame_;
  const size_t n_in = f.kin.size();
  for (size_t i = 0; i < n_in; ++i)
    if (f.chosen[i] < 0)
      return;
  for (int g = 0; g < 3; ++g) {
    if (f.cfg.grid[g] == 1)
      continue;
    bool mapped = false;
    for (size_t i = 0; i < n_in; ++i)
      mapped |= f.choices[i][f.chosen[i]].imap[g] != ir::kReplica;
    if (!mapped)
      return;  // the blocks along g would all compute the same thing
  }
  if (f.cfg.forloop > 1) {
    bool tiled = false;
    for (size_t i = 0; i < n_in; ++i)
      tiled |= f.choices[i][f.chosen[i]].fmap != ir::kReplica;
    if (!tiled)
      return;  // every iteration would be the same
  }
  std::vector<int> outs;
  for (size_t i = n_in; i < f.t.size(); ++i) {
    if (f.t[i].uses > 0)
      continue;
    if (f.cfg.forloop > 1 && f.t[i].phase != Phase::kPostLoop)
      return;
    outs.push_back(static_cast<int>(i));
  }
  if (outs.empty() || static_cast<int>(outs.size()) > f.max_outputs)
    return;
  if (f.last) {
    if (outs.size() != c_.program.outputs.size())
      return;
    for (int o : outs) {
      bool matches = false;
      for (size_t i = 0; i < c_.program.outputs.size() && !matches; ++i)
        matches = c_.oracle.equals_output(f.t[o].e, i).value_or(true);
      if (!matches)
        return;
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
        if (m[g] == ir::kReplica || f.grid_label[static_cast<size_t>(g)] == kAnyLabel)
          continue;
        const int lab = f.t[o].lab[m[g]];
        if (writes_partial_sums(f.t[o].lab, g))
          follows &= m[g] == partial_sums_dim(m, g, f.t[o].type.shape.rank);
        else
          follows &= lab == kAnyLabel || lab == -1 || lab == f.grid_label[static_cast<size_t>(g)];
      }
      if (follows)
        ms.push_back(m);
    }
    if (ms.empty())
      return;
    omaps.push_back(std::move(ms));
  }
  std::vector<ir::DimMap> pick(outs.size());
  std::function<void(size_t)> rec = [&](size_t k) {
    if (stopped_)
      return;
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

bool Worker::writes_partial_sums(const Labels& lab, int g) const {
  const int split = frame_->grid_label[static_cast<size_t>(g)];
  if (frame_->last || split < 0 || !c_.reduced[static_cast<size_t>(split)])
    return false;
  return std::find(lab.begin(), lab.end(), split) == lab.end();
}

int Worker::partial_sums_dim(const ir::DimMap& m, int g, int rank) {
  for (int d = rank - 1; d >= 0; --d) {
    bool taken = false;
    for (int h = 0; h < 3; ++h)
      taken |= h != g && m[h] == d;
    if (!taken)
      return d;
  }
  return ir::kReplica;
}

void Worker::finish_block(const std::vector<int>& outs, const std::vector<ir::DimMap>& omaps) {
  if (outside_window())
    return;  // a piece's walk to its choices: the task's own
  BlockFrame& f = *frame_;
  DoneBlock d;
  d.key.assign(key_.begin() + 1, key_.begin() + 1 + static_cast<std::ptrdiff_t>(f.ops.size()));
  for (size_t j = 0; j < outs.size(); ++j) {
    Tensor t{saved_type(f.t[outs[j]].type, omaps[j], f.cfg.grid),
             f.t[outs[j]].e,
             0,
             Phase::kInLoop,
             f.t[outs[j]].lab,
             false};
    for (int g = 0; g < 3; ++g)
      if (omaps[j][g] != ir::kReplica && writes_partial_sums(f.t[outs[j]].lab, g))
        t.parts[omaps[j][g]] = static_cast<int>(f.cfg.grid[g]);
    d.outs.push_back(t);
  }
  d.block = build_block_graph(outs, omaps);
  done_->push_back(std::move(d));
}

std::shared_ptr<const ir::BlockGraph>
Worker::build_block_graph(const std::vector<int>& outs, const std::vector<ir::DimMap>& omaps) {
  const BlockFrame& f = *frame_;
  std::vector<TensorType> in_types;
  for (int k : f.kin)
    in_types.push_back(kt_[k].type);
  auto bb = ir::BlockBuilder::make(in_types, f.cfg.grid, f.cfg.forloop).value();
  std::vector<ir::TensorId> id(f.t.size(), -1);
  for (size_t i = 0; i < f.kin.size(); ++i) {
    const IterChoice& ch = f.choices[i][f.chosen[i]];
    id[i] = bb.input_iterator(static_cast<int>(i), ch.imap, ch.fmap).value();
  }
  for (const BlockOpRec& op : f.ops) {
    std::vector<ir::TensorId> ins;
    for (int i : op.in)
      ins.push_back(id[i]);
    id[op.out] =
        op.acc ? bb.accumulator(ins[0], op.fmap).value() : bb.op(op.op, ins, op.attrs).value();
  }
  for (size_t j = 0; j < outs.size(); ++j) {
    Status s = bb.output_saver(id[outs[j]], omaps[j]);
    MG_CHECK(s.ok(), "search built an invalid block graph: " << s.message());
  }
  return std::move(bb).finish().value();
}

}  // namespace mugraph::search::enumeration
