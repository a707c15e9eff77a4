// Abstract expressions (Mirage §4.3, Table 1): first-order terms that abstract the function a
// tensor computes, ignoring the differences between elements of one input tensor.
//
// A term is an input leaf (named after the program input), the constant `one` (from
// reciprocal), add/mul/div of two terms, exp/sqrt of one, sum(k, x) with a positive integer
// count k (how many values are added into each output element), or an opaque operator applied
// to one or two terms (silu, relu, gelu, concat: only the subexpression axioms know them).
//
// Terms are hash-consed in an ExprPool: structurally equal terms are the same node, so an Expr
// (a pointer to an immutable node) compares and hashes in O(1). Nodes live as long as their
// pool. Interning is thread-safe; reading a node needs no lock.
//
// Text form (printed by to_string, read back by parse_expr): `sum(4096, mul(X, W))`,
// `div(one, sqrt(X))`, `silu(X)`. Identifiers that are not operator names are inputs.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <absl/container/flat_hash_set.h>

#include "ir/ops.h"
#include "support/hash.h"
#include "support/status.h"

namespace mugraph::expr {

// clang-format off
//        enum      name     arity
#define MUGRAPH_EXPR_KINDS(X) \
  X(kInput,  "input", 0)     \
  X(kOne,    "one",   0)     \
  X(kAdd,    "add",   2)     \
  X(kMul,    "mul",   2)     \
  X(kDiv,    "div",   2)     \
  X(kExp,    "exp",   1)     \
  X(kSqrt,   "sqrt",  1)     \
  X(kSum,    "sum",   1)     \
  X(kApply,  "apply", -1)
// clang-format on
// kApply's arity is that of the applied ir operator (1 or 2); its name is the operator's.

enum class ExprKind {
#define MG_EXPR_ENUM(e, name, arity) e,
  MUGRAPH_EXPR_KINDS(MG_EXPR_ENUM)
#undef MG_EXPR_ENUM
};
inline constexpr int kNumExprKinds = 9;

std::string_view kind_name(ExprKind k);
// Arity of a kind; -1 for kApply (see apply_arity).
int kind_arity(ExprKind k);
// The compound kind (add, mul, div, exp, sqrt, sum) spelled `name` in the text form, if any.
std::optional<ExprKind> compound_kind(std::string_view name);
// Whether `op` is abstracted as an opaque function (kApply) and with how many arguments.
bool is_opaque_op(ir::OpKind op);

struct ExprNode {
  ExprKind kind;
  int64_t k;  // kSum: the count; kApply: the ir::OpKind; else 0
  std::string_view name;  // kInput: the leaf's name (owned by the pool)
  const ExprNode* a;      // first argument or null
  const ExprNode* b;      // second argument or null
  size_t hash;
  uint32_t id;    // creation order within the pool
  uint32_t size;  // number of nodes of the term as a tree (saturates at 2^31)

  int arity() const { return b ? 2 : (a ? 1 : 0); }
  ir::OpKind op() const { return static_cast<ir::OpKind>(k); }  // kApply only
};
using Expr = const ExprNode*;

class ExprPool {
 public:
  ExprPool() = default;
  ExprPool(const ExprPool&) = delete;
  ExprPool& operator=(const ExprPool&) = delete;

  Expr input(std::string_view name);
  Expr one();
  Expr add(Expr a, Expr b) { return make(ExprKind::kAdd, 0, {}, a, b); }
  Expr mul(Expr a, Expr b) { return make(ExprKind::kMul, 0, {}, a, b); }
  Expr div(Expr a, Expr b) { return make(ExprKind::kDiv, 0, {}, a, b); }
  Expr exp(Expr a) { return make(ExprKind::kExp, 0, {}, a, nullptr); }
  Expr sqrt(Expr a) { return make(ExprKind::kSqrt, 0, {}, a, nullptr); }
  // sum(k, a); k >= 1 (MG_CHECK).
  Expr sum(int64_t k, Expr a);
  // An opaque operator (is_opaque_op) applied to one or two terms (MG_CHECK on arity).
  Expr apply(ir::OpKind op, Expr a, Expr b = nullptr);
  // Generic constructor used by parsers and the e-graph; checks arity and counts.
  Expr make(ExprKind kind, int64_t k, std::string_view name, Expr a, Expr b);

  size_t size() const;

 private:
  struct Hash {
    size_t operator()(const ExprNode* n) const { return hash_finish(n->hash); }
  };
  struct Eq {
    bool operator()(const ExprNode* x, const ExprNode* y) const;
  };
  mutable std::mutex mu_;
  std::deque<ExprNode> nodes_;
  std::deque<std::string> names_;
  absl::flat_hash_set<const ExprNode*, Hash, Eq> set_;  // open addressing: one slot read
};

// The text form; deterministic (depends only on the term). Its length grows with the term's
// tree (ExprNode::size), which shared subterms make exponential: see to_string_abbreviated.
std::string to_string(Expr e);

// The text form for display, linear in `max_chars` whatever the term: a proper subterm that
// has an entry in `names` prints as `@name` (shared subterms printed once elsewhere), and
// past `max_chars` characters the text is cut and ends with " ... (truncated: ...)", which
// gives the term's size as a tree. Does not parse back when it abbreviated anything.
std::string to_string_abbreviated(Expr e, const std::unordered_map<Expr, std::string>& names,
                                  size_t max_chars);

// Parses the text form. Errors name the column and what was expected.
Result<Expr> parse_expr(ExprPool& pool, std::string_view text);

// Total structural order (kind, count, name, then arguments): deterministic across pools.
bool structural_less(Expr x, Expr y);

}  // namespace mugraph::expr
