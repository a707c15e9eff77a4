#include "expr/egraph.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>

#include <absl/container/flat_hash_map.h>

#include "support/hash.h"

namespace mugraph::expr {

// absl's Swiss table rather than std::unordered_map: QKNorm's saturation (116k nodes, ~1.9M
// matches a round, each looking up the nodes it instantiates) took 5.2 s with the latter, 2.9
// s with this (plus the non-allocating match continuations below). Its iteration order is
// salted per table: never iterate it where the order could matter (rebuild only re-finds).
struct EGraph::NodeTable : absl::flat_hash_map<ENode, ClassId, NodeHash> {};

EGraph::EGraph() : memo_(std::make_unique<NodeTable>()) {}
EGraph::~EGraph() = default;
EGraph::EGraph(EGraph&&) noexcept = default;
EGraph& EGraph::operator=(EGraph&&) noexcept = default;

size_t EGraph::NodeHash::operator()(const ENode& n) const {
  size_t h = static_cast<size_t>(n.kind);
  h = hash_mix(h, static_cast<size_t>(n.k));
  h = hash_mix(h, n.name);
  h = hash_mix(h, n.a);
  return hash_finish(hash_mix(h, n.b));
}

ClassId EGraph::find(ClassId c) const {
  while (parent_[c] != c) c = parent_[c];
  return c;
}

ENode EGraph::canonical(ENode n) const {
  if (n.a != kNoClass) n.a = find(n.a);
  if (n.b != kNoClass) n.b = find(n.b);
  return n;
}

uint32_t EGraph::intern_name(std::string_view s) {
  auto [it, inserted] = name_ids_.emplace(std::string(s), static_cast<uint32_t>(names_.size()));
  if (inserted) names_.emplace_back(s);
  return it->second;
}

ClassId EGraph::add(const ENode& node) {
  const ENode n = canonical(node);
  if (auto it = memo_->find(n); it != memo_->end()) return find(it->second);
  const auto c = static_cast<ClassId>(parent_.size());
  parent_.push_back(c);
  const auto id = static_cast<uint32_t>(nodes_.size());
  nodes_.push_back(n);
  node_class_.push_back(c);
  memo_->emplace(n, c);
  class_nodes_.push_back({id});
  best_size_.clear();
  return c;
}

ClassId EGraph::add_expr(Expr e) {
  ExprMemo done;
  return add_expr(e, done);
}

ClassId EGraph::add_expr(Expr e, ExprMemo& done) {
  // No merge happens while adding, so a class found for a subterm stays canonical.
  if (auto it = done.find(e); it != done.end()) return it->second;
  ENode n{.k = e->k, .kind = e->kind};
  if (e->kind == ExprKind::kInput) n.name = intern_name(e->name);
  if (e->a) n.a = add_expr(e->a, done);
  if (e->b) n.b = add_expr(e->b, done);
  const ClassId c = add(n);
  done.emplace(e, c);
  return c;
}

bool EGraph::merge(ClassId x, ClassId y) {
  x = find(x);
  y = find(y);
  if (x == y) return false;
  if (y < x) std::swap(x, y);
  parent_[y] = x;  // the smaller id stays canonical: deterministic
  best_size_.clear();
  return true;
}

void EGraph::rebuild() {
  // Re-canonicalize every node; two nodes that became equal put their classes together
  // (congruence). Repeat until a pass merges nothing, dropping duplicate nodes as we go.
  bool changed = true;
  while (changed) {
    changed = false;
    memo_->clear();  // absl frees a large table here: reserve it again
    memo_->reserve(nodes_.size());
    std::vector<ENode> kept;
    std::vector<ClassId> kept_class;
    kept.reserve(nodes_.size());
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const ENode n = canonical(nodes_[i]);
      const ClassId c = find(node_class_[i]);
      auto [it, inserted] = memo_->emplace(n, c);
      if (!inserted) {
        if (merge(it->second, c)) changed = true;
        continue;
      }
      kept.push_back(n);
      kept_class.push_back(c);
    }
    nodes_ = std::move(kept);
    node_class_ = std::move(kept_class);
  }
  for (ClassId c = 0; c < parent_.size(); ++c) parent_[c] = find(c);
  for (auto& [n, c] : *memo_) c = find(c);
  for (auto& l : class_nodes_) l.clear();
  for (uint32_t i = 0; i < nodes_.size(); ++i) {
    node_class_[i] = find(node_class_[i]);
    class_nodes_[node_class_[i]].push_back(i);
  }
}

size_t EGraph::num_classes() const {
  size_t n = 0;
  for (ClassId c = 0; c < parent_.size(); ++c) n += parent_[c] == c;
  return n;
}

std::vector<ClassId> EGraph::classes() const {
  std::vector<ClassId> out;
  for (ClassId c = 0; c < parent_.size(); ++c)
    if (parent_[c] == c) out.push_back(c);
  return out;
}

// Subterms whose tree has fewer nodes than this are looked up without the memo: the search's
// prefixes are mostly that small, and a query must stay a few hash lookups (no allocation);
// a walk below such a subterm costs at most this many steps however often it is shared.
constexpr uint32_t kMemoTreeNodes = 32;

std::optional<ClassId> EGraph::lookup(Expr e) const {
  if (e->size < kMemoTreeNodes) return lookup(e, nullptr);
  ExprMemo done;
  return lookup(e, &done);
}

std::optional<ClassId> EGraph::lookup(Expr e, ExprMemo* done) const {
  const bool memo = done && e->size >= kMemoTreeNodes;
  if (memo)
    if (auto it = done->find(e); it != done->end())
      return it->second == kNoClass ? std::nullopt : std::optional<ClassId>(it->second);
  auto find_node = [&]() -> std::optional<ClassId> {
    ENode n{.k = e->k, .kind = e->kind};
    if (e->kind == ExprKind::kInput) {
      auto it = name_ids_.find(std::string(e->name));
      if (it == name_ids_.end()) return std::nullopt;
      n.name = it->second;
    }
    if (e->a) {
      auto a = lookup(e->a, done);
      if (!a) return std::nullopt;
      n.a = *a;
    }
    if (e->b) {
      auto b = lookup(e->b, done);
      if (!b) return std::nullopt;
      n.b = *b;
    }
    auto it = memo_->find(canonical(n));
    if (it == memo_->end()) return std::nullopt;
    return find(it->second);
  };
  const std::optional<ClassId> c = find_node();
  if (memo) done->emplace(e, c.value_or(kNoClass));
  return c;
}

std::vector<bool> EGraph::reachable_from(const std::vector<ClassId>& roots) const {
  std::vector<bool> seen(parent_.size(), false);
  std::vector<ClassId> stack;
  for (ClassId r : roots) {
    r = find(r);
    if (!seen[r]) seen[r] = true, stack.push_back(r);
  }
  while (!stack.empty()) {
    const ClassId c = stack.back();
    stack.pop_back();
    for (uint32_t id : class_nodes_[c])
      for (ClassId ch : {nodes_[id].a, nodes_[id].b})
        if (ch != kNoClass && !seen[find(ch)]) seen[find(ch)] = true, stack.push_back(find(ch));
  }
  return seen;
}

std::vector<uint32_t> EGraph::steps_to(const std::vector<ClassId>& roots) const {
  // Breadth first from the roots down child edges (all steps cost one).
  std::vector<uint32_t> steps(parent_.size(), UINT32_MAX);
  std::vector<ClassId> frontier, next;
  for (ClassId r : roots)
    if (steps[find(r)] != 0) steps[find(r)] = 0, frontier.push_back(find(r));
  auto reach = [&](ClassId ch, uint32_t s) {
    if (ch != kNoClass && steps[find(ch)] > s) steps[find(ch)] = s, next.push_back(find(ch));
  };
  for (uint32_t s = 1; !frontier.empty(); ++s) {
    for (ClassId c : frontier)
      for (uint32_t id : class_nodes_[c]) {
        const ENode& n = nodes_[id];
        reach(n.a, s);
        reach(n.b, s);
        if (n.kind != ExprKind::kSum) continue;
        for (uint32_t m : class_nodes_[find(n.a)])  // sum over mul: one step
          if (nodes_[m].kind == ExprKind::kMul) reach(nodes_[m].a, s), reach(nodes_[m].b, s);
      }
    frontier.swap(next);
    next.clear();
  }
  return steps;
}

void EGraph::compute_best() const {
  if (!best_size_.empty()) return;
  constexpr uint32_t kInf = UINT32_MAX;
  best_size_.assign(parent_.size(), kInf);
  best_node_.assign(parent_.size(), 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t i = 0; i < nodes_.size(); ++i) {
      const ENode& n = nodes_[i];
      uint64_t s = 1;
      bool finite = true;
      for (ClassId ch : {n.a, n.b})
        if (ch != kNoClass) s += best_size_[find(ch)], finite &= best_size_[find(ch)] != kInf;
      if (!finite) continue;
      // Shared subterms make tree sizes exponential (x_{i+1} = mul(x_i, x_i)): saturate below
      // kInf. A class gets the saturated size only while it has none, from children that
      // already have one, so the chosen nodes still form no cycle.
      s = std::min<uint64_t>(s, kInf - 1);
      const ClassId c = find(node_class_[i]);
      if (s < best_size_[c]) best_size_[c] = static_cast<uint32_t>(s), best_node_[c] = i, changed = true;
    }
  }
}

Expr EGraph::extract(ClassId c, ExprPool& pool) const {
  compute_best();
  std::unordered_map<ClassId, Expr> done;
  return extract(c, pool, done);
}

Expr EGraph::extract(ClassId c, ExprPool& pool, std::unordered_map<ClassId, Expr>& done) const {
  c = find(c);
  MG_CHECK(best_size_[c] != UINT32_MAX, "class " << c << " has no finite term");
  auto [it, first] = done.emplace(c, nullptr);
  if (!first) {
    MG_CHECK(it->second != nullptr, "extraction cycle through class " << c);
    return it->second;
  }
  const ENode& n = nodes_[best_node_[c]];
  Expr a = n.a == kNoClass ? nullptr : extract(n.a, pool, done);
  Expr b = n.b == kNoClass ? nullptr : extract(n.b, pool, done);
  Expr e = pool.make(n.kind, n.k, n.kind == ExprKind::kInput ? names_[n.name] : "", a, b);
  done[c] = e;  // `it` may have been invalidated by the recursion's inserts
  return e;
}

std::optional<Expr> EGraph::witness(ClassId root, Expr sub, ExprPool& pool) const {
  auto target = lookup(sub);
  if (!target) return std::nullopt;
  root = find(root);
  // Breadth-first from the root, remembering how each class was reached.
  struct Step {
    ClassId from;
    uint32_t node;
    int child;
  };
  std::map<ClassId, Step> pred;
  std::deque<ClassId> queue{root};
  pred[root] = {kNoClass, 0, -1};
  while (!queue.empty() && !pred.count(*target)) {
    const ClassId c = queue.front();
    queue.pop_front();
    for (uint32_t id : class_nodes_[c]) {
      const ClassId kids[2] = {nodes_[id].a, nodes_[id].b};
      for (int k = 0; k < 2; ++k)
        if (kids[k] != kNoClass && !pred.count(find(kids[k]))) {
          pred[find(kids[k])] = {c, id, k};
          queue.push_back(find(kids[k]));
        }
    }
  }
  if (!pred.count(*target)) return std::nullopt;
  Expr term = sub;
  for (ClassId c = *target; c != root;) {
    const Step s = pred[c];
    const ENode& n = nodes_[s.node];
    Expr a = s.child == 0 ? term : extract(n.a, pool);
    Expr b = n.b == kNoClass ? nullptr : (s.child == 1 ? term : extract(n.b, pool));
    term = pool.make(n.kind, n.k, n.kind == ExprKind::kInput ? names_[n.name] : "", a, b);
    c = s.from;
  }
  return term;
}

// ---------------------------------------------------------------------------------------------
// Saturation.

namespace {

// Variable bindings of one match: term variables to classes, count variables to integers
// (0 = unbound; counts are >= 1).
struct Subst {
  std::array<ClassId, 6> t;
  std::array<int64_t, 4> i{};
  Subst() { t.fill(kNoClass); }
};

// A non-owning reference to a callable taking a Subst (a match's continuation): two words,
// never allocates, unlike std::function (whose copies of these lambdas, too large for its
// small-object buffer, went to the heap on every step of every match).
class Continue {
 public:
  template <class F>
  Continue(const F& f)  // NOLINT(google-explicit-constructor): passed as a lambda
      : obj_(&f), call_([](const void* o, const Subst& s) { (*static_cast<const F*>(o))(s); }) {}
  void operator()(const Subst& s) const { call_(obj_, s); }

 private:
  const void* obj_;
  void (*call_)(const void*, const Subst&);
};

class Matcher {
 public:
  explicit Matcher(const EGraph& g) : g_(g) {}

  void match(const Pattern& p, ClassId c, const Subst& s, Continue k) {
    if (p.is_var) {
      ClassId bound = s.t[static_cast<size_t>(p.var)];
      if (bound == kNoClass) {
        Subst s2 = s;
        s2.t[static_cast<size_t>(p.var)] = c;
        k(s2);
      } else if (g_.find(bound) == g_.find(c)) {
        k(s);
      }
      return;
    }
    for (uint32_t id : g_.nodes_of(c)) {
      const ENode& n = g_.node(id);
      if (n.kind != p.kind || (p.kind == ExprKind::kApply && n.k != p.op)) continue;
      if (p.kind == ExprKind::kSum)
        match_count(p.count, n.k, s, [&](const Subst& s2) { match_args(p, n, 0, s2, k); });
      else
        match_args(p, n, 0, s, k);
    }
  }

 private:
  void match_args(const Pattern& p, const ENode& n, size_t idx, const Subst& s, Continue k) {
    if (idx == p.args.size()) return k(s);
    match(p.args[idx], idx == 0 ? n.a : n.b, s,
          [&](const Subst& s2) { match_args(p, n, idx + 1, s2, k); });
  }

  static bool bind(Subst& s, int v, int64_t value) {
    int64_t& slot = s.i[static_cast<size_t>(v)];
    if (slot != 0 && slot != value) return false;
    slot = value;
    return true;
  }

  void match_count(const CountPattern& cp, int64_t n, const Subst& s, Continue k) {
    Subst s2 = s;
    switch (cp.form) {
      case CountPattern::Form::kLiteral:
        if (n == cp.literal) k(s);
        return;
      case CountPattern::Form::kVar:
        if (bind(s2, cp.v1, n)) k(s2);
        return;
      case CountPattern::Form::kProduct:
        for (int64_t d : divisors(n)) {
          Subst s3 = s;
          if (bind(s3, cp.v1, d) && bind(s3, cp.v2, n / d)) k(s3);
        }
        return;
    }
  }

  const std::vector<int64_t>& divisors(int64_t n) {
    auto [it, inserted] = divisors_.try_emplace(n);
    if (inserted) {
      std::vector<int64_t> hi;
      for (int64_t d = 1; d * d <= n; ++d)
        if (n % d == 0) {
          it->second.push_back(d);
          if (d * d != n) hi.push_back(n / d);
        }
      it->second.insert(it->second.end(), hi.rbegin(), hi.rend());
    }
    return it->second;
  }

  const EGraph& g_;
  std::map<int64_t, std::vector<int64_t>> divisors_;
};

int64_t eval_count(const CountPattern& cp, const Subst& s) {
  switch (cp.form) {
    case CountPattern::Form::kLiteral:
      return cp.literal;
    case CountPattern::Form::kVar:
      return s.i[static_cast<size_t>(cp.v1)];
    case CountPattern::Form::kProduct: {
      const int64_t a = s.i[static_cast<size_t>(cp.v1)], b = s.i[static_cast<size_t>(cp.v2)];
      MG_CHECK(a >= 1 && b >= 1 && a <= (int64_t(1) << 62) / b, "sum count overflow");
      return a * b;
    }
  }
  return 0;
}

ClassId instantiate(EGraph& g, const Pattern& p, const Subst& s) {
  if (p.is_var) {
    const ClassId c = s.t[static_cast<size_t>(p.var)];
    MG_CHECK(c != kNoClass, "unbound pattern variable");
    return c;
  }
  ENode n{.kind = p.kind};
  if (p.kind == ExprKind::kSum) n.k = eval_count(p.count, s);
  if (p.kind == ExprKind::kApply) n.k = p.op;
  if (p.args.size() > 0) n.a = instantiate(g, p.args[0], s);
  if (p.args.size() > 1) n.b = instantiate(g, p.args[1], s);
  return g.add(n);
}

struct Match {
  size_t axiom;
  bool reverse;
  ClassId cls;
  Subst subst;
};

}  // namespace

SaturationReport saturate(EGraph& g, const std::vector<Axiom>& axioms,
                          const SaturationLimits& limits) {
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  for (const Axiom& ax : axioms)
    MG_CHECK(ax.term_vars.size() <= 6 && ax.int_vars.size() <= 4, ax.name << ": too many variables");
  SaturationReport r;
  r.hits.assign(axioms.size(), 0);
  g.rebuild();
  Matcher matcher(g);
  std::vector<Match> matches;
  while (true) {
    if (r.iterations >= limits.max_iterations) {
      r.stop_reason = "iteration limit";
      break;
    }
    if (elapsed() > limits.max_seconds) {
      r.stop_reason = "time limit";
      break;
    }
    ++r.iterations;
    matches.clear();  // keeps its capacity: the next iteration usually finds as many or more
    const std::vector<ClassId> classes = g.classes();  // matching merges nothing
    for (size_t a = 0; a < axioms.size(); ++a)
      for (bool reverse : {false, true}) {
        const Pattern& from = reverse ? axioms[a].rhs_pattern : axioms[a].lhs_pattern;
        for (ClassId c : classes)
          matcher.match(from, c, Subst(), [&](const Subst& s) { matches.push_back({a, reverse, c, s}); });
      }
    const size_t nodes_before = g.num_nodes();
    bool merged = false, over = false;
    for (const Match& m : matches) {
      const Pattern& to = m.reverse ? axioms[m.axiom].lhs_pattern : axioms[m.axiom].rhs_pattern;
      if (g.merge(m.cls, instantiate(g, to, m.subst))) merged = true, ++r.hits[m.axiom];
      if (g.num_nodes() > limits.max_nodes) {
        over = true;
        break;
      }
    }
    const bool grew = g.num_nodes() != nodes_before;
    g.rebuild();
    if (over) {
      r.stop_reason = "node limit";
      break;
    }
    if (!grew && !merged) {
      r.saturated = true;
      r.stop_reason = "saturated";
      break;
    }
  }
  r.nodes = g.num_nodes();
  r.classes = g.num_classes();
  r.seconds = elapsed();
  return r;
}

}  // namespace mugraph::expr
