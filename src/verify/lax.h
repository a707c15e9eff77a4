// Lax classification (Mirage Def. 5.1) and the error bound of Theorem 2, computed from the
// programs themselves.
//
// A uGraph is Lax if it uses only multilinear ops (matmul, add, sub, neg, scale, sum, repeat,
// reshape, concat, concat-matmul, mul), division, exp, and ops defined through them (square is
// a mul, silu is x / (1 + exp(-x)), sqrt is handled as a fresh variable: finite_field.h), and
// every input-to-output path meets at most one exp (silu counts as one). classify_lax walks
// all three levels and names the op and the path that break this.
//
// THE BOUND. Every output entry of a Lax program has the form of Eq. 2,
//   sum_{i<=k} f_i exp(g_i / h_i) / sum_{i<=k'} f'_i exp(g'_i / h'_i),
// with polynomials f, g, h in the inputs (and the sqrt variables). classify_lax tracks, per
// tensor, upper bounds on k and k', on the degrees of the f (numerator and denominator side)
// and of the exponents g, h, and on the l1 norm of their integer coefficients (scale factors
// a/b contribute |a| and |b|). The rules are those of fraction arithmetic: x + y puts
// f_x f'_y + f_y f'_x over f'_x f'_y (term counts multiply, degrees add); a product of exp terms
// is one term whose exponent is the sum of the exponents; a sum of g entries is g-fold addition
// (a denominator that is the same constant for every entry, e.g. from scale, is not
// multiplied). Entries are bounded uniformly, so the bound is conservative: for example
// div(E, D) followed by a sum over D's broadcast dim is counted as if every term had its own
// denominator. A conservative bound is still a true bound (Theorem 2's is monotone in k, d, w).
//
// For two programs the difference has k = k_ref k'_cand + k_cand k'_ref numerator terms and
// degree d. One random test then wrongly passes with probability at most
//   exp-free programs:  (D / p) (D / q)     Schwartz-Zippel in each field, independently drawn,
//                                           when coefficients stay below q (else D / p alone);
//   otherwise:          8 d k^4 / q + q^(-1/k^2)   (Theorem 2; needs q > 2w),
// plus C(n, 2) d_r / p for two of the n sqrt radicands colliding, divided by (1 - 1/q)(1 - z):
// w is drawn among the q - 1 roots other than 1, and a test that meets a zero divisor is redrawn,
// which conditions it on the event of probability 1 - z. For divisors without exp, z is at most
// (number of divisions evaluated) x (divisor degree) / q and is included. For divisors that are
// sums of exps (softmax) the theory gives no useful bound on z; it is left out, and the verdict
// reports how many draws met a zero divisor (none, in every run we have made).
// When this is >= 1 the bound is vacuous and the verdict says "no bound". Softmax over 4096
// keys has k = 4096 and is vacuous: q^(-1/k^2) is 1 - 1.3e-6.
//
// LARGE COEFFICIENTS. An exp-free difference whose integer coefficients may reach p (2^lw, e.g.
// LayerNorm's centred squares summed over thousands of columns: lw in the thousands) might
// vanish mod p while nonzero: with fixed primes there is no bound. With random primes
// (VerifyOptions::random_primes, random_field_params) q is drawn uniformly among the
// kRandomQPrimes primes = 3 (mod 4) in [2^30, 2^31), afresh for each test; a nonzero integer of
// magnitude below 2^lw has at most lw / 30 prime factors >= 2^30, so q divides the content of the
// difference with probability at most floor(lw / 30) / kRandomQPrimes, and otherwise the Z_q part
// alone is Schwartz-Zippel's d / q. One test then wrongly passes with probability at most
//   floor(lw / 30) / kRandomQPrimes + D / q       (plus the sqrt and zero-divisor terms above).
// LayerNorm + matmul at [32, 2048] x [2048, 1024] (lw ~ 4.5e4): ~2e-4 per test. The same holds
// for the other places coefficients enter: two radicands a_i / b_i, a_j / b_j (of either
// program) collide (the sqrt term) with probability at most 2 d_r / p only while the
// coefficients of a_i b_j - a_j b_i stay below p, else floor(lw_r / 30) / kRandomQPrimes +
// 2 d_r / q; a divisor vanishes identically mod q (every draw with that q redrawn) with
// probability at most floor(lw_y / 30) / kRandomQPrimes, added to z per division, and so does a
// scale factor's denominator b, floor(log2 |b| / 30) / kRandomQPrimes. z also counts a divisor
// vanishing mod p (degree / p per division); one whose coefficients may reach p (p is not drawn
// uniformly) leaves no bound. With fixed primes coefficients past p leave no bound, and a
// divisor or denominator that q divides only makes every draw a zero divisor (never counted).
// Only for programs without exp: a value past an exp has no Z_q part to compare.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "verify/finite_field.h"

namespace mugraph::verify {

// One side (numerator or denominator) of Eq. 2: term count, max degree, log2 of the
// coefficient l1 norm, whether some term has a non-zero exponent, and whether it is one
// constant shared by every entry of the tensor (then sums do not multiply it).
struct Side {
  double k = 1, deg = 0, lw = 0;
  bool exp = false;
  bool same_constant = true;
};
// Bounds on every exponent g / h of a tensor's terms.
struct ExponentBound {
  double dg = 0, dh = 0, lwg = 0, lwh = 0;
};
// A path of tensor names, newest last, shared between the forms that extend it: each tensor
// adds one node, so a program of n ops holds O(n) names, not O(n^2) (a 20,000-op chain used to
// take 16 GB). Destroyed iteratively: a long chain must not recurse once per node.
struct PathNode {
  std::string name;
  mutable std::shared_ptr<const PathNode> prev;
  PathNode(std::string n, std::shared_ptr<const PathNode> p) : name(std::move(n)), prev(std::move(p)) {}
  ~PathNode() {
    std::shared_ptr<const PathNode> p = std::move(prev);
    while (p && p.use_count() == 1) p = std::move(p->prev);
  }
};
using Path = std::shared_ptr<const PathNode>;

// The Eq. 2 bounds of every entry of one tensor, and its longest exp path.
struct Form {
  Side num, den;
  ExponentBound ex;
  int exps = 0;                    // max exps on a path from an input
  Path path;                       // tensor names along that path
};

struct LaxInfo {
  bool lax = true;
  std::string reason;              // the first op (and path) that is not Lax
  bool has_exp = false, has_sqrt = false;
  std::vector<Form> outputs;
  double sqrt_evaluations = 0;     // over all blocks and iterations
  bool sqrt_of_exp = false;        // some radicand holds an exp: no bound (lax.cc says why)
  double radicand_degree = 0;
  double radicand_num_lw = 0, radicand_den_lw = 0;  // log2 of their sides' max l1 norms
  double divisions = 0;            // divisions by exp-free values, over all blocks and iterations
  double divisor_degree = 0;       // their max degree
  double divisor_lw = 0;           // log2 of their max coefficient l1 norm
  double scale_denominator_primes = 0;  // sum over scale ops of floor(log2 |den| / 30)
};

// Classifies `g` and bounds the Eq. 2 form of each output.
LaxInfo classify_lax(const ir::KernelGraph& g);

struct TestBound {
  bool vacuous = true;
  double epsilon = 1;   // per-test false-accept probability bound (when not vacuous)
  double k = 0, d = 0;  // of the worst output pair
  std::string note;     // why vacuous, or how the bound was obtained
};

// The per-test bound for ref vs cand, output i of ref matched with cand output perm[i]; f holds
// the smallest primes a test may draw; random_q: q is drawn per test as random_field_params does
// (then coefficients that may reach p still get a bound: LARGE COEFFICIENTS above).
TestBound test_bound(const LaxInfo& ref, const LaxInfo& cand, const std::vector<int>& perm,
                     const FieldParams& f, bool random_q = false);

// Tests needed for epsilon^t <= delta (0 < epsilon < 1).
int tests_needed(double epsilon, double delta);

}  // namespace mugraph::verify
