#include "verify/finite_field.h"

namespace mugraph::verify {
namespace {


// x mod m for a signed x.
uint64_t reduce(int64_t x, uint64_t m) {
  if (x >= 0) return static_cast<uint64_t>(x) % m;
  const uint64_t r = static_cast<uint64_t>(-(x + 1)) % m;  // (|x| - 1) mod m, no overflow
  return m - 1 - r;
}

uint64_t inv_mod(uint64_t a, uint64_t m) { return pow_mod(a, m - 2, m); }  // Fermat, m prime

// Records a zero divisor and returns 0.
uint64_t checked_div(uint64_t a, uint64_t b, uint64_t m) {
  if (b == 0) {
    field_context().zero_divisor = true;
    return 0;
  }
  return mul_mod_exact(a, inv_mod(b, m), m);
}

FF invalid(const char* what) {
  FieldContext& c = field_context();
  if (c.invalid.empty()) c.invalid = what;
  return FF{};
}

}  // namespace

uint64_t mul_mod_exact(uint64_t a, uint64_t b, uint64_t m) {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(a) * b % m);
}

uint64_t pow_mod(uint64_t a, uint64_t e, uint64_t m) {
  uint64_t r = 1 % m;
  a %= m;
  for (; e; e >>= 1, a = mul_mod_exact(a, a, m))
    if (e & 1) r = mul_mod_exact(r, a, m);
  return r;
}

bool is_prime_u64(uint64_t n) {
  if (n < 2) return false;
  static const uint64_t kBases[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37};
  for (uint64_t b : kBases)
    if (n % b == 0) return n == b;
  uint64_t d = n - 1;
  int s = 0;
  for (; d % 2 == 0; d /= 2) ++s;
  for (uint64_t a : kBases) {
    uint64_t x = pow_mod(a, d, n);
    if (x == 1 || x == n - 1) continue;
    bool composite = true;
    for (int r = 1; r < s && composite; ++r) {
      x = mul_mod_exact(x, x, n);
      composite = x != n - 1;
    }
    if (composite) return false;
  }
  return true;
}

Status check_field_params(const FieldParams& f) {
  const uint64_t limit = uint64_t{1} << 62;
  if (f.p >= limit || f.q >= limit) return error("p and q must be below 2^62");
  if (!is_prime_u64(f.p)) return error("p = ", f.p, " is not prime");
  if (!is_prime_u64(f.q)) return error("q = ", f.q, " is not prime");
  if ((f.p - 1) % f.q != 0) return error("q = ", f.q, " does not divide p - 1 = ", f.p - 1);
  if (f.p % 4 != 3 || f.q % 4 != 3)
    return error("p and q must be 3 mod 4 (sqrt as the power map x^((m+1)/4))");
  return ok_status();
}

uint64_t random_root_of_unity(const FieldParams& f, Rng& rng) {
  // h^((p-1)/q) has order 1 or q (q prime); it is 1 for only (p-1)/q of the p-1 choices of h.
  for (;;) {
    const uint64_t h = 1 + rng.below(f.p - 1);
    const uint64_t w = pow_mod(h, (f.p - 1) / f.q, f.p);
    if (w != 1) return w;
  }
}

FieldScope::FieldScope(FieldContext& ctx) : prev_(detail::tls_field_context) {
  detail::tls_field_context = &ctx;
}
FieldScope::~FieldScope() { detail::tls_field_context = prev_; }

FieldContext& field_context() {
  MG_CHECK(detail::tls_field_context != nullptr, "finite-field arithmetic outside a FieldScope");
  return *detail::tls_field_context;
}

FF operator/(const FF& a, const FF& b) {
  const FieldParams& f = field_context().params;
  const bool has_q = a.has_q && b.has_q;
  return {checked_div(a.p, b.p, f.p), has_q ? checked_div(a.q, b.q, f.q) : 0, has_q};
}

FF random_ff(const FieldParams& f, Rng& rng) { return {rng.below(f.p), rng.below(f.q), true}; }

FF Arith<FF>::from_rational(int64_t num, int64_t den) {
  const FieldParams& f = field_context().params;
  return FF{reduce(num, f.p), reduce(num, f.q), true} / FF{reduce(den, f.p), reduce(den, f.q), true};
}

FF Arith<FF>::exp(const FF& x) {
  if (!x.has_q) return invalid("exp of a value with no Z_q part: two exps on one path (not Lax)");
  const FieldContext& c = field_context();
  return {pow_mod(c.omega, x.q, c.params.p), 0, false};
}

FF Arith<FF>::sqrt(const FF& x) {
  const FieldParams& f = field_context().params;
  return {pow_mod(x.p, (f.p + 1) / 4, f.p), x.has_q ? pow_mod(x.q, (f.q + 1) / 4, f.q) : 0, x.has_q};
}

FF Arith<FF>::silu(const FF& x) { return x / (from_rational(1, 1) + exp(zero() - x)); }
FF Arith<FF>::relu(const FF&) { return invalid("relu is not in the Lax fragment"); }
FF Arith<FF>::gelu(const FF&) { return invalid("gelu is not in the Lax fragment"); }

}  // namespace mugraph::verify
