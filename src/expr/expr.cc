#include "expr/expr.h"

#include <algorithm>
#include <cctype>
#include <functional>

#include "expr/term_syntax.h"
#include "support/hash.h"

namespace mugraph::expr {
namespace {

struct KindRow {
  std::string_view name;
  int arity;
};
constexpr KindRow kKinds[] = {
#define MG_EXPR_ROW(e, name, arity) {name, arity},
    MUGRAPH_EXPR_KINDS(MG_EXPR_ROW)
#undef MG_EXPR_ROW
};
static_assert(sizeof(kKinds) / sizeof(kKinds[0]) == kNumExprKinds);


}  // namespace

std::string_view kind_name(ExprKind k) { return kKinds[static_cast<int>(k)].name; }
int kind_arity(ExprKind k) { return kKinds[static_cast<int>(k)].arity; }

std::optional<ExprKind> compound_kind(std::string_view name) {
  for (int k = 0; k < kNumExprKinds; ++k)
    if (kKinds[k].arity > 0 && kKinds[k].name == name) return static_cast<ExprKind>(k);
  return std::nullopt;
}

bool is_opaque_op(ir::OpKind op) {
  switch (op) {
    case ir::OpKind::kSilu:
    case ir::OpKind::kRelu:
    case ir::OpKind::kGelu:
    case ir::OpKind::kConcat:
      return true;
    case ir::OpKind::kMatmul:
    case ir::OpKind::kConcatMatmul:
    case ir::OpKind::kExp:
    case ir::OpKind::kSquare:
    case ir::OpKind::kSqrt:
    case ir::OpKind::kNeg:
    case ir::OpKind::kReciprocal:
    case ir::OpKind::kScale:
    case ir::OpKind::kAdd:
    case ir::OpKind::kSub:
    case ir::OpKind::kMul:
    case ir::OpKind::kDiv:
    case ir::OpKind::kSum:
    case ir::OpKind::kRepeat:
    case ir::OpKind::kReshape:
    case ir::OpKind::kTranspose:
      return false;
  }
  return false;
}

bool ExprPool::Eq::operator()(const ExprNode* x, const ExprNode* y) const {
  return x->kind == y->kind && x->k == y->k && x->name == y->name && x->a == y->a &&
         x->b == y->b;
}

Expr ExprPool::input(std::string_view name) {
  MG_CHECK(!name.empty(), "input leaf without a name");
  return make(ExprKind::kInput, 0, name, nullptr, nullptr);
}

Expr ExprPool::one() { return make(ExprKind::kOne, 0, {}, nullptr, nullptr); }

Expr ExprPool::sum(int64_t k, Expr a) { return make(ExprKind::kSum, k, {}, a, nullptr); }

Expr ExprPool::apply(ir::OpKind op, Expr a, Expr b) {
  return make(ExprKind::kApply, static_cast<int64_t>(op), {}, a, b);
}

Expr ExprPool::make(ExprKind kind, int64_t k, std::string_view name, Expr a, Expr b) {
  const int arity = b ? 2 : (a ? 1 : 0);
  MG_CHECK(!b || a, "second argument without a first");
  if (kind == ExprKind::kApply) {
    MG_CHECK(k >= 0 && k < static_cast<int64_t>(ir::all_ops().size()) &&
                 is_opaque_op(static_cast<ir::OpKind>(k)),
             "apply of a non-opaque operator");
    MG_CHECK(arity == ir::op_info(static_cast<ir::OpKind>(k)).arity, "apply arity");
  } else {
    MG_CHECK(arity == kind_arity(kind), "arity of " << kind_name(kind));
    MG_CHECK(kind != ExprKind::kSum || k >= 1, "sum count must be >= 1, got " << k);
    MG_CHECK(kind == ExprKind::kSum || k == 0, "count on a non-sum node");
    MG_CHECK((kind == ExprKind::kInput) == !name.empty(), "name on a non-input node");
  }
  ExprNode key{kind, k, name, a, b, 0, 0, 0};
  size_t h = std::hash<int>()(static_cast<int>(kind));
  h = hash_mix(h, std::hash<int64_t>()(k));
  h = hash_mix(h, std::hash<std::string_view>()(name));
  h = hash_mix(h, a ? a->hash : 0);
  h = hash_mix(h, b ? b->hash : 1);
  key.hash = h;
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = set_.find(&key); it != set_.end()) return *it;
  if (kind == ExprKind::kInput) key.name = names_.emplace_back(name);
  const uint64_t size = 1 + uint64_t(a ? a->size : 0) + uint64_t(b ? b->size : 0);
  key.size = static_cast<uint32_t>(std::min<uint64_t>(size, uint64_t(1) << 31));
  key.id = static_cast<uint32_t>(nodes_.size());
  const ExprNode* node = &nodes_.emplace_back(key);
  set_.insert(node);
  return node;
}

size_t ExprPool::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return nodes_.size();
}

std::string to_string(Expr e) {
  switch (e->kind) {
    case ExprKind::kInput:
      return std::string(e->name);
    case ExprKind::kOne:
      return "one";
    case ExprKind::kSum:
      return "sum(" + std::to_string(e->k) + ", " + to_string(e->a) + ")";
    case ExprKind::kApply:
    case ExprKind::kAdd:
    case ExprKind::kMul:
    case ExprKind::kDiv:
    case ExprKind::kExp:
    case ExprKind::kSqrt: {
      std::string s(e->kind == ExprKind::kApply ? ir::op_name(e->op()) : kind_name(e->kind));
      s += "(" + to_string(e->a);
      if (e->b) s += ", " + to_string(e->b);
      return s + ")";
    }
  }
  return "?";
}

namespace {

// Writes the abbreviated text form; stops writing once `max_chars` are out.
struct AbbreviatedWriter {
  const std::unordered_map<Expr, std::string>& names;
  size_t max_chars;
  std::string out;
  bool truncated = false;

  void write(Expr e, bool top) {
    if (out.size() >= max_chars) {
      truncated = true;
      return;
    }
    if (auto it = names.find(e); !top && it != names.end()) {
      out += "@" + it->second;
      return;
    }
    if (e->kind == ExprKind::kInput || e->kind == ExprKind::kOne) {
      out += e->kind == ExprKind::kOne ? std::string("one") : std::string(e->name);
      return;
    }
    out += e->kind == ExprKind::kApply ? ir::op_name(e->op()) : kind_name(e->kind);
    out += "(";
    if (e->kind == ExprKind::kSum) out += std::to_string(e->k) + ", ";
    write(e->a, false);
    if (e->b) out += ", ", write(e->b, false);
    out += ")";
  }
};

}  // namespace

std::string to_string_abbreviated(Expr e, const std::unordered_map<Expr, std::string>& names,
                                  size_t max_chars) {
  AbbreviatedWriter w{names, max_chars, {}};
  w.write(e, true);
  if (!w.truncated) return w.out;
  w.out.resize(std::min(w.out.size(), max_chars));
  const bool saturated = e->size >= (uint32_t(1) << 31);  // ExprNode::size stops at 2^31
  const std::string size = saturated ? "at least 2^31" : std::to_string(e->size);
  return w.out + " ... (truncated: the term has " + size + " nodes as a tree)";
}

bool structural_less(Expr x, Expr y) {
  if (x == y) return false;
  if (x->kind != y->kind) return x->kind < y->kind;
  if (x->k != y->k) return x->k < y->k;
  if (x->name != y->name) return x->name < y->name;
  if (x->a != y->a) return structural_less(x->a, y->a);
  return y->b && (!x->b || structural_less(x->b, y->b));
}

namespace {

Result<Expr> from_syntax(ExprPool& pool, const TermSyntax& t) {
  auto fail = [&](auto... what) { return error("column ", t.column, ": ", what...); };
  if (!t.call) {
    if (t.word == "one") return pool.one();
    if (t.word[0] == '?' || std::isdigit(static_cast<unsigned char>(t.word[0])) ||
        t.word.find('*') != std::string::npos)
      return fail("'", t.word, "' is not an input name");
    if (compound_kind(t.word) || ir::parse_op(t.word)) return fail("'", t.word, "' needs arguments");
    return pool.input(t.word);
  }
  std::vector<Expr> args;
  size_t first = 0;
  int64_t count = 0;
  if (t.word == "sum") {
    if (t.args.size() != 2) return fail("sum takes (count, term)");
    const std::string& c = t.args[0].word;
    if (t.args[0].call || c.empty() || c.size() > 15 ||
        c.find_first_not_of("0123456789") != std::string::npos || std::stoll(c) < 1)
      return fail("sum count must be a positive integer, got '", c, "'");
    count = std::stoll(c);
    first = 1;
  }
  for (size_t i = first; i < t.args.size(); ++i) {
    MG_ASSIGN_OR_RETURN(Expr a, from_syntax(pool, t.args[i]));
    args.push_back(a);
  }
  Expr a = args.size() > 0 ? args[0] : nullptr;
  Expr b = args.size() > 1 ? args[1] : nullptr;
  if (args.size() > 2) return fail(t.word, " takes at most 2 arguments");
  if (auto kind = compound_kind(t.word)) {
    if (static_cast<int>(args.size()) != kind_arity(*kind))
      return fail(t.word, " takes ", kind_arity(*kind), " argument(s), got ", args.size());
    return pool.make(*kind, count, {}, a, b);
  }
  auto op = ir::parse_op(t.word);
  if (!op || !is_opaque_op(*op)) return fail("unknown operator '", t.word, "'");
  if (static_cast<int>(args.size()) != ir::op_info(*op).arity)
    return fail(t.word, " takes ", ir::op_info(*op).arity, " argument(s), got ", args.size());
  return pool.apply(*op, a, b);
}

}  // namespace

Result<Expr> parse_expr(ExprPool& pool, std::string_view text) {
  MG_ASSIGN_OR_RETURN(TermSyntax t, read_term(text));
  return from_syntax(pool, t);
}

}  // namespace mugraph::expr
