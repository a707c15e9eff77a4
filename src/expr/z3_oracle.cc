#include "expr/z3_oracle.h"

#include <z3++.h>

#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "expr/axioms.h"

namespace mugraph::expr {

std::string_view answer_name(Z3Answer a) {
  switch (a) {
    case Z3Answer::kProved:
      return "proved";
    case Z3Answer::kNotProved:
      return "not proved";
    case Z3Answer::kTimeout:
      return "timeout";
  }
  return "?";
}

namespace {

// A quantifier with explicit triggers (the C++ API's forall has none).
z3::expr quantified(z3::context& c, const std::vector<z3::expr>& vars,
                const std::vector<std::vector<z3::expr>>& triggers, const z3::expr& body) {
  std::vector<Z3_app> vs;
  for (const z3::expr& v : vars) vs.push_back(reinterpret_cast<Z3_app>(static_cast<Z3_ast>(v)));
  std::vector<Z3_pattern> ps;
  for (const auto& t : triggers) {
    std::vector<Z3_ast> terms(t.begin(), t.end());
    ps.push_back(Z3_mk_pattern(c, static_cast<unsigned>(terms.size()), terms.data()));
    // The context counts references: hold each pattern until the quantifier owns it.
    Z3_inc_ref(c, Z3_pattern_to_ast(c, ps.back()));
  }
  Z3_ast q = Z3_mk_forall_const(c, 0, static_cast<unsigned>(vs.size()), vs.data(),
                                static_cast<unsigned>(ps.size()), ps.data(), body);
  z3::expr out(c, q);
  for (Z3_pattern p : ps) Z3_dec_ref(c, Z3_pattern_to_ast(c, p));
  c.check_error();
  return out;
}

}  // namespace

struct Z3Oracle::Impl {
  z3::context ctx;
  z3::sort term = ctx.uninterpreted_sort("Term");
  z3::sort integer = ctx.int_sort();
  z3::func_decl add = z3::function("t_add", term, term, term);
  z3::func_decl mul = z3::function("t_mul", term, term, term);
  z3::func_decl div = z3::function("t_div", term, term, term);
  z3::func_decl exp = z3::function("t_exp", term, term);
  z3::func_decl sqrt = z3::function("t_sqrt", term, term);
  z3::func_decl sum = z3::function("t_sum", integer, term, term);
  z3::func_decl subexpr = z3::function("subexpr", term, term, ctx.bool_sort());
  z3::expr one = ctx.constant("one", term);
  std::map<int64_t, z3::func_decl> opaque;  // per ir::OpKind
  z3::solver solver{ctx};
  std::unordered_map<Expr, z3::expr> memo;
  unsigned fresh = 0;

  explicit Impl(unsigned timeout_ms) {
    z3::params p(ctx);
    p.set("auto_config", false);  // else mbqi comes back on
    p.set("mbqi", false);
    p.set("timeout", timeout_ms);
    solver.set(p);
    add_axioms();
  }

  z3::func_decl opaque_fn(int64_t op) {
    auto it = opaque.find(op);
    if (it != opaque.end()) return it->second;
    const auto kind = static_cast<ir::OpKind>(op);
    const std::string name(ir::op_name(kind));
    z3::func_decl f = ir::op_info(kind).arity == 1 ? z3::function(name.c_str(), term, term)
                                                    : z3::function(name.c_str(), term, term, term);
    return opaque.emplace(op, f).first->second;
  }

  z3::expr node(ExprKind kind, int64_t k, const z3::expr* count, const std::vector<z3::expr>& a) {
    switch (kind) {
      case ExprKind::kAdd:
        return add(a[0], a[1]);
      case ExprKind::kMul:
        return mul(a[0], a[1]);
      case ExprKind::kDiv:
        return div(a[0], a[1]);
      case ExprKind::kExp:
        return exp(a[0]);
      case ExprKind::kSqrt:
        return sqrt(a[0]);
      case ExprKind::kSum:
        return sum(count ? *count : ctx.int_val(k), a[0]);
      case ExprKind::kApply:
        return a.size() == 1 ? opaque_fn(k)(a[0]) : opaque_fn(k)(a[0], a[1]);
      case ExprKind::kOne:
        return one;
      case ExprKind::kInput:
        break;
    }
    MG_CHECK(false, "no Z3 node for this kind");
    return one;
  }

  z3::expr translate(Expr e) {
    if (auto it = memo.find(e); it != memo.end()) return it->second;
    z3::expr out = one;
    if (e->kind == ExprKind::kInput) {
      out = ctx.constant(("in_" + std::string(e->name)).c_str(), term);
    } else {
      std::vector<z3::expr> args;
      if (e->a) args.push_back(translate(e->a));
      if (e->b) args.push_back(translate(e->b));
      out = node(e->kind, e->k, nullptr, args);
    }
    memo.emplace(e, out);
    return out;
  }

  z3::expr from_pattern(const Pattern& p, const std::vector<z3::expr>& tv,
                        const std::vector<z3::expr>& iv) {
    if (p.is_var) return tv[static_cast<size_t>(p.var)];
    std::vector<z3::expr> args;
    for (const Pattern& a : p.args) args.push_back(from_pattern(a, tv, iv));
    if (p.kind != ExprKind::kSum) return node(p.kind, p.op, nullptr, args);
    const CountPattern& c = p.count;
    z3::expr count = c.form == CountPattern::Form::kLiteral ? ctx.int_val(c.literal)
                     : c.form == CountPattern::Form::kVar   ? iv[static_cast<size_t>(c.v1)]
                                                            : iv[static_cast<size_t>(c.v1)] *
                                                                  iv[static_cast<size_t>(c.v2)];
    return node(p.kind, 0, &count, args);
  }

  void add_axioms();
  void add_subexpr_axioms();
  void add_splits(Expr prefix, const std::vector<Expr>& program);
};

namespace {

// Each distinct node once: a hash-consed term is a DAG whose tree may be exponential.
void collect_counts(Expr e, std::set<int64_t>& out, std::unordered_set<Expr>& seen) {
  if (!seen.insert(e).second) return;
  if (e->kind == ExprKind::kSum) out.insert(e->k);
  if (e->a) collect_counts(e->a, out, seen);
  if (e->b) collect_counts(e->b, out, seen);
}

void collect_counts(Expr e, std::set<int64_t>& out) {
  std::unordered_set<Expr> seen;
  collect_counts(e, out, seen);
}

}  // namespace

// Instances of sum-sum read right to left, for this query only: sum(n, x) = sum(c, sum(n/c, x))
// and = sum(n/c, sum(c, x)) for every count n of the program and every proper divisor c of n
// that is a product of the prefix's counts. Quantified over x only, so they cannot cascade
// into ever smaller counts (a schema over the counts too makes E-matching diverge).
void Z3Oracle::Impl::add_splits(Expr prefix, const std::vector<Expr>& program) {
  std::set<int64_t> program_counts, prefix_counts;
  for (Expr r : program) collect_counts(r, program_counts);
  collect_counts(prefix, prefix_counts);
  const int64_t limit = program_counts.empty() ? 1 : *program_counts.rbegin();
  std::set<int64_t> products = prefix_counts;
  for (bool grew = true; grew;) {
    grew = false;
    for (int64_t a : std::set<int64_t>(products))
      for (int64_t b : prefix_counts)
        if (a <= limit / b && products.insert(a * b).second) grew = true;
  }
  z3::expr x = ctx.constant("x", term);
  for (int64_t n : program_counts)
    for (int64_t c : products) {
      if (c <= 1 || c >= n || n % c != 0) continue;
      const z3::expr nn = ctx.int_val(n), cc = ctx.int_val(c), rest = ctx.int_val(n / c);
      solver.add(quantified(ctx, {x}, {{sum(nn, x)}}, sum(nn, x) == sum(cc, sum(rest, x))));
      solver.add(quantified(ctx, {x}, {{sum(nn, x)}}, sum(nn, x) == sum(rest, sum(cc, x))));
    }
}

void Z3Oracle::Impl::add_axioms() {
  for (const Axiom& ax : equivalence_axioms()) {
    std::vector<z3::expr> tv, iv, vars;
    for (const std::string& v : ax.term_vars) tv.push_back(ctx.constant(v.c_str(), term));
    for (const std::string& v : ax.int_vars) iv.push_back(ctx.int_const(v.c_str()));
    vars.insert(vars.end(), tv.begin(), tv.end());
    vars.insert(vars.end(), iv.begin(), iv.end());
    const z3::expr l = from_pattern(ax.lhs_pattern, tv, iv), r = from_pattern(ax.rhs_pattern, tv, iv);
    std::vector<std::vector<z3::expr>> triggers;
    if (usable_as_trigger(ax.lhs_pattern, ax)) triggers.push_back({l});
    if (usable_as_trigger(ax.rhs_pattern, ax)) triggers.push_back({r});
    MG_CHECK(!triggers.empty(), ax.name << ": no usable trigger");
    solver.add(quantified(ctx, vars, triggers, l == r));
  }
  add_subexpr_axioms();
}

void Z3Oracle::Impl::add_subexpr_axioms() {
  z3::expr x = ctx.constant("x", term), y = ctx.constant("y", term), z = ctx.constant("z", term);
  z3::expr i = ctx.int_const("i");
  // Every argument of every node is a subexpression of it (A_sub, one row per argument).
  for (z3::func_decl f : {add, mul, div}) {
    solver.add(quantified(ctx, {x, y}, {{f(x, y)}}, subexpr(x, f(x, y))));
    solver.add(quantified(ctx, {x, y}, {{f(x, y)}}, subexpr(y, f(x, y))));
  }
  for (z3::func_decl f : {exp, sqrt}) solver.add(quantified(ctx, {x}, {{f(x)}}, subexpr(x, f(x))));
  solver.add(quantified(ctx, {x, i}, {{sum(i, x)}}, subexpr(x, sum(i, x))));
  for (const ir::OpInfo& op : ir::all_ops()) {
    if (!is_opaque_op(op.kind)) continue;
    z3::func_decl f = opaque_fn(static_cast<int64_t>(op.kind));
    if (op.arity == 1) {
      solver.add(quantified(ctx, {x}, {{f(x)}}, subexpr(x, f(x))));
    } else {
      solver.add(quantified(ctx, {x, y}, {{f(x, y)}}, subexpr(x, f(x, y))));
      solver.add(quantified(ctx, {x, y}, {{f(x, y)}}, subexpr(y, f(x, y))));
    }
  }
  solver.add(quantified(ctx, {x}, {{subexpr(x, x)}}, subexpr(x, x)));
  solver.add(quantified(ctx, {x, y, z}, {{subexpr(x, y), subexpr(y, z)}},
                    z3::implies(subexpr(x, y) && subexpr(y, z), subexpr(x, z))));
}

Z3Oracle::Z3Oracle(unsigned timeout_ms) : impl_(std::make_unique<Impl>(timeout_ms)) {}
Z3Oracle::~Z3Oracle() = default;

Z3Answer Z3Oracle::entails_subexpr(Expr prefix, const std::vector<Expr>& program, Expr hint) {
  Impl& s = *impl_;
  s.solver.push();
  s.add_splits(prefix, program);
  const z3::expr p = s.translate(prefix);
  for (Expr r : program) s.solver.add(!s.subexpr(p, s.translate(r)));
  if (hint) {
    const std::string name = "hint" + std::to_string(s.fresh++);
    s.solver.add(s.ctx.constant(name.c_str(), s.term) == s.translate(hint));
  }
  const z3::check_result r = s.solver.check();
  const std::string why = r == z3::unknown ? s.solver.reason_unknown() : "";
  s.solver.pop();
  if (r == z3::unsat) return Z3Answer::kProved;
  if (r == z3::unknown && why.find("incomplete") == std::string::npos) return Z3Answer::kTimeout;
  return Z3Answer::kNotProved;
}

}  // namespace mugraph::expr
