#include "verify/finite_field.h"

#include <array>
#include <exception>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "support/deadline.h"

namespace mugraph::verify {
namespace {


// x mod m for a signed x.
uint64_t reduce(int64_t x, uint64_t m) {
  if (x >= 0) return static_cast<uint64_t>(x) % m;
  const uint64_t r = static_cast<uint64_t>(-(x + 1)) % m;  // (|x| - 1) mod m, no overflow
  return m - 1 - r;
}

// a / b in Z_m via Fermat's inverse b^(m-2) (memo table `which`); records a zero divisor and
// returns 0 when b = 0.
uint64_t checked_div(uint64_t a, uint64_t b, const Barrett& bm, int which) {
  if (b == 0) {
    field_context().zero_divisor = true;
    return 0;
  }
  return bm.mul(a, pow_memo(b, bm.m - 2, bm, which));
}

// splitmix64's output function: a bijective 64-bit mixer.
uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// A uniform value below m (< 2^62) from hash h: take the low bits of m's width, redraw above m.
uint64_t hashed_below(uint64_t h, uint64_t m) {
  const int bits = 64 - __builtin_clzll(m);
  const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  for (uint64_t c = 1;; ++c) {
    const uint64_t v = h & mask;
    if (v < m) return v;
    h = mix(h + c * 0x9e3779b97f4a7c15ULL);
  }
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

uint64_t pow_barrett(uint64_t a, uint64_t e, const Barrett& b) {
  uint64_t r = 1 % b.m;
  for (; e; e >>= 1, a = b.mul(a, a))
    if (e & 1) r = b.mul(r, a);
  return r;
}

namespace {
// Slots per memo table. Each starts with 2^16. The power-map roots' tables (2, 3) grow to 2^19
// (8 MB each) once the thread has missed 4x its slots since it last grew, and then keep that
// size: a search screens every candidate with one draw, so the same radicands come back across
// screens, but one screen of QKNorm at paper shapes takes ~100k roots (every block's K tiles).
// There 7% of root lookups hit with 2^16 slots and 62% with 2^19 (88% with 2^21, which did no
// more tasks), and this with the f16 rounding took its screens from 62 to 46-52 ms each
// (bench/results/search.md, 2026-11-28, midday). A short-lived thread (a certify test's
// second evaluation) that takes few roots stays at 1 MB a table.
constexpr size_t kMemoSlots = size_t{1} << 16;
constexpr size_t kRootMemoSlots = size_t{1} << 19;
struct Memo {
  uint64_t m = 0, e = 0;
  uint64_t misses = 0;  // since the table was last sized
  std::vector<std::pair<uint64_t, uint64_t>> slots;  // (a, a^e); a = ~0 marks an empty one
};
// This thread's memo `table` for (m, e), emptied when either changed (its size kept). Its size
// is a power of 2.
Memo& memo(uint64_t e, const Barrett& b, int table) {
  thread_local std::array<Memo, 4> memos;
  Memo& t = memos[static_cast<size_t>(table)];
  if (t.m != b.m || t.e != e || t.slots.empty()) {
    t.m = b.m;
    t.e = e;
    t.misses = 0;
    t.slots.assign(t.slots.empty() ? kMemoSlots : t.slots.size(), {~uint64_t{0}, 0});
  } else if (table >= 2 && t.slots.size() < kRootMemoSlots && t.misses >= 4 * t.slots.size()) {
    std::vector<std::pair<uint64_t, uint64_t>> old(kRootMemoSlots, {~uint64_t{0}, 0});
    old.swap(t.slots);
    for (const auto& [a, r] : old)
      if (a != ~uint64_t{0}) t.slots[mix(a) & (kRootMemoSlots - 1)] = {a, r};
    t.misses = 0;
  }
  return t;
}

// a[i]^e mod m for kPowLanes values a[i] < m at once, in place: square-and-multiply in
// Montgomery form with the lanes' independent chains interleaved.
void pow_lanes(uint64_t* a, uint64_t e, const Montgomery& mg) {
  uint64_t r[kPowLanes];
  for (int i = 0; i < kPowLanes; ++i) r[i] = mg.to(1 % mg.m), a[i] = mg.to(a[i]);
  for (; e; e >>= 1) {
    if (e & 1)
      for (int i = 0; i < kPowLanes; ++i) r[i] = mg.mul(r[i], a[i]);
    for (int i = 0; i < kPowLanes; ++i) a[i] = mg.mul(a[i], a[i]);
  }
  for (int i = 0; i < kPowLanes; ++i) a[i] = mg.from(r[i]);
}
}  // namespace

uint64_t pow_memo(uint64_t a, uint64_t e, const Barrett& b, int table) {
  Memo& t = memo(e, b, table);
  auto& s = t.slots[mix(a) & (t.slots.size() - 1)];
  if (s.first != a) s = {a, pow_barrett(a, e, b)}, ++t.misses;
  return s.second;
}

Montgomery::Montgomery(uint64_t modulus) : m(modulus) {
  MG_CHECK(modulus % 2 == 1 && modulus < (uint64_t{1} << 62), "Montgomery needs an odd modulus below 2^62");
  uint64_t x = modulus;  // 1/m mod 2^3 (m odd); each Newton step doubles the correct bits
  for (int i = 0; i < 5; ++i) x *= 2 - modulus * x;
  neg_inv = ~x + 1;
  const uint64_t r = (~uint64_t{0} % modulus + 1) % modulus;  // 2^64 mod m
  r2 = mul_mod_exact(r, r, modulus);
}

void pow_memo_all(uint64_t* a, size_t n, uint64_t e, const Barrett& b, int table) {
  if (n == 0) return;
  Memo& t = memo(e, b, table);
  auto& slots = t.slots;
  const size_t mask = slots.size() - 1;
  const Montgomery mg(b.m);
  uint64_t lane[kPowLanes];
  size_t at[kPowLanes];
  int used = 0;
  auto flush = [&] {
    for (int i = used; i < kPowLanes; ++i) lane[i] = 1;  // idle lanes raise 1
    const std::array<uint64_t, kPowLanes> base = std::to_array(lane);
    pow_lanes(lane, e, mg);
    for (int i = 0; i < used; ++i) {
      a[at[i]] = lane[i];
      slots[mix(base[static_cast<size_t>(i)]) & mask] = {base[static_cast<size_t>(i)], lane[i]};
    }
    used = 0;
  };
  for (size_t i = 0; i < n; ++i) {
    if ((i & 0xffff) == 0xffff) check_deadline();
    const auto& s = slots[mix(a[i]) & mask];
    if (s.first == a[i]) {
      a[i] = s.second;
      continue;
    }
    ++t.misses;
    lane[used] = a[i];
    at[used++] = i;
    if (used == kPowLanes) flush();
  }
  if (used > 0) flush();
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

FieldParams random_field_params(Rng& rng) {
  FieldParams f;
  for (;;) {
    f.q = ((uint64_t{1} << 30) + rng.below(uint64_t{1} << 30)) | 3;  // = 3 (mod 4)
    if (is_prime_u64(f.q)) break;
  }
  const uint64_t kmin = ((uint64_t{1} << 61) + f.q - 1) / f.q, kmax = ((uint64_t{1} << 62) - 1) / f.q;
  for (;;) {
    uint64_t k = kmin + rng.below(kmax - kmin);
    k += (2 + 4 - k % 4) % 4;  // k = 2 (mod 4): p = k q + 1 = 3 (mod 4)
    for (; k <= kmax; k += 4) {
      const uint64_t p = k * f.q + 1;
      if (p >= (uint64_t{1} << 62)) break;
      if (is_prime_u64(p)) {
        f.p = p;
        return f;
      }
    }
  }
}

uint64_t random_root_of_unity(const FieldParams& f, Rng& rng) {
  // h^((p-1)/q) has order 1 or q (q prime); it is 1 for only (p-1)/q of the p-1 choices of h.
  for (;;) {
    const uint64_t h = 1 + rng.below(f.p - 1);
    const uint64_t w = pow_mod(h, (f.p - 1) / f.q, f.p);
    if (w != 1) return w;
  }
}

FieldContext::FieldContext(const FieldParams& f, uint64_t w, SqrtMode mode, uint64_t oracle_seed)
    : params(f), prepared(f), omega(w), sqrt_mode(mode) {
  oracle.seed = oracle_seed;
  if (w == 0) return;  // no exp through w (the group-ring test keeps exps formal)
  // The last few tables built on this thread, newest last.
  struct Built {
    uint64_t p, q, w;
    std::shared_ptr<const OmegaTables> tables;
  };
  thread_local std::vector<Built> built;
  for (const Built& b : built)
    if (b.p == f.p && b.q == f.q && b.w == w) {
      omega_tables = b.tables;
      return;
    }
  auto t = std::make_shared<OmegaTables>();
  const Barrett& bp = prepared.bp;
  t->lo.resize(uint64_t{1} << 16);
  t->hi.resize((f.q >> 16) + 1);
  uint64_t x = 1;
  for (uint64_t& v : t->lo) v = x, x = bp.mul(x, w % f.p);
  const uint64_t step = x;  // w^(2^16)
  x = 1;
  for (uint64_t& v : t->hi) v = x, x = bp.mul(x, step);
  omega_tables = t;
  if (built.size() >= 4) built.erase(built.begin());
  built.push_back({f.p, f.q, w, std::move(t)});
}

uint64_t FieldContext::omega_pow(uint64_t x) const {
  return prepared.bp.mul(omega_tables->hi[x >> 16], omega_tables->lo[x & 0xffff]);
}

FF SqrtOracle::root(const FF& x, const FieldParams& f) const {
  const FF r = hashed_ff(f, seed, x.p, x.has_q ? (x.q << 1) | 1 : 0);
  return {r.p, x.has_q ? r.q : 0, x.has_q};
}

FieldScope::FieldScope(FieldContext& ctx) : prev_(detail::tls_field_context) {
  detail::tls_field_context = &ctx;
}
FieldScope::~FieldScope() { detail::tls_field_context = prev_; }

void parallel_in_field(size_t n, const std::function<void(size_t)>& body) {
  if (n <= 1) {
    if (n == 1) body(0);
    return;
  }
  FieldContext& parent = field_context();
  const Deadline deadline = current_deadline();  // the workers stop when this thread would
  std::vector<FieldContext> ctx(n - 1, parent);
  std::vector<std::exception_ptr> errors(n);
  auto run = [&](size_t t) {  // body t >= 1 under its copy
    FieldScope scope(ctx[t - 1]);
    DeadlineScope stop(deadline);
    try {
      body(t);
    } catch (...) {
      errors[t] = std::current_exception();
    }
  };
  std::vector<std::thread> workers;
  std::vector<size_t> here;  // bodies whose thread could not be started
  for (size_t t = 1; t < n; ++t) {
    try {
      workers.emplace_back(run, t);
    } catch (const std::system_error&) {
      here.push_back(t);
    }
  }
  try {
    body(0);
  } catch (...) {
    errors[0] = std::current_exception();
  }
  for (size_t t : here) run(t);
  for (std::thread& w : workers) w.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  for (const FieldContext& c : ctx) {
    parent.zero_divisor = parent.zero_divisor || c.zero_divisor;
    if (parent.invalid.empty()) parent.invalid = c.invalid;
  }
}

FieldContext& field_context() {
  MG_CHECK(detail::tls_field_context != nullptr, "finite-field arithmetic outside a FieldScope");
  return *detail::tls_field_context;
}

FF operator/(const FF& a, const FF& b) {
  const PreparedField& f = field_context().prepared;
  const bool has_q = a.has_q && b.has_q;
  return {checked_div(a.p, b.p, f.bp, 0), has_q ? checked_div(a.q, b.q, f.bq, 1) : 0, has_q};
}

FF random_ff(const FieldParams& f, Rng& rng) { return {rng.below(f.p), rng.below(f.q), true}; }

FF hashed_ff(const FieldParams& f, uint64_t key, uint64_t stream, uint64_t index) {
  return hashed_ff_at(f, hashed_stream(key, stream), index);
}

uint64_t hashed_stream(uint64_t key, uint64_t stream) { return mix(mix(key) ^ stream); }

FF hashed_ff_at(const FieldParams& f, uint64_t stream_hash, uint64_t index) {
  const uint64_t h = mix(stream_hash ^ index);
  return {hashed_below(h, f.p), hashed_below(mix(h ^ 0x5851f42d4c957f2dULL), f.q), true};
}

void matmul_block(const FF* a, const FF* b, FF* out, int64_t m, int64_t k, int64_t n) {
  const PreparedField& f = detail::params();
  constexpr int64_t kLazy = 15;  // 15 (m-1)^2 + m < 2^128 for m < 2^62
  const auto nn = static_cast<size_t>(n);
  // b as two plain arrays (the hot loop then streams 8-byte values, not 24-byte structs).
  std::vector<uint64_t> bp(static_cast<size_t>(k) * nn), bq(bp.size());
  std::vector<char> colq(nn, 1);
  for (int64_t t = 0; t < k; ++t)
    for (size_t j = 0; j < nn; ++j) {
      const FF& x = b[static_cast<size_t>(t) * nn + j];
      bp[static_cast<size_t>(t) * nn + j] = x.p;
      bq[static_cast<size_t>(t) * nn + j] = x.q;
      colq[j] &= x.has_q;
    }
  std::vector<unsigned __int128> accp(nn), accq(nn);
  const bool q_small = f.q < (uint64_t{1} << 32);
  for (int64_t i = 0; i < m; ++i) {
    check_deadline();  // per row: a model-size matmul takes seconds
    std::fill(accp.begin(), accp.end(), 0);
    std::fill(accq.begin(), accq.end(), 0);
    bool rowq = true;
    for (int64_t t = 0; t < k; ++t) {
      const FF& x = a[i * k + t];
      rowq &= x.has_q;
      const uint64_t* rp = bp.data() + static_cast<size_t>(t) * nn;
      const uint64_t* rq = bq.data() + static_cast<size_t>(t) * nn;
      for (size_t j = 0; j < nn; ++j) accp[j] += static_cast<unsigned __int128>(x.p) * rp[j];
      if (q_small)  // q < 2^32: the product fits in 64 bits (a cheaper multiply)
        for (size_t j = 0; j < nn; ++j) accq[j] += x.q * rq[j];
      else
        for (size_t j = 0; j < nn; ++j) accq[j] += static_cast<unsigned __int128>(x.q) * rq[j];
      if ((t + 1) % kLazy == 0)
        for (size_t j = 0; j < nn; ++j) {
          accp[j] = reduce_u128(accp[j], f.bp, f.r64p);
          accq[j] = reduce_u128(accq[j], f.bq, f.r64q);
        }
    }
    for (size_t j = 0; j < nn; ++j) {
      FF& o = out[static_cast<size_t>(i) * nn + j];
      const bool hq = o.has_q && rowq && colq[j];
      o = {detail::add_mod(o.p, reduce_u128(accp[j], f.bp, f.r64p), f.p),
           hq ? detail::add_mod(o.q, reduce_u128(accq[j], f.bq, f.r64q), f.q) : 0, hq};
    }
  }
}

FF Arith<FF>::from_rational(int64_t num, int64_t den) {
  const FieldParams& f = field_context().params;
  return FF{reduce(num, f.p), reduce(num, f.q), true} / FF{reduce(den, f.p), reduce(den, f.q), true};
}

namespace {
// Batch inversion (one power for all): every nonzero x[i] becomes 1 / x[i] in Montgomery form
// (1 / x[i] 2^64 mod m, the form times_inverse_run reads); zeros stay zero. Prefix products,
// one inversion, then a backward sweep (3 multiplies per value instead of ~90), in Montgomery
// form (m < 2^62, odd), with the products run as kInvertLanes independent chains over
// contiguous quarters, interleaved (one chain is a serial run of multiplies: latency bound),
// plus one chain for the rest.
constexpr size_t kInvertLanes = 4;
void invert_in_place(std::vector<uint64_t>& x, const Barrett& b, const Montgomery& mg) {
  constexpr size_t L = kInvertLanes;
  const uint64_t one = mg.to(1 % b.m);
  const size_t n = x.size(), len = n / L, rest = L * len;  // lane j: [j len, (j + 1) len)
  for (uint64_t& v : x) v = mg.to(v);  // 0 stays 0
  std::vector<uint64_t> prefix(n);
  std::array<uint64_t, L + 1> run;  // lane L: [rest, n)
  run.fill(one);
  for (size_t i = 0; i < len; ++i)
    for (size_t j = 0; j < L; ++j) {
      const size_t k = j * len + i;
      if (x[k] != 0) run[j] = mg.mul(run[j], x[k]);
      prefix[k] = run[j];
    }
  for (size_t k = rest; k < n; ++k) {
    if (x[k] != 0) run[L] = mg.mul(run[L], x[k]);
    prefix[k] = run[L];
  }
  uint64_t all = one;
  for (uint64_t r : run) all = mg.mul(all, r);
  // 1 / (product of the nonzero values)
  const uint64_t inv_all = mg.to(pow_barrett(mg.from(all), b.m - 2, b));
  std::array<uint64_t, L + 1> inv;  // 1 / (lane j's product)
  for (size_t j = 0; j <= L; ++j) {
    inv[j] = inv_all;
    for (size_t o = 0; o <= L; ++o)
      if (o != j) inv[j] = mg.mul(inv[j], run[o]);
  }
  auto back = [&](size_t k, size_t first, uint64_t& lane_inv) {
    if (x[k] == 0) return;
    const uint64_t value = x[k];
    x[k] = mg.mul(lane_inv, k > first ? prefix[k - 1] : one);
    lane_inv = mg.mul(lane_inv, value);
  };
  for (size_t i = len; i-- > 0;)
    for (size_t j = 0; j < L; ++j) back(j * len + i, j * len, inv[j]);
  for (size_t k = n; k-- > rest;) back(k, rest, inv[L]);
}
}  // namespace

void Arith<FF>::invert_all(std::vector<FF>& v) {
  const PreparedField& f = field_context().prepared;
  MG_CHECK(f.mp.m == f.p && f.mq.m == f.q,
           "division in a field whose moduli are not odd and below 2^62");
  std::vector<uint64_t> ps(v.size()), qs(v.size());
  for (size_t i = 0; i < v.size(); ++i) ps[i] = v[i].p, qs[i] = v[i].has_q ? v[i].q : 0;
  invert_in_place(ps, f.bp, f.mp);
  invert_in_place(qs, f.bq, f.mq);
  for (size_t i = 0; i < v.size(); ++i) v[i].p = ps[i], v[i].q = qs[i];
}

FF Arith<FF>::times_inverse(const FF& a, const FF& inv) {
  FF out;
  times_inverse_run(&a, 0, &inv, 0, &out, 1);
  return out;
}

void Arith<FF>::times_inverse_run(const FF* a, int64_t sa, const FF* inv, int64_t sb, FF* out, int64_t n) {
  const PreparedField& f = detail::params();
  bool zero = false;
  for (int64_t i = 0; i < n; ++i) {
    const FF& x = a[i * sa];
    const FF& y = inv[i * sb];
    const bool has_q = x.has_q && y.has_q;
    zero = zero || y.p == 0 || (has_q && y.q == 0);
    out[i] = {f.mp.mul(x.p, y.p), has_q ? f.mq.mul(x.q, y.q) : 0, has_q};  // y: Montgomery form
  }
  if (zero) field_context().zero_divisor = true;
}

FF Arith<FF>::exp(const FF& x) {
  MG_CHECK(field_context().omega_tables, "exp in a field context without w");
  if (!x.has_q) return invalid("exp of a value with no Z_q part: two exps on one path (not Lax)");
  return {field_context().omega_pow(x.q), 0, false};
}

FF Arith<FF>::sqrt(const FF& x) {
  FieldContext& c = field_context();
  if (c.sqrt_mode == SqrtMode::kFreshVariable) return c.oracle.root(x, c.params);
  const PreparedField& f = c.prepared;
  return {pow_memo(x.p, (f.p + 1) / 4, f.bp, 2), x.has_q ? pow_memo(x.q, (f.q + 1) / 4, f.bq, 3) : 0,
          x.has_q};
}

namespace {

// THE ROOTS OF WHOLE TENSORS. A search screens every candidate with one draw, so a large tensor
// of radicands comes back whole from screen to screen: a wrong QKNorm candidate that takes sqrt
// of every entry of K's tiles raises 2^19 roots per screen (64 tiles of 8192), which thrash
// the per-value memo (2^19 slots; its look-ups are cache misses at that size) and cost ~0.1 s a
// screen. Here a call with at least kTensorRootsMin radicands is looked up whole: by a hash of
// its size and a few of its values, then compared value by value (a look-up serves only the same
// radicands in the same order, under the same moduli). Up to kTensorRootsValues values per
// thread are kept (32 bytes each: radicand and root, both parts), the least recently used
// dropped first; radicands without a Z_q part are not kept. A tensor is kept only the second time
// its hash is seen (the first time only the hash is noted): a thread that never meets the same
// radicands twice (certify's fresh primes, short-lived workers) keeps no roots.
constexpr size_t kTensorRootsMin = 1024;
constexpr size_t kTensorRootsValues = size_t{1} << 20;
struct TensorRoots {
  uint64_t p = 0, q = 0;                            // the moduli
  std::vector<std::pair<uint64_t, uint64_t>> radicands, roots;  // (p part, q part)
  uint64_t used = 0;                                // the clock at the last use
};
struct TensorRootCache {
  std::unordered_map<uint64_t, TensorRoots> entries;  // by tensor_hash
  std::unordered_set<uint64_t> seen;                  // hashes met once (emptied at 2^16)
  size_t values = 0;
  uint64_t clock = 0;
};
TensorRootCache& tensor_roots() {
  thread_local TensorRootCache cache;
  return cache;
}
uint64_t tensor_hash(const std::vector<FF>& v) {
  uint64_t h = mix(v.size());
  for (size_t k = 0; k < 16; ++k) {
    const FF& x = v[k * (v.size() - 1) / 15];
    h = mix(h ^ x.p) + x.q;
  }
  return mix(h);
}
bool same_radicands(const TensorRoots& e, const std::vector<FF>& v, uint64_t p, uint64_t q) {
  if (e.p != p || e.q != q || e.radicands.size() != v.size()) return false;
  for (size_t i = 0; i < v.size(); ++i)
    if (e.radicands[i].first != v[i].p || e.radicands[i].second != v[i].q || !v[i].has_q)
      return false;
  return true;
}

}  // namespace

size_t tensor_roots_kept() { return tensor_roots().values; }

void Arith<FF>::sqrt_all(std::vector<FF>& v) {
  FieldContext& c = field_context();
  if (c.sqrt_mode == SqrtMode::kFreshVariable) {
    for (size_t i = 0; i < v.size(); ++i) {
      if ((i & 0xffff) == 0xffff) check_deadline();
      v[i] = c.oracle.root(v[i], c.params);
    }
    return;
  }
  const PreparedField& f = c.prepared;
  const bool whole = v.size() >= kTensorRootsMin && v.size() <= kTensorRootsValues;
  uint64_t h = 0;
  if (whole) {
    TensorRootCache& cache = tensor_roots();
    h = tensor_hash(v);
    const auto it = cache.entries.find(h);
    if (it != cache.entries.end() && same_radicands(it->second, v, f.p, f.q)) {
      it->second.used = ++cache.clock;
      for (size_t i = 0; i < v.size(); ++i) v[i] = {it->second.roots[i].first, it->second.roots[i].second, true};
      return;
    }
  }
  std::vector<std::pair<uint64_t, uint64_t>> radicands;
  bool all_q = true;
  if (whole) {
    radicands.reserve(v.size());
    for (const FF& x : v) radicands.emplace_back(x.p, x.q), all_q = all_q && x.has_q;
  }
  std::vector<uint64_t> ps(v.size()), qs;
  for (size_t i = 0; i < v.size(); ++i) {
    ps[i] = v[i].p;
    if (v[i].has_q) qs.push_back(v[i].q);
  }
  pow_memo_all(ps.data(), ps.size(), (f.p + 1) / 4, f.bp, 2);
  pow_memo_all(qs.data(), qs.size(), (f.q + 1) / 4, f.bq, 3);
  size_t j = 0;
  for (size_t i = 0; i < v.size(); ++i) v[i] = {ps[i], v[i].has_q ? qs[j++] : 0, v[i].has_q};
  if (!whole || !all_q) return;
  TensorRootCache& cache = tensor_roots();
  if (cache.seen.size() >= (size_t{1} << 16)) cache.seen.clear();
  if (cache.seen.insert(h ^ f.p ^ (f.q << 1)).second) return;  // the first sight: noted only
  if (const auto it = cache.entries.find(h); it != cache.entries.end()) {  // a collision: replaced
    cache.values -= it->second.radicands.size();
    cache.entries.erase(it);
  }
  while (cache.values + v.size() > kTensorRootsValues) {  // the least recently used goes
    auto oldest = cache.entries.begin();
    for (auto e = cache.entries.begin(); e != cache.entries.end(); ++e)
      if (e->second.used < oldest->second.used) oldest = e;
    cache.values -= oldest->second.radicands.size();
    cache.entries.erase(oldest);
  }
  TensorRoots& e = cache.entries[h];
  e.p = f.p;
  e.q = f.q;
  e.radicands = std::move(radicands);
  e.roots.reserve(v.size());
  for (const FF& x : v) e.roots.emplace_back(x.p, x.q);
  e.used = ++cache.clock;
  cache.values += v.size();
}

FF Arith<FF>::silu(const FF& x) { return x / (from_rational(1, 1) + exp(zero() - x)); }
FF Arith<FF>::relu(const FF&) { return invalid("relu is not in the Lax fragment"); }
FF Arith<FF>::gelu(const FF&) { return invalid("gelu is not in the Lax fragment"); }

}  // namespace mugraph::verify
