// The axioms of abstract expressions (Mirage Table 2), as data: one table that both decision
// procedures read. The e-graph (egraph.h) applies every equation in both directions; the Z3
// reference (z3_oracle.h) states each as a universally quantified equation. The subexpression
// axioms (A_sub) are derived from the term kinds: every argument of a node is a subexpression
// of it, plus reflexivity and transitivity.
//
// Pattern text is the term text form with ?variables: `?x` stands for any term, `?i` (in a sum
// count) for a positive integer, and `?i*?j` for their product. Matching `sum(?i*?j, ?x)`
// against sum(n, t) enumerates the factorizations n = i*j with i, j >= 1 (this is how the
// e-graph runs sum(i, sum(j, x)) = sum(i*j, x) right to left). Negative and zero factors, which
// the integer axiom also allows, never occur in a program's sums and are not enumerated.
//
// There are no cancellation rules (no div(mul(x, y), y) = x): they would make every term a
// subexpression of every other and void the pruning (Mirage §4.3).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "expr/expr.h"

namespace mugraph::expr {

// A sum count in a pattern: a literal, a variable, or the product of two variables.
struct CountPattern {
  enum class Form { kLiteral, kVar, kProduct } form = Form::kLiteral;
  int64_t literal = 0;
  int v1 = -1, v2 = -1;  // integer variable indices
};

struct Pattern {
  bool is_var = false;
  int var = -1;  // is_var: term variable index
  ExprKind kind = ExprKind::kOne;
  int64_t op = 0;  // kApply: the ir::OpKind
  CountPattern count;  // kSum
  std::vector<Pattern> args;
};

struct Axiom {
  std::string_view name;
  std::string_view lhs, rhs;  // text form
  std::string_view comment;   // the law in math notation
  Pattern lhs_pattern, rhs_pattern;
  std::vector<std::string> term_vars, int_vars;  // names, by index
};

// A_eq: Table 2's equivalence axioms plus mul(x, one) = x for reciprocal (an extension for an
// operator Table 1 does not have, as §7 prescribes). Parsed once; MG_CHECK on a malformed row.
const std::vector<Axiom>& equivalence_axioms();

// Parses a pattern, naming ?variables into `term_vars` / `int_vars` (appending new ones).
Result<Pattern> parse_pattern(std::string_view text, std::vector<std::string>& term_vars,
                              std::vector<std::string>& int_vars);

// Whether a pattern can drive matching: not a bare variable, no count product, and it binds
// every variable of the axiom (Z3 trigger rules).
bool usable_as_trigger(const Pattern& p, const Axiom& ax);

}  // namespace mugraph::expr
