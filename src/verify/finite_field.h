// Arithmetic over Z_p x Z_q for the random-testing verifier (Mirage §5, Table 3).
//
// A value is a pair (x_p, x_q). add/sub/mul/div act on each component in its own field. exp maps
// the Z_q component into Z_p: exp(x) = (w^x_q mod p, none), where w is a q-th root of unity in
// Z_p (this needs q | p - 1); the result has no Z_q part, so a second exp on one path has
// nothing to exponentiate and is reported as invalid (a Lax uGraph never does it).
//
// THE PRIMES. q = 2^31 - 1 (a Mersenne prime) and p = 2147483626 q + 1 = 4611685969035264023,
// the largest prime below 2^62 of the form k q + 1 with p = 3 (mod 4); these defaults are used
// only with VerifyOptions::random_primes off (see RANDOM PRIMES below). Products of two values
// below 2^62 fit in unsigned __int128. Theorem 2's error bound falls as 1/q, so q is as large as
// a 32-bit exponent allows (Mirage used q = 83, p = 167). Both are = 3 (mod 4) so that sqrt is a
// power map in each field (below). tests/verify/finite_field_test.cc checks every precondition:
// primality, q | p - 1, p and q = 3 (mod 4), and that the sampled w has order exactly q.
//
// SQRT: WHAT EACH MODE CAN AND CANNOT CONCLUDE. Let R, C be the two programs, functions of the
// inputs x over the reals (on the domain where every radicand is >= 0 and no divisor is 0).
//
// Power map (SqrtMode::kPowerMap, the screen's second opinion only): s(y) = y^((m+1)/4) in Z_m
// (m = p or q, both = 3 mod 4). For a quadratic residue y, s(y) is the square root of y that is
// itself a residue; s is multiplicative, so s(x) s(y) = s(x y) always holds. But s(c^2 y) =
// chi(c) c s(y) with chi the Legendre symbol: for a constant c with chi(c) = -1 (5, 7, 10, 11,
// ... depending on m) the CORRECT rewrite sqrt(25 x) -> 5 sqrt(x) evaluates differently and the
// WRONG sqrt(25 x) -> -5 sqrt(x) evaluates equal. So with sqrt the power map can conclude
// NOTHING in either direction: it is no homomorphic image of the real functions. The verifier
// uses it only as a cheap filter inside the search (verify::Undecided::kPowerMapThenFloatCheck):
// a difference there drops a candidate (INCONCLUSIVE: perhaps a lost correct candidate, never a
// wrong verdict); an agreement is never accepted without the float check (the search's sampled
// screen leaves it to its every-entry test, which every screened candidate gets before the
// search hands anything out: verifier.h, kPowerMapThenDefer).
//
// Fresh variable (SqrtMode::kFreshVariable, every verdict): sqrt(y) = F(y) with F a random
// function of the radicand's field value, drawn per test and shared by both programs.
//   (a) AGREEMENT IS EVIDENCE. Replace each distinct radicand y_i (a rational function of x and
//       of earlier roots) by a new variable r_i. Two programs that are equal as formal rational
//       functions of (x, r) are equal over the reals (substitute r_i = sqrt(y_i)). Contrapositive:
//       if R != C over the reals, then R - C is a non-zero rational function of (x, r), and a
//       test in which every r_i is an independent uniform value passes with probability at most
//       the Schwartz-Zippel / Theorem 2 bound of verify/lax.h with the r_i as extra inputs. The
//       r_i are independent unless two different radicands have the same field value: at most
//       C(n, 2) deg / p for n radicand evaluations (verify/lax.h adds it). So agreement in t
//       tests bounds the false accept by epsilon^t as for any Lax program.
//   (b) A DIFFERENCE PROVES NOTHING. Formal inequality does not imply real inequality:
//       sqrt(25 x) and 5 sqrt(x) have different radicands (25 x vs x), hence independent roots,
//       and differ in almost every test while equal over the reals; so do sqrt(x) sqrt(y) and
//       sqrt(x y). A fresh-variable difference is therefore never reported NOT EQUIVALENT: the
//       verifier falls back to the float check (UNPROVED if it passes, UNSTABLE if it rejects,
//       verify/verifier.h).
// Without sqrt the test is a homomorphism of the programs' formal ring (the rational functions,
// and for exp the formal exponential sums of Eq. 2), so a difference in a test without zero
// divisors proves the programs differ over the reals: NOT EQUIVALENT is then a proof.
//
// DIVISION BY ZERO. Dividing by a value with a zero component (or a scale factor whose
// denominator is 0 mod p or q) sets the context's zero_divisor flag and yields 0; a test that
// met one is inconclusive and must be redrawn, never counted.
//
// The fresh-variable function F is a pseudo-random function of (test seed, radicand value):
// hashed_ff below, keyed by the radicand's (Z_p, Z_q) value, so equal radicands get equal roots
// in both programs and in every thread, with no table.
//
// Non-Lax ops (relu, gelu) have no finite-field meaning: they set the context's invalid message.
#pragma once

#include <cstdint>
#include <functional>
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
//
// reduce(v) takes any 64-bit v (m < 2^62): with mu64 = floor((2^64 - 1) / m), the estimate
// floor(v mu64 / 2^64) is at most floor(v / m) and more than v / m - 2, so v - estimate * m is
// below 3m < 2^64 and at most two subtractions fix it (no division: a 64-bit '%' costs tens
// of cycles, and the matmul's lazy accumulation reduced four values per 15 products with it).
struct Barrett {
  uint64_t m = 1, mu = 0, mu64 = 0;
  int k = 1;
  Barrett() = default;
  explicit Barrett(uint64_t modulus)
      : m(modulus), mu(0), mu64(~uint64_t{0} / modulus), k(64 - __builtin_clzll(modulus)) {
    mu = static_cast<uint64_t>((static_cast<unsigned __int128>(1) << (2 * k)) / m);
  }
  uint64_t reduce(uint64_t v) const {
    const auto qe = static_cast<uint64_t>((static_cast<unsigned __int128>(v) * mu64) >> 64);
    uint64_t r = v - qe * m;
    while (r >= m) r -= m;
    return r;
  }
  // Two fast paths, chosen by the modulus alone (a branch every call predicts): below 2^32 (the
  // random fields' q) the product fits in 64 bits and reduce() takes it; at 62 bits (every p, and
  // the group ring's q) the shifts are constants (a 128-bit shift by a variable count costs a
  // handful of instructions, twice per product).
  uint64_t mul(uint64_t a, uint64_t b) const {
    if (k <= 32) return reduce(a * b);  // a, b < 2^k: the product is below 2^64
    const unsigned __int128 x = static_cast<unsigned __int128>(a) * b;
    const auto t = static_cast<uint64_t>(k == 62 ? x >> 61 : x >> (k - 1));
    const unsigned __int128 tm = static_cast<unsigned __int128>(t) * mu;
    const auto qe = static_cast<uint64_t>(k == 62 ? tm >> 63 : tm >> (k + 1));
    uint64_t r = static_cast<uint64_t>(x) - qe * m;
    while (r >= m) r -= m;
    return r;
  }
};
// Montgomery multiplication modulo a fixed odd m < 2^62, for long chains of products (the batched
// powers of pow_memo_all, batch inversion) and for products by values kept in this form (the
// inverses division multiplies by, Arith<FF>::invert_all): values are kept as a 2^64 mod m
// (to/from convert), and a product is REDC(a b) = a b 2^-64 mod m: q = (a b mod 2^64)
// (-1/m mod 2^64), then (a b + q m) / 2^64, which is below 2m (a b < m^2 and q m < 2^64 m; the sum < 2^127 for m < 2^62), so one conditional
// subtraction reduces it. No shift by a variable count and no loop: in interleaved chains it
// raises about 4x as many powers per second as Barrett::mul on the Intel Xeon.
struct Montgomery {
  uint64_t m = 1, neg_inv = 0, r2 = 0;  // -1/m mod 2^64; 2^128 mod m
  Montgomery() = default;  // unusable until assigned
  explicit Montgomery(uint64_t modulus);
  uint64_t redc(unsigned __int128 t) const {
    const uint64_t q = static_cast<uint64_t>(t) * neg_inv;
    const auto r = static_cast<uint64_t>((t + static_cast<unsigned __int128>(q) * m) >> 64);
    return r >= m ? r - m : r;
  }
  uint64_t mul(uint64_t a, uint64_t b) const { return redc(static_cast<unsigned __int128>(a) * b); }
  uint64_t to(uint64_t a) const { return mul(a, r2); }  // a < m
  uint64_t from(uint64_t a) const { return redc(a); }
};
uint64_t mul_mod_exact(uint64_t a, uint64_t b, uint64_t m);
// a^e mod m with the Barrett multiply (a < m).
uint64_t pow_barrett(uint64_t a, uint64_t e, const Barrett& b);
// pow_barrett through a per-thread memo, one per `table` (0..3: 0, 1 for inverses, 2^16 slots;
// 2, 3 for roots, 2^16 slots growing to 2^19 on a thread that misses often), each for one
// (m, e) at a time. Inverses and power-map roots are ~90 multiplies each, and the same values come back:
// a row divided by its RMS, X's entries in every block of a grid that replicates X.
uint64_t pow_memo(uint64_t a, uint64_t e, const Barrett& b, int table);
// pow_memo of every a[i], in place (the same values and the same memo): the memo's misses are
// raised kPowLanes at a time in Montgomery form with their multiply chains interleaved, which
// the CPU overlaps (one Barrett chain waits on each multiply's latency): ~90 ns per power
// against ~650 ns one at a time (Barrett, one chain) and ~400 ns in 8 interleaved Barrett chains,
// measured standalone on the Intel Xeon with a 61-bit prime (2^61 - 1).
inline constexpr int kPowLanes = 8;
void pow_memo_all(uint64_t* a, size_t n, uint64_t e, const Barrett& b, int table);
// x mod m for any 128-bit x, with 2^64 mod m precomputed as r64 (used by lazy accumulation).
inline uint64_t reduce_u128(unsigned __int128 x, const Barrett& b, uint64_t r64) {
  const uint64_t hi = b.reduce(static_cast<uint64_t>(x >> 64)), lo = b.reduce(static_cast<uint64_t>(x));
  const uint64_t t = b.mul(hi, r64) + lo;  // both < m < 2^62: no overflow
  return t >= b.m ? t - b.m : t;
}

// The params with their Barrett constants, as the hot arithmetic wants them.
struct PreparedField {
  uint64_t p, q;
  Barrett bp, bq;
  uint64_t r64p, r64q;  // 2^64 mod p, 2^64 mod q
  Montgomery mp, mq;    // for odd moduli below 2^62 (every valid field); else unusable
  explicit PreparedField(const FieldParams& f)
      : p(f.p), q(f.q), bp(f.p), bq(f.q), r64p((~uint64_t{0} % f.p + 1) % f.p),
        r64q((~uint64_t{0} % f.q + 1) % f.q), mp(montgomery_if_odd(f.p)),
        mq(montgomery_if_odd(f.q)) {}
  static Montgomery montgomery_if_odd(uint64_t m) {
    return m % 2 == 1 && m < (uint64_t{1} << 62) ? Montgomery(m) : Montgomery();
  }
};
uint64_t pow_mod(uint64_t a, uint64_t e, uint64_t m);  // exact for any 64-bit m
// Deterministic Miller-Rabin for all 64-bit n (bases 2..37 suffice below 3.3e24).
bool is_prime_u64(uint64_t n);

// Ok iff p, q are primes below 2^62, q | p - 1, and p = q = 3 (mod 4); else says which fails.
Status check_field_params(const FieldParams& f);

// RANDOM PRIMES. Fixed primes fail every test on some programs: 2^33 = 4 (mod 2^31 - 1), so
// scale(S, 1/2^33) and scale(S, 1/4) look the same in every exponent. The verifier therefore
// draws a fresh pair per test: q a uniformly random prime = 3 (mod 4) in [2^30, 2^31), p = k q + 1
// the first prime for k = 2 (mod 4) from a uniformly random start with p in [2^61, 2^62) (so
// p = 3 (mod 4)). A fixed non-zero integer of b bits is divisible by at most b / 30 primes
// >= 2^30, out of kRandomQPrimes candidates for q: the chance that a test's q divides it is at
// most floor(b / 30) / kRandomQPrimes (verify/lax.h: LARGE COEFFICIENTS). The bounds of
// verify/lax.h are computed with the least p and q of these ranges.
FieldParams random_field_params(Rng& rng);
inline constexpr FieldParams kLeastRandomField{uint64_t{1} << 61, uint64_t{1} << 30};
// The primes = 3 (mod 4) in [2^30, 2^31), among which random_field_params draws q uniformly
// (counted by a sieve in FiniteField.RandomQIsDrawnAmongThisManyPrimes; of 50697537 primes in
// the range, pi(2^31) - pi(2^30)).
inline constexpr double kRandomQPrimes = 25348667;

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
  // w = 0: no root of unity (no w tables; an exp is an internal error), for the group ring.
  FieldContext(const FieldParams& f, uint64_t w, SqrtMode mode = SqrtMode::kPowerMap,
               uint64_t oracle_seed = 0);
  FieldParams params;
  PreparedField prepared;
  uint64_t omega = 1;
  SqrtMode sqrt_mode = SqrtMode::kPowerMap;
  SqrtOracle oracle;  // used in kFreshVariable mode
  // w^lo for lo < 2^16 and w^(hi 2^16) for hi 2^16 < q: shared by the contexts of one (p, q, w)
  // (a search draws one for all its screens; the tables are ~100k multiplies to build).
  struct OmegaTables {
    std::vector<uint64_t> lo, hi;
  };
  std::shared_ptr<const OmegaTables> omega_tables;
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

// Runs body(0) .. body(n - 1) on n threads, body(0) on this one under this thread's field
// context, the others each under a copy of it and under this thread's deadline (a thread that
// cannot be started runs its body here, after body(0), under its copy). After all have
// joined: the exception of the lowest index that threw, if any, is rethrown (flags are then
// not merged); else the copies' flags (zero_divisor, invalid) are merged back in index order.
// A result computed this way does not depend on n as long as the bodies write disjoint data.
void parallel_in_field(size_t n, const std::function<void(size_t)>& body);

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
// The same value in two steps, for many indices of one (key, stream): hashed_ff(f, key, stream,
// i) == hashed_ff_at(f, hashed_stream(key, stream), i).
uint64_t hashed_stream(uint64_t key, uint64_t stream);
FF hashed_ff_at(const FieldParams& f, uint64_t stream_hash, uint64_t index);

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
  // zero), then times_inverse(a, inverse of b) equals a / b, zero-divisor flag included. The
  // inverses are kept in Montgomery form (1/b 2^64 mod p, and mod q: PreparedField's mp, mq), the
  // form times_inverse reads: one REDC per part then gives a / b, with no conversion back and
  // no Barrett product (the search's screens spend a fifth of their time dividing).
  static void invert_all(std::vector<FF>& v);
  static FF times_inverse(const FF& a, const FF& inv);
  // out[i] = times_inverse(a[i sa], inv[i sb]) for i < n (eval_op's division, a run at a time).
  static void times_inverse_run(const FF* a, int64_t sa, const FF* inv, int64_t sb, FF* out, int64_t n);
  // sqrt of every value in place (eval_op's sqrt of a whole tensor): equal to sqrt one by one,
  // with the power maps raised through pow_memo_all; a large tensor of radicands met before on
  // this thread under the same moduli takes its roots whole from a cache (finite_field.cc, THE
  // ROOTS OF WHOLE TENSORS).
  static void sqrt_all(std::vector<FF>& v);
};

// Radicands this thread's cache of whole tensors' roots holds (a diagnostic for tests).
size_t tensor_roots_kept();

}  // namespace mugraph::verify
