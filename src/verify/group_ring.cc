#include "verify/group_ring.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "support/deadline.h"

namespace mugraph::verify {
namespace {

const PreparedField& fp() { return detail::params(); }

void set_invalid(const std::string& what) {
  FieldContext& c = field_context();
  if (c.invalid.empty()) c.invalid = what;
}

bool over_limit(size_t n) {
  if (n <= kMaxPolyTerms) return false;
  set_invalid(kGroupRingTooLarge);
  return true;
}

// ---- Polynomials of Z_p[Z_q].

// Equal exponents of a sorted r combined, zero coefficients dropped.
void combine_sorted(Poly& r) {
  const uint64_t p = fp().p;
  size_t w = 0;
  for (size_t i = 0; i < r.size();) {
    uint64_t c = 0;
    const uint64_t e = r[i].e;
    for (; i < r.size() && r[i].e == e; ++i) c = detail::add_mod(c, r[i].c, p);
    if (c != 0) r[w++] = {e, c};
  }
  r.resize(w);
}

void normalize(Poly& x) {
  std::sort(x.begin(), x.end(), [](const Term& a, const Term& b) { return a.e < b.e; });
  combine_sorted(x);
}

// normalize for a finished sum (add_into's appended terms). Sorting by exponent depends only on
// the sequence of exponents, and the entries of one row of an accumulated matmul repeat the
// same sequence (the exp side fixes the exponents, the exp-free side only the coefficients; a
// zero coefficient changes the sequence, which only misses the cache): the last sequence and
// its sorting order are kept per thread, and a sum with the same sequence is merged in that
// order (a comparison and a merge instead of a sort; coefficients of equal exponents add in
// another order, which in Z_p is the same sum).
void normalize_sum(Poly& x) {
  constexpr size_t kMinCached = 32, kMaxCached = size_t{1} << 16;
  const size_t n = x.size();
  if (n < kMinCached || n > kMaxCached) return normalize(x);
  thread_local std::vector<uint64_t> last_e;
  thread_local std::vector<uint32_t> order;
  bool same = n == last_e.size();
  for (size_t i = 0; same && i < n; ++i) same = x[i].e == last_e[i];
  if (!same) {
    last_e.clear();  // no stale pairing of sequence and order if an allocation below throws
    std::vector<std::pair<uint64_t, uint32_t>> keyed(n);
    for (size_t i = 0; i < n; ++i) keyed[i] = {x[i].e, static_cast<uint32_t>(i)};
    std::sort(keyed.begin(), keyed.end());
    order.resize(n);
    for (size_t i = 0; i < n; ++i) order[i] = keyed[i].second;
    last_e.resize(n);
    for (size_t i = 0; i < n; ++i) last_e[i] = x[i].e;
  }
  Poly r(n);
  for (size_t i = 0; i < n; ++i) r[i] = x[order[i]];
  combine_sorted(r);
  x = std::move(r);
}

// a + b (or a - b), both normalized.
Poly merge(const Poly& a, const Poly& b, bool negate_b) {
  const uint64_t p = fp().p;
  Poly r;
  r.reserve(a.size() + b.size());
  size_t i = 0, j = 0;
  auto bc = [&](size_t k) { return negate_b ? p - b[k].c : b[k].c; };
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && a[i].e < b[j].e)) {
      r.push_back(a[i++]);
    } else if (i == a.size() || b[j].e < a[i].e) {
      r.push_back({b[j].e, bc(j)});
      ++j;
    } else {
      const uint64_t c = detail::add_mod(a[i].c, bc(j), p);
      if (c != 0) r.push_back({a[i].e, c});
      ++i, ++j;
    }
  }
  return r;
}

Poly scaled(const Poly& a, uint64_t c) {
  if (c == 0) return {};
  Poly r(a);
  for (Term& t : r) t.c = fp().bp.mul(t.c, c);
  return r;
}

// a b for a short `small` (silu's 1 + exp(-x) has two terms): each term y of small adds y.e to
// big's exponents mod q, which keeps big's order except where the sum wraps past q, so y gives
// two sorted runs; the 2 |small| runs are merged pairwise (n log(runs) steps instead of sorting
// all n = |big| |small| products, n log n), then equal exponents combine as in normalize. Both
// must be normalized (every caller's are: an open accumulator is never multiplied), unlike the
// sorting path, which takes any order.
Poly multiply_by_short(const Poly& big, const Poly& small) {
  const PreparedField& f = fp();
  const auto by_e = [](const Term& x, const Term& y) { return x.e < y.e; };
  Poly r(big.size() * small.size());
  std::vector<size_t> bounds{0};  // run k is r[bounds[k], bounds[k + 1])
  size_t w = 0;
  for (const Term& y : small) {
    const uint64_t lim = f.q - y.e;  // x.e + y.e >= q exactly when x.e >= lim (y.e < q)
    const auto wraps = std::lower_bound(big.begin(), big.end(), Term{lim, 0}, by_e);
    for (auto x = wraps; x != big.end(); ++x) r[w++] = {x->e - lim, f.bp.mul(x->c, y.c)};
    bounds.push_back(w);
    for (auto x = big.begin(); x != wraps; ++x) r[w++] = {x->e + y.e, f.bp.mul(x->c, y.c)};
    bounds.push_back(w);
  }
  Poly tmp(r.size());
  while (bounds.size() > 2) {
    std::vector<size_t> next{0};
    for (size_t k = 0; k + 1 < bounds.size(); k += 2) {
      const size_t lo = bounds[k], mid = bounds[k + 1], hi = k + 2 < bounds.size() ? bounds[k + 2] : mid;
      std::merge(r.begin() + static_cast<std::ptrdiff_t>(lo), r.begin() + static_cast<std::ptrdiff_t>(mid),
                 r.begin() + static_cast<std::ptrdiff_t>(mid), r.begin() + static_cast<std::ptrdiff_t>(hi),
                 tmp.begin() + static_cast<std::ptrdiff_t>(lo), by_e);
      next.push_back(hi);
    }
    r.swap(tmp);
    bounds = std::move(next);
  }
  combine_sorted(r);
  return r;
}

// a b; sizes are checked by the caller (multiply_checked).
Poly multiply(const Poly& a, const Poly& b) {
  if (a.empty() || b.empty()) return {};
  if (b.size() == 1 && b[0].e == 0) return scaled(a, b[0].c);
  if (a.size() == 1 && a[0].e == 0) return scaled(b, a[0].c);
  constexpr size_t kShort = 8, kLong = 64;  // where merging runs beats one sort (see above)
  if (a.size() >= kLong && b.size() <= kShort) return multiply_by_short(a, b);
  if (b.size() >= kLong && a.size() <= kShort) return multiply_by_short(b, a);
  const PreparedField& f = fp();
  Poly r;
  r.reserve(a.size() * b.size());
  for (const Term& x : a)
    for (const Term& y : b) r.push_back({detail::add_mod(x.e, y.e, f.q), f.bp.mul(x.c, y.c)});
  normalize(r);
  return r;
}

Poly multiply_checked(const Poly& a, const Poly& b) {
  if (over_limit(a.size() * b.size())) return {};
  return multiply(a, b);
}

const Poly& one_poly() {
  static const Poly one{{0, 1}};
  return one;
}

// An exp-free value as a polynomial: x_p z^0.
Poly constant_poly(const FF& s) { return s.p == 0 ? Poly{} : Poly{{0, s.p}}; }

// ---- Formal bounds (GrMeta): the rules of fraction arithmetic on the unmerged form.

double log2_abs(int64_t x) {  // log2 |x| (0 for |x| <= 1)
  const uint64_t m = x < 0 ? uint64_t{0} - static_cast<uint64_t>(x) : static_cast<uint64_t>(x);
  return m <= 1 ? 0 : std::log2(static_cast<double>(m));
}
double log2_sum(double a, double b) {  // log2(2^a + 2^b)
  const double hi = std::max(a, b), lo = std::min(a, b);
  return hi + std::log2(1 + std::exp2(lo - hi));
}

// exp-free + exp-free: one merged coefficient a/b + c/d = (ad + cb) / bd.
GrMeta scalar_add(const GrMeta& a, const GrMeta& b) {
  if (a.zero) return b;
  if (b.zero) return a;
  GrMeta r;
  r.cn = std::max(a.cn + b.cd, b.cn + a.cd);
  r.cd = a.cd + b.cd;
  r.hcn = log2_sum(a.hcn + b.hcd, b.hcn + a.hcd);
  r.hcd = a.hcd + b.hcd;
  return r;
}

// The terms of both (no merging).
GrMeta term_union(const GrMeta& a, const GrMeta& b) {
  if (a.zero) return b;
  if (b.zero) return a;
  GrMeta r;
  r.k = a.k + b.k;
  r.cn = std::max(a.cn, b.cn), r.cd = std::max(a.cd, b.cd);
  r.eg = std::max(a.eg, b.eg), r.eh = std::max(a.eh, b.eh);
  r.hcn = std::max(a.hcn, b.hcn), r.hcd = std::max(a.hcd, b.hcd);
  r.hen = std::max(a.hen, b.hen), r.hed = std::max(a.hed, b.hed);
  r.ex = a.ex || b.ex;
  return r;
}

// Every product of a term of a with a term of b: coefficients multiply, exponents add.
GrMeta product(const GrMeta& a, const GrMeta& b) {
  GrMeta r;
  r.k = a.k * b.k;
  r.cn = a.cn + b.cn;
  r.cd = a.cd + b.cd;
  r.hcn = a.hcn + b.hcn;
  r.hcd = a.hcd + b.hcd;
  r.ex = a.ex || b.ex;
  if (!a.ex) {
    r.eg = b.eg, r.eh = b.eh, r.hen = b.hen, r.hed = b.hed;
  } else if (!b.ex) {
    r.eg = a.eg, r.eh = a.eh, r.hen = a.hen, r.hed = a.hed;
  } else {  // g/h + g'/h' = (g h' + g' h) / (h h')
    r.eg = std::max(a.eg + b.eh, b.eg + a.eh);
    r.eh = a.eh + b.eh;
    r.hen = log2_sum(a.hen + b.hed, b.hen + a.hed);
    r.hed = a.hed + b.hed;
  }
  return r;
}

// Each coefficient divided by (exp-free) s.
GrMeta divided(const GrMeta& a, const GrMeta& s) {
  GrMeta r = a;
  r.zero = false;
  r.cn = a.cn + s.cd;
  r.cd = a.cd + s.cn;
  r.hcn = a.hcn + s.hcd;
  r.hcd = a.hcd + s.hcn;
  return r;
}

// ---- Denominator factors (identity by pointer).

bool same_factors(const std::shared_ptr<const Factors>& a, const std::shared_ptr<const Factors>& b) {
  if (a == b) return true;
  const size_t na = a ? a->size() : 0, nb = b ? b->size() : 0;
  if (na != nb) return false;
  for (size_t i = 0; i < na; ++i)
    if ((*a)[i].poly != (*b)[i].poly) return false;
  return true;
}

bool by_pointer(const Factor& x, const Factor& y) { return x.poly.get() < y.poly.get(); }

Factors list(const std::shared_ptr<const Factors>& f) { return f ? *f : Factors{}; }

// a \ b as multisets.
Factors minus(const Factors& a, const Factors& b) {
  Factors r;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(r), by_pointer);
  return r;
}
Factors plus(const Factors& a, const Factors& b) {
  Factors r;
  std::merge(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(r), by_pointer);
  return r;
}
std::shared_ptr<const Factors> share(Factors f) {
  if (f.empty()) return nullptr;
  return std::make_shared<const Factors>(std::move(f));
}

// The product of the factors' polynomials, and of their bounds.
Poly expand(const Factors& fs) {
  Poly r = one_poly();
  for (const Factor& f : fs) r = multiply_checked(r, *f.poly);
  return r;
}
GrMeta expand_meta(const Factors& fs) {
  GrMeta r;
  for (const Factor& f : fs) r = product(r, f.meta);
  return r;
}

Poly poly_of(const GR& x) { return x.exp_free() ? constant_poly(x.s) : *x.num; }

GR fraction(Poly n, std::shared_ptr<const Factors> den, const GrMeta& meta) {
  GR r;
  if (over_limit(n.size())) n.clear();
  r.num = std::make_shared<Poly>(std::move(n));
  r.den = std::move(den);
  r.meta = meta;
  r.meta.zero = false;
  return r;
}

// Once the evaluation is invalid (a polynomial over the limit), its values mean nothing: the
// polynomial operations stop working (the caller falls back to the field test).
bool given_up() { return !field_context().invalid.empty(); }

GR add(const GR& a, const GR& b, bool sub) {
  MG_CHECK(!a.open && !b.open, "group ring: a value read during its accumulation");
  if (a.exp_free() && b.exp_free()) {
    GR r;
    r.s = sub ? a.s - b.s : a.s + b.s;
    r.meta = scalar_add(a.meta, b.meta);
    return r;
  }
  if (given_up()) return GR{};
  if (b.meta.zero) return a;
  if (a.meta.zero) {  // b or -b: keep b's denominator (no common-denominator expansion)
    if (!sub) return b;
    GR r = b;
    if (b.exp_free()) {
      r.s = a.s - b.s;
    } else {
      Poly n = *b.num;
      for (Term& t : n) t.c = fp().p - t.c;  // c != 0 in a normalized polynomial
      r.num = std::make_shared<Poly>(std::move(n));
    }
    return r;
  }
  if (same_factors(a.den, b.den))
    return fraction(merge(poly_of(a), poly_of(b), sub), a.exp_free() ? b.den : a.den,
                    term_union(a.meta, b.meta));
  const Factors da = list(a.den), db = list(b.den);
  const Factors only_a = minus(da, db), only_b = minus(db, da);
  const Poly na = multiply_checked(poly_of(a), expand(only_b));
  const Poly nb = multiply_checked(poly_of(b), expand(only_a));
  return fraction(merge(na, nb, sub), share(plus(da, only_b)),
                  term_union(product(a.meta, expand_meta(only_b)),
                             product(b.meta, expand_meta(only_a))));
}

GR invalid_gr(const std::string& what) {
  set_invalid(what);
  return GR{};
}

}  // namespace

FieldParams random_group_ring_params(Rng& rng) {
  auto draw = [&] {
    for (;;) {
      const uint64_t x = (uint64_t{1} << 61) + rng.below(uint64_t{1} << 61);
      if (is_prime_u64(x)) return x;
    }
  };
  FieldParams f;
  f.p = draw();
  f.q = draw();
  return f;
}

GR operator+(const GR& a, const GR& b) { return add(a, b, false); }
GR operator-(const GR& a, const GR& b) { return add(a, b, true); }

GR operator*(const GR& a, const GR& b) {
  MG_CHECK(!a.open && !b.open, "group ring: a value read during its accumulation");
  if (a.exp_free() && b.exp_free()) {
    GR r;
    r.s = a.s * b.s;
    r.meta = product(a.meta, b.meta);
    return r;
  }
  if (a.meta.zero || b.meta.zero) return Arith<GR>::zero();
  if (given_up()) return GR{};
  return fraction(multiply_checked(poly_of(a), poly_of(b)), share(plus(list(a.den), list(b.den))),
                  product(a.meta, b.meta));
}

GR operator/(const GR& a, const GR& b) {
  MG_CHECK(!a.open && !b.open, "group ring: a value read during its accumulation");
  FieldContext& ctx = field_context();
  if (b.exp_free()) {
    if (a.exp_free()) {
      GR r;
      r.s = a.s / b.s;  // flags a zero divisor in either component
      r.meta = divided(a.meta, b.meta);
      return r;
    }
    if (b.s.p == 0 || b.s.q == 0) ctx.zero_divisor = true;
    const uint64_t inv = b.s.p == 0 ? 0 : pow_memo(b.s.p, fp().p - 2, fp().bp, 0);
    return fraction(scaled(*a.num, inv), a.den, divided(a.meta, b.meta));
  }
  if (given_up()) return GR{};
  if (b.num->empty()) {  // the divisor's image vanished: this test fails (never redrawn)
    ctx.zero_divisor = true;
    return Arith<GR>::zero();
  }
  const Factors db = list(b.den);
  const Poly up = multiply_checked(poly_of(a), expand(db));  // a / (N / D) = a D / N
  const GrMeta up_meta = product(a.meta, expand_meta(db));
  if (b.meta.k <= 1) {  // a formal monomial c exp(g): a unit, inverted (1/c) exp(-g)
    const Term t = (*b.num)[0];
    const Poly inv{{t.e == 0 ? 0 : fp().q - t.e, pow_memo(t.c, fp().p - 2, fp().bp, 0)}};
    GrMeta im = b.meta;
    im.cn = b.meta.cd, im.cd = b.meta.cn;
    im.hcn = b.meta.hcd, im.hcd = b.meta.hcn;
    return fraction(multiply_checked(up, inv), a.exp_free() ? nullptr : a.den, product(up_meta, im));
  }
  Factors den = list(a.exp_free() ? nullptr : a.den);
  den = plus(den, Factors{Factor{b.num, b.meta}});
  return fraction(up, share(std::move(den)), up_meta);
}

GR Arith<GR>::from_ff(const FF& x) {
  GR r;
  r.s = x;
  r.meta.cn = 1;  // a variable
  return r;
}

GR Arith<GR>::from_rational(int64_t num, int64_t den) {
  GR r;
  r.s = Arith<FF>::from_rational(num, den);
  r.meta.hcn = log2_abs(num);
  r.meta.hcd = log2_abs(den);
  return r;
}

GR Arith<GR>::exp(const GR& x) {
  if (!x.exp_free()) return invalid_gr("exp of a value that holds an exp: two exps on one path (not Lax)");
  GR r;
  r.num = std::make_shared<Poly>(Poly{{x.s.q, 1}});
  r.meta.eg = x.meta.cn;
  r.meta.eh = x.meta.cd;
  r.meta.hen = x.meta.hcn;
  r.meta.hed = x.meta.hcd;
  r.meta.ex = true;
  return r;
}

GR Arith<GR>::sqrt(const GR& x) {
  if (!x.exp_free()) return invalid_gr("sqrt of a value that holds an exp (no group-ring meaning)");
  GR r;
  r.s = Arith<FF>::sqrt(x.s);  // the context's fresh-variable oracle: a new variable
  r.meta.cn = 1;
  return r;
}

GR Arith<GR>::silu(const GR& x) { return x / (from_rational(1, 1) + exp(zero() - x)); }
GR Arith<GR>::relu(const GR&) { return invalid_gr("relu is not in the Lax fragment"); }
GR Arith<GR>::gelu(const GR&) { return invalid_gr("gelu is not in the Lax fragment"); }

void Arith<GR>::add_into(GR& acc, const GR& x) {
  MG_CHECK(!x.open, "group ring: a value read during its accumulation");
  if (x.meta.zero) return;
  if (acc.exp_free() && x.exp_free()) {
    acc = acc + x;
    return;
  }
  if (given_up()) return;
  if (!same_factors(acc.den, x.den) && !acc.meta.zero) {
    finish_sum(acc);
    acc = acc + x;
    return;
  }
  if (!acc.open) {  // a private, growable copy
    const bool was_zero = acc.meta.zero;
    acc.num = std::make_shared<Poly>(was_zero ? Poly{} : poly_of(acc));
    if (was_zero) acc.den = x.den, acc.meta = GrMeta{}, acc.meta.zero = true;
    acc.open = true;
  }
  if (x.exp_free()) {
    if (x.s.p != 0) acc.num->push_back({0, x.s.p});
  } else {
    acc.num->insert(acc.num->end(), x.num->begin(), x.num->end());
  }
  acc.meta = term_union(acc.meta, x.meta);
  if (acc.num->size() > 2 * kMaxPolyTerms) finish_sum(acc);
}

void Arith<GR>::finish_sum(GR& acc) {
  if (!acc.open) return;
  normalize_sum(*acc.num);
  acc.open = false;
  acc.meta.zero = false;
  if (over_limit(acc.num->size())) acc.num->clear();
}

void matmul_block(const GR* a, const GR* b, GR* out, int64_t m, int64_t k, int64_t n) {
  const auto at = [&](int64_t i, int64_t t) -> const GR& { return a[i * k + t]; };
  const auto bt = [&](int64_t t, int64_t j) -> const GR& { return b[t * n + j]; };
  bool a_free = true, b_free = true;
  for (int64_t i = 0; i < m * k; ++i) a_free = a_free && a[i].exp_free();
  for (int64_t i = 0; i < k * n; ++i) b_free = b_free && b[i].exp_free();
  auto put = [&](int64_t i, int64_t j, GR v) {
    GR& o = out[i * n + j];
    o = o.meta.zero ? std::move(v) : o + v;
  };
  if (a_free && b_free) {  // the field's fast loop, with uniform bounds
    std::vector<FF> fa(static_cast<size_t>(m * k)), fb(static_cast<size_t>(k * n)),
        fo(static_cast<size_t>(m * n));
    GrMeta ma, mb;
    ma.zero = mb.zero = true;
    for (int64_t i = 0; i < m * k; ++i) fa[static_cast<size_t>(i)] = a[i].s, ma = term_union(ma, a[i].meta);
    for (int64_t i = 0; i < k * n; ++i) fb[static_cast<size_t>(i)] = b[i].s, mb = term_union(mb, b[i].meta);
    matmul_block(fa.data(), fb.data(), fo.data(), m, k, n);
    GrMeta one = product(ma, mb), sum = one;
    sum.k = 1;
    for (int64_t t = 1; t < k; ++t) sum = scalar_add(sum, one);  // k-fold merged sum
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        GR v;
        v.s = fo[static_cast<size_t>(i * n + j)];
        v.meta = sum;
        put(i, j, std::move(v));
      }
    return;
  }
  // One side exp-free, the other's terms along k sharing one denominator: the terms of an
  // output entry are those of the k polynomials, in an order that is the same for the whole row
  // (column): sorted once, then every entry is one linear pass.
  const PreparedField& f = fp();
  GrMeta scalar_side;  // the bounds of every entry of the exp-free side
  scalar_side.zero = true;
  if (a_free || b_free) {
    const GR* s = b_free ? b : a;
    for (int64_t i = 0; i < k * (b_free ? n : m); ++i) scalar_side = term_union(scalar_side, s[i].meta);
    scalar_side.k = 1;
  }
  std::vector<uint64_t> scalar_p;
  auto run_line = [&](bool poly_is_a, int64_t line) -> bool {
    auto poly_at = [&](int64_t t) -> const GR& { return poly_is_a ? at(line, t) : bt(t, line); };
    for (int64_t t = 0; t < k; ++t)
      if (poly_at(t).open || !same_factors(poly_at(t).den, poly_at(0).den)) return false;
    struct Entry {
      uint64_t e, c;
      int64_t t;
    };
    std::vector<Entry> terms;
    GrMeta mp;
    mp.zero = true;
    for (int64_t t = 0; t < k; ++t) {
      const GR& x = poly_at(t);
      mp = term_union(mp, x.meta);
      if (x.exp_free()) {
        if (x.s.p != 0) terms.push_back({0, x.s.p, t});
      } else {
        for (const Term& u : *x.num) terms.push_back({u.e, u.c, t});
      }
    }
    std::sort(terms.begin(), terms.end(), [](const Entry& x, const Entry& y) { return x.e < y.e; });
    const int64_t others = poly_is_a ? n : m;
    const GrMeta meta = product(mp, scalar_side);
    if (scalar_p.empty()) {  // the exp-free side's Z_p values, one contiguous line per output
      scalar_p.resize(static_cast<size_t>(others * k));
      for (int64_t o = 0; o < others; ++o)
        for (int64_t t = 0; t < k; ++t)
          scalar_p[static_cast<size_t>(o * k + t)] = (poly_is_a ? bt(t, o) : at(o, t)).s.p;
    }
    std::shared_ptr<const Factors> den;
    for (int64_t t = 0; t < k && !den; ++t) den = poly_at(t).den;
    for (int64_t o = 0; o < others; ++o) {
      const uint64_t* sp = scalar_p.data() + o * k;
      Poly r;
      r.reserve(terms.size());
      for (size_t s = 0; s < terms.size();) {
        const uint64_t e = terms[s].e;
        uint64_t c = 0;
        for (; s < terms.size() && terms[s].e == e; ++s)
          c = detail::add_mod(c, f.bp.mul(terms[s].c, sp[terms[s].t]), f.p);
        if (c != 0) r.push_back({e, c});
      }
      GR v = fraction(std::move(r), den, meta);
      if (poly_is_a) put(line, o, std::move(v));
      else put(o, line, std::move(v));
    }
    return true;
  };
  for (int64_t line = 0; line < (b_free ? m : n); ++line) {
    check_deadline();
    if ((b_free || a_free) && run_line(b_free, line)) continue;
    // The general case: every product, summed (without quadratic copying).
    for (int64_t o = 0; o < (b_free ? n : m); ++o) {
      const int64_t i = b_free ? line : o, j = b_free ? o : line;
      GR acc = out[i * n + j];
      for (int64_t t = 0; t < k; ++t) Arith<GR>::add_into(acc, at(i, t) * bt(t, j));
      Arith<GR>::finish_sum(acc);
      out[i * n + j] = std::move(acc);
    }
  }
}

const Poly& DenCache::expand(const std::shared_ptr<const Factors>& den, bool* too_large) {
  if (!den) return one_poly();
  std::vector<const Poly*> key;
  size_t size = 1;
  for (const Factor& f : *den) {
    key.push_back(f.poly.get());
    size *= std::max<size_t>(1, f.poly->size());
    if (size > kMaxCompareTerms) {
      *too_large = true;
      return one_poly();
    }
  }
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  Poly r = one_poly();
  for (const Factor& f : *den) r = multiply(r, *f.poly);
  return cache_.emplace(std::move(key), std::move(r)).first->second;
}

bool group_ring_agree(const GR& a, const GR& b, DenCache& cache, bool* too_large) {
  if (a.exp_free() && b.exp_free()) return a.s.p == b.s.p && a.s.q == b.s.q;
  const Poly pa = poly_of(a), pb = poly_of(b);
  const Poly& da = cache.expand(a.exp_free() ? nullptr : a.den, too_large);
  const Poly& db = cache.expand(b.exp_free() ? nullptr : b.den, too_large);
  if (*too_large) return false;
  if (da == db && pa == pb) return true;
  if (pa.size() * db.size() > kMaxCompareTerms || pb.size() * da.size() > kMaxCompareTerms) {
    *too_large = true;
    return false;
  }
  return multiply(pa, db) == multiply(pb, da);  // N_a D_b == N_b D_a
}

GrBound group_ring_bound(const GR& a, const GR& b) {
  const double p = static_cast<double>(kLeastGroupRingField.p);
  const double q = static_cast<double>(kLeastGroupRingField.q);
  const Factors da = list(a.exp_free() ? nullptr : a.den), db = list(b.exp_free() ? nullptr : b.den);
  GrBound r;
  if (a.exp_free() && b.exp_free()) {  // Schwartz-Zippel in Z_p (Z_q ignored: conservative)
    const GrMeta d = scalar_add(a.meta, b.meta);
    r.m = 1;
    r.d_coef = d.cn;
    r.content_bits_p = d.hcn;
  } else {
    GrMeta ma = a.meta, mb = b.meta;
    ma.zero = mb.zero = false;
    const GrMeta u = term_union(product(ma, expand_meta(db)), product(mb, expand_meta(da)));
    r.m = u.k;
    r.d_exp = u.eg + u.eh;
    // A merged coefficient sums at most m terms P/Q: numerator degree cn + (m - 1) cd, and an
    // l1 norm of at most m 2^hcn 2^((m - 1) hcd).
    r.d_coef = u.cn + (r.m - 1) * u.cd;
    r.content_bits_q = u.hen + u.hed + 1;  // G_i H_j - G_j H_i
    r.content_bits_p = std::log2(r.m) + u.hcn + (r.m - 1) * u.hcd;
  }
  // A prime >= 2^61 divides a non-zero integer below 2^b for at most floor(b / 61) primes.
  auto divisors = [](double bits) { return std::floor(bits / 61); };
  r.epsilon = (r.m - 1) * r.d_exp / q + r.d_coef / p +
              ((r.m - 1) * divisors(r.content_bits_q) + divisors(r.content_bits_p)) / kPrimesInRange;
  if (std::isnan(r.epsilon)) r.epsilon = INFINITY;  // a bound that overflowed (inf - inf): none
  return r;
}

}  // namespace mugraph::verify
