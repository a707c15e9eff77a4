// Arithmetic over Z_p x Z_q for the random-testing verifier (Mirage §5, Table 3).
//
// A value is a pair (x_p, x_q). add/sub/mul/div act on each component in its own field. exp maps
// the Z_q component into Z_p: exp(x) = (w^x_q mod p, none), where w is a q-th root of unity in
// Z_p (this needs q | p - 1); the result has no Z_q part, so a second exp on one path has
// nothing to exponentiate and is reported as invalid (a Lax uGraph never does it).
//
// THE PRIMES. q = 2^31 - 1 (a Mersenne prime) and p = 2147483626 q + 1 = 4611685969035264023,
// the largest prime below 2^62 of the form k q + 1 with p = 3 (mod 4). Products of two values
// below 2^62 fit in unsigned __int128. Theorem 2's error bound falls as 1/q, so q is as large as
// a 32-bit exponent allows (Mirage used q = 83, p = 167). Both are = 3 (mod 4) so that sqrt is a
// power map in each field (below). tests/verify/finite_field_test.cc checks every precondition:
// primality, q | p - 1, p and q = 3 (mod 4), and that the sampled w has order exactly q.
//
// SQRT. sqrt(x) = x^((m+1)/4) in Z_m (m = p or q). For a quadratic residue this is a true square
// root; for other x it is a root of -x. The map is multiplicative, so it keeps the identities
// sqrt(x) sqrt(y) = sqrt(x y), sqrt(x / y) = sqrt(x) / sqrt(y) and sqrt(c x) = sqrt(c) sqrt(x)
// used by the pruning axioms and by rewrites such as moving 1/sqrt(n) out of an RMS. It does
// NOT keep sqrt(x)^2 = x or sqrt(x^2) = x for all x (each holds only up to sign), so two
// programs equal only through such a cancellation may be reported different: a false
// rejection, never a false acceptance.
//
// DIVISION BY ZERO. Dividing by a value with a zero component (or a scale factor whose
// denominator is 0 mod p or q) sets the context's zero_divisor flag and yields 0; a test that
// met one is inconclusive and must be redrawn, never counted.
//
// SQRT AS A FRESH VARIABLE (SqrtMode::kFreshVariable, used by the certify mode). Theorem 2
// covers +, -, *, / and exp only, and the power map above is a polynomial of degree ~p/4, so
// no useful bound follows for it (worse: sqrt(c^2 x) evaluates to chi(c) c sqrt(x) with chi the
// Legendre symbol, so a sign error on a constant whose chi(c) = -1 is never caught). In this mode
// sqrt(x) is a random function of the value x, drawn per test and shared by the two programs of
// the test: equal radicands get equal roots, and each distinct radicand gets an independent
// uniform (Z_p, Z_q) value (pseudo-random, from the same keyed hash as the inputs). A program is then a rational function of its inputs and of one new
// variable per radicand; two programs that differ over the reals differ as such functions (put
// the real roots back in), so Theorem 2 applies with the roots as extra inputs, plus the chance
// that two different radicands collide (verify/lax.h counts it). The price: sqrt(x) sqrt(y) =
// sqrt(x y) no longer holds, so a candidate equal only through that identity is not certified.
//
// Non-Lax ops (relu, gelu) have no finite-field meaning: they set the context's invalid message.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "support/rng.h"
#include "support/status.h"
#include "verify/arith.h"

namespace mugraph::verify {

inline constexpr uint64_t kDefaultQ = 2147483647ULL;           // 2^31 - 1
inline constexpr uint64_t kDefaultP = 4611685969035264023ULL;  // 2147483626 q + 1

struct FieldParams {
  uint64_t p = kDefaultP;
  uint64_t q = kDefaultQ;
};

enum class SqrtMode { kPowerMap, kFreshVariable };  // see SQRT above


// Barrett reduction modulo a fixed m < 2^62: a * b mod m with two inline 64x64->128
// multiplies and shifts, no division (a 128-bit '%' is a slow library call). With k the bit
// width of m and mu = floor(2^(2k) / m) < 2^(k+1), the quotient estimate
// ((x >> (k-1)) * mu) >> (k+1) is at most 2 below the true quotient, so the remainder is < 3m
// and at most two subtractions fix it. mul_mod_exact is the reference the tests compare with.
struct Barrett {
  uint64_t m = 1, mu = 0;
  int k = 1;
  Barrett() = default;
  explicit Barrett(uint64_t modulus)
      : m(modulus), mu(0), k(64 - __builtin_clzll(modulus)) {
    mu = static_cast<uint64_t>((static_cast<unsigned __int128>(1) << (2 * k)) / m);
  }
  uint64_t mul(uint64_t a, uint64_t b) const {
    const unsigned __int128 x = static_cast<unsigned __int128>(a) * b;
    const auto t = static_cast<uint64_t>(x >> (k - 1));
    const auto qe = static_cast<uint64_t>((static_cast<unsigned __int128>(t) * mu) >> (k + 1));
    uint64_t r = static_cast<uint64_t>(x) - qe * m;
    while (r >= m) r -= m;
    return r;
  }
};
uint64_t mul_mod_exact(uint64_t a, uint64_t b, uint64_t m);
// a^e mod m with the Barrett multiply (a < m).
uint64_t pow_barrett(uint64_t a, uint64_t e, const Barrett& b);
// pow_barrett through a small per-thread memo, one per `table` (0..3), each for one (m, e) at a
// time. Inverses and power-map roots are ~90 multiplies each, and the same values come back:
// a row divided by its RMS, X's entries in every block of a grid that replicates X.
uint64_t pow_memo(uint64_t a, uint64_t e, const Barrett& b, int table);
// x mod m for any 128-bit x, with 2^64 mod m precomputed as r64 (used by lazy accumulation).
inline uint64_t reduce_u128(unsigned __int128 x, const Barrett& b, uint64_t r64) {
  const uint64_t hi = static_cast<uint64_t>(x >> 64) % b.m, lo = static_cast<uint64_t>(x) % b.m;
  const uint64_t t = b.mul(hi, r64) + lo;  // both < m < 2^62: no overflow
  return t >= b.m ? t - b.m : t;
}

// The params with their Barrett constants, as the hot arithmetic wants them.
struct PreparedField {
  uint64_t p, q;
  Barrett bp, bq;
  uint64_t r64p, r64q;  // 2^64 mod p, 2^64 mod q
  explicit PreparedField(const FieldParams& f)
      : p(f.p), q(f.q), bp(f.p), bq(f.q), r64p((~uint64_t{0} % f.p + 1) % f.p),
        r64q((~uint64_t{0} % f.q + 1) % f.q) {}
};
uint64_t pow_mod(uint64_t a, uint64_t e, uint64_t m);  // exact for any 64-bit m
// Deterministic Miller-Rabin for all 64-bit n (bases 2..37 suffice below 3.3e24).
bool is_prime_u64(uint64_t n);

// Ok iff p, q are primes below 2^62, q | p - 1, and p = q = 3 (mod 4); else says which fails.
Status check_field_params(const FieldParams& f);

// A uniformly random element of order exactly q in Z_p^* (a q-th root of unity other than 1).
uint64_t random_root_of_unity(const FieldParams& f, Rng& rng);

struct FF;

// The random function behind fresh-variable sqrt: the root of x is hashed_ff(seed, x) (below),
// a pseudo-random function of the radicand drawn fresh with each test's seed. Being a pure
// function of (seed, x), it needs no table, is the same in every thread, and gives equal roots
// to equal radicands in both programs.
struct SqrtOracle {
  uint64_t seed = 0;
  FF root(const FF& x, const FieldParams& f) const;
};

// The per-thread evaluation context: the field, w, the sqrt semantics, and what went wrong
// during an evaluation. w^x is read from two tables (x = hi 2^16 + lo): one multiply per exp.
struct FieldContext {
  FieldContext(const FieldParams& f, uint64_t w, SqrtMode mode = SqrtMode::kPowerMap,
               uint64_t oracle_seed = 0);
  FieldParams params;
  PreparedField prepared;
  uint64_t omega = 1;
  SqrtMode sqrt_mode = SqrtMode::kPowerMap;
  SqrtOracle oracle;  // used in kFreshVariable mode
  std::vector<uint64_t> omega_lo, omega_hi;
  bool zero_divisor = false;
  std::string invalid;  // first non-Lax event (e.g. "relu is not in the Lax fragment")
  uint64_t omega_pow(uint64_t x) const;  // w^x mod p for x < q
};

// Installs `ctx` as this thread's context for its lifetime (nesting restores the outer one).
class FieldScope {
 public:
  explicit FieldScope(FieldContext& ctx);
  ~FieldScope();
  FieldScope(const FieldScope&) = delete;
  FieldScope& operator=(const FieldScope&) = delete;

 private:
  FieldContext* prev_;
};

FieldContext& field_context();  // MG_CHECKs that a FieldScope is active

namespace detail {
inline thread_local FieldContext* tls_field_context = nullptr;
// The active field, for the inline operators below (hot loops: no call, no check; a missing
// FieldScope is caught by field_context() in every non-inline path, e.g. exp and division).
inline const PreparedField& params() { return tls_field_context->prepared; }
inline uint64_t add_mod(uint64_t a, uint64_t b, uint64_t m) {
  const uint64_t s = a + b;
  return s >= m ? s - m : s;
}
inline uint64_t sub_mod(uint64_t a, uint64_t b, uint64_t m) { return a >= b ? a - b : a + (m - b); }
}  // namespace detail

struct FF {
  uint64_t p = 0;
  uint64_t q = 0;
  bool has_q = true;  // false after exp (Table 3: "-")

  friend FF operator+(const FF& a, const FF& b) {
    const PreparedField& f = detail::params();
    return {detail::add_mod(a.p, b.p, f.p), detail::add_mod(a.q, b.q, f.q), a.has_q && b.has_q};
  }
  friend FF operator-(const FF& a, const FF& b) {
    const PreparedField& f = detail::params();
    return {detail::sub_mod(a.p, b.p, f.p), detail::sub_mod(a.q, b.q, f.q), a.has_q && b.has_q};
  }
  friend FF operator*(const FF& a, const FF& b) {
    const PreparedField& f = detail::params();
    return {f.bp.mul(a.p, b.p), f.bq.mul(a.q, b.q), a.has_q && b.has_q};
  }
  friend FF operator/(const FF& a, const FF& b);
  bool operator==(const FF& o) const { return p == o.p && q == o.q && has_q == o.has_q; }
};

// A uniformly random element of Z_p x Z_q.
FF random_ff(const FieldParams& f, Rng& rng);

// A pseudo-random element of Z_p x Z_q that depends only on (key, stream, index): inputs are
// drawn this way so that a test can materialize any subset of an input tensor's entries (the
// screen mode evaluates only what a few output entries need) and two programs still see the
// same values. splitmix64's finalizer mixes the three; values >= p or >= q are redrawn, so each
// component is uniform over its field up to the quality of the mixer.
FF hashed_ff(const FieldParams& f, uint64_t key, uint64_t stream, uint64_t index);

// out[i][j] += sum_t a[i][t] b[t][j] for row-major m x k and k x n blocks, with products
// summed in 128 bits and reduced once per 15 terms (15 p^2 < 2^128). The interpreter's matmul
// calls this overload for FF (found by argument-dependent lookup): it is the hot loop of every
// field test.
void matmul_block(const FF* a, const FF* b, FF* out, int64_t m, int64_t k, int64_t n);

template <>
struct Arith<FF> {
  static FF zero() { return FF{}; }
  static FF from_rational(int64_t num, int64_t den);
  static FF exp(const FF& x);
  static FF sqrt(const FF& x);
  static FF silu(const FF& x);  // x / (1 + exp(-x)), exact (Mirage approximated it)
  static FF relu(const FF& x);  // invalid: not Lax
  static FF gelu(const FF& x);  // invalid: not Lax
  static constexpr bool kRoundsStorage = false;
  static FF store(const FF& x, ir::DType) { return x; }
  // Division of a whole tensor (eval_op): invert_all replaces every divisor by its inverse with
  // one Fermat inversion per field for all of them (Montgomery's batch trick; a zero part stays
  // zero), then times_inverse(a, inverse of b) equals a / b, zero-divisor flag included.
  static void invert_all(std::vector<FF>& v);
  static FF times_inverse(const FF& a, const FF& inv);
};

}  // namespace mugraph::verify
