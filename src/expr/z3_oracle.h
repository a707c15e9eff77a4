// The reference decision procedure for the pruning question, in Z3 (Mirage §4.3): abstract
// expressions are terms over an uninterpreted sort with integer sum counts; A_eq (axioms.h) and
// A_sub (every argument is a subexpression of its node; reflexivity; transitivity) are
// universally quantified formulas; a query asks whether subexpr(prefix, program) is entailed,
// by checking that its negation is unsatisfiable.
//
// Z3 decides this by E-matching instantiation of the quantifiers (model-based instantiation is
// off: these axioms have no finite models worth finding, and with it every non-entailed query
// runs to the time limit). So:
//   kProved     Z3 found a proof: the prefix may lead to the program (keep);
//   kNotProved  instantiation saturated without a proof: not entailed as far as Z3 can see
//               (prune; this is the paper's "A_eq u A_sub does not entail");
//   kTimeout    the time limit hit first (the oracle keeps such prefixes).
// E-matching cannot invent the split sum(i, sum(j/i, x)) of sum(j, x) (the count i*j is
// arithmetic, not a trigger), so each query also gets the instances of sum-sum that split the
// program's counts by products of the prefix's counts (z3_oracle.cc). A caller may pass a hint term (a term believed equal to the
// program that contains the prefix): it is added as a fresh constant's definition, which
// changes nothing logically and gives E-matching the terms it needs.
#pragma once

#include <memory>
#include <vector>

#include "expr/expr.h"

namespace mugraph::expr {

enum class Z3Answer { kProved, kNotProved, kTimeout };
std::string_view answer_name(Z3Answer a);

class Z3Oracle {
 public:
  // Why 2 s: entailed queries on the paper's programs are proved in under 50 ms and
  // non-entailed ones saturate in under 100 ms; the limit only catches runaway instantiation.
  explicit Z3Oracle(unsigned timeout_ms = 2000);
  ~Z3Oracle();
  Z3Oracle(const Z3Oracle&) = delete;
  Z3Oracle& operator=(const Z3Oracle&) = delete;

  // Does A_eq u A_sub entail subexpr(prefix, r) for some r in `program`? Not thread-safe.
  Z3Answer entails_subexpr(Expr prefix, const std::vector<Expr>& program, Expr hint = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mugraph::expr
