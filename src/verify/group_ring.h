// Values of the group-ring test (verify/verifier.h: THE GROUP-RING TEST proves why it is sound).
//
// A value is either exp-free, held as a pair (x_p, x_q) of the finite field (FF: coefficients
// live mod p, and the same value mod q is what an exponent needs), or a fraction N / D of the
// group ring Z_p[Z_q]: N a sparse polynomial sum_i c_i z^(e_i) (c_i in Z_p, e_i in Z_q; exp(t)
// is the monomial z^(t mod q)), D a multiset of such polynomials (the denominator factors), never
// divided. A factor is shared by where it comes from in the graph: dividing by a value adds that
// value's numerator *object* as a factor, so every entry of a softmax row divided by the same
// row sum carries the same factor pointer, and adding fractions whose factors are the same
// objects adds numerators (a/b + c/b = (a+c)/b). Two factors are never merged because their
// polynomials happen to be equal: identity is by pointer only.
//
// Every value also carries GrMeta: bounds on the FORMAL object the polynomial is an image of (how
// many exp terms, the degrees of their coefficients and exponents, the bit heights of their
// integer coefficients), by rules that look at the structure of the computation, never at the
// random values. Every rule gives a true upper bound for the same formal object; some are
// uniform over a block (the matmul fast paths take maxima over the block they get, and the
// verifier's chunks of rows adapt to the terms seen), so the stated bound may differ between
// runs, but each is a bound for the same formal difference. The verifier turns them into the
// per-test bound. (x_p and x_q come from one hash per entry, split by two mixers: independent
// as far as the mixer is random, the same assumption as every hashed input of the field tests.)
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "verify/finite_field.h"

namespace mugraph::verify {

// Bounds on the formal form of a value (THE GROUP-RING TEST in verifier.h): the numerator is
// an unmerged sum of k terms c(x) exp(g(x)); each c is a ratio of integer polynomials of degrees
// <= cn / cd whose coefficients' l1 norms have <= hcn / hcd bits (log2), each g a ratio of
// degrees <= eg / eh and <= hen / hed bits. `ex`: some term has an exp (else every exponent is
// 0); `zero` marks the additive identity (a fresh accumulator).
struct GrMeta {
  double k = 1, cn = 0, cd = 0, eg = 0, eh = 0, hcn = 0, hcd = 0, hen = 0, hed = 0;
  bool ex = false, zero = false;
};

struct Term {
  uint64_t e = 0;  // exponent in Z_q
  uint64_t c = 0;  // coefficient in Z_p, non-zero in a normalized polynomial
  bool operator==(const Term&) const = default;
};
using Poly = std::vector<Term>;  // normalized: sorted by e, distinct e, no zero c

struct Factor {
  std::shared_ptr<const Poly> poly;
  GrMeta meta;
};
using Factors = std::vector<Factor>;  // sorted by poly pointer; a multiset (repeats allowed)

struct GR {
  FF s{};                              // the value when it is exp-free (num == nullptr)
  std::shared_ptr<Poly> num;           // else its numerator (immutable unless `open`)
  std::shared_ptr<const Factors> den;  // and its denominator factors (nullptr: 1)
  GrMeta meta;                         // of the value (exp-free) or of its numerator
  bool open = false;                   // num is private and unnormalized: an add_into in progress

  bool exp_free() const { return num == nullptr; }
  friend GR operator+(const GR& a, const GR& b);
  friend GR operator-(const GR& a, const GR& b);
  friend GR operator*(const GR& a, const GR& b);
  friend GR operator/(const GR& a, const GR& b);
};

// The most terms one polynomial may reach; beyond it the group-ring test gives up (the
// evaluation sets the context's invalid message with kGroupRingTooLarge, the verifier falls
// back to the field test without this bound).
inline constexpr size_t kMaxPolyTerms = size_t{1} << 22;
// The most terms a comparison's cross products N_a D_b, N_b D_a may reach.
inline constexpr size_t kMaxCompareTerms = size_t{1} << 25;
inline constexpr const char* kGroupRingTooLarge = "group ring: a polynomial exceeds the term limit";

// p and q independent, uniformly random primes in [2^61, 2^62) (by rejection: every prime of
// the range is equally likely), for one group-ring test.
FieldParams random_group_ring_params(Rng& rng);
inline constexpr FieldParams kLeastGroupRingField{uint64_t{1} << 61, uint64_t{1} << 61};
// A lower bound on the number of primes in [2^61, 2^62) (Rosser-Schoenfeld: x / ln x < pi(x) <
// 1.25506 x / ln x for x >= 17): one test's q (or p) divides a fixed non-zero integer of b bits
// with probability at most (b / 61) / kPrimesInRange.
inline constexpr double kPrimesInRange = 3.8e16;

void matmul_block(const GR* a, const GR* b, GR* out, int64_t m, int64_t k, int64_t n);

template <>
struct Arith<GR> {
  static GR zero() {
    GR z;
    z.meta.zero = true;
    return z;
  }
  static GR from_ff(const FF& x);  // an input entry: a variable (degree 1)
  static GR from_rational(int64_t num, int64_t den);
  static GR exp(const GR& x);
  static GR sqrt(const GR& x);  // an uninterpreted symbol: the context's fresh-variable oracle
  static GR silu(const GR& x);
  static GR relu(const GR& x);  // invalid: not Lax
  static GR gelu(const GR& x);  // invalid: not Lax
  static constexpr bool kRoundsStorage = false;
  static GR store(const GR& x, ir::DType) { return x; }
  // Sums without quadratic copying: add_into appends to a private, unnormalized numerator;
  // finish_sum normalizes it. Every add_into must be followed by finish_sum before the value is
  // read.
  static void add_into(GR& acc, const GR& x);
  static void finish_sum(GR& acc);
};

// Whether a (the reference's entry) and b (the candidate's) agree in this test: exp-free values
// in both components; fractions by N_a D_b == N_b D_a (expanding each denominator's factors once
// per factor list through `cache`). Sets *too_large when the cross products would exceed
// kMaxCompareTerms (then the answer is false and means nothing).
class DenCache {
 public:
  const Poly& expand(const std::shared_ptr<const Factors>& den, bool* too_large);

 private:
  std::map<std::vector<const Poly*>, Poly> cache_;
};
bool group_ring_agree(const GR& a, const GR& b, DenCache& cache, bool* too_large);

// The formal difference a - b (cross-multiplied) of two entries: its term count m, the degree
// of an exponent difference, the degree of a merged coefficient's numerator, and the bit heights
// of the integer contents a prime must not divide; epsilon is the one-test bound
//   (m - 1) d_exp / q + d_coef / p + [q divides an exponent content] + [p divides the coefficient
//   content], with p, q >= 2^61 (verifier.h proves it).
struct GrBound {
  double m = 0, d_exp = 0, d_coef = 0, content_bits_q = 0, content_bits_p = 0;
  double epsilon = 0;
};
GrBound group_ring_bound(const GR& a, const GR& b);

}  // namespace mugraph::verify
