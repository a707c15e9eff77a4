// The finite field Z_p x Z_q: the constants' preconditions, Table 3's operations on scalars, and
// one-test equivalence checks of real uGraphs through the shared interpreter.
#include <set>
#include <thread>
#include <vector>

#include "test_util.h"
#include "verify/eval_op.h"
#include "verify/field_test.h"
#include "verify/group_ring.h"

namespace mugraph::verify {
namespace {

using mugraph::testing::example_path;
using mugraph::testing::parse_ok;
using mugraph::testing::read_file;

TEST(FiniteField, DefaultPrimesSatisfyEveryPrecondition) {
  const FieldParams f;
  EXPECT_TRUE(check_field_params(f).ok()) << check_field_params(f).message();
  EXPECT_TRUE(is_prime_u64(kDefaultP));
  EXPECT_TRUE(is_prime_u64(kDefaultQ));
  EXPECT_EQ((kDefaultP - 1) % kDefaultQ, 0u);
  EXPECT_EQ(kDefaultP, 2147483626ULL * kDefaultQ + 1);
  EXPECT_LT(kDefaultP, uint64_t{1} << 62);
  Rng rng(5);
  for (int i = 0; i < 20; ++i) {
    const uint64_t w = random_root_of_unity(f, rng);
    EXPECT_NE(w, 1u);                        // order > 1 ...
    EXPECT_EQ(pow_mod(w, f.q, f.p), 1u);     // ... and divides q, a prime: exactly q
  }
}

// Moduli of every width Barrett::mul treats apart: at most 32 bits (the product in 64 bits),
// 62 bits (constant shifts) and the others (2^32 + 15: 33 bits, 2^41 + 21: 42).
TEST(FiniteField, FastMulModMatchesTheExactOne) {
  Rng rng(3);
  for (uint64_t m : {kDefaultP, kDefaultQ, uint64_t{167}, uint64_t{3}, (uint64_t{1} << 62) - 57,
                     (uint64_t{1} << 61) + 1, (uint64_t{1} << 32) - 5, (uint64_t{1} << 30) + 3,
                     (uint64_t{1} << 32) + 15, (uint64_t{1} << 41) + 21}) {
    const uint64_t edge[] = {0, 1, m - 1, m - 2, m / 2, m / 2 + 1};
    for (uint64_t a : edge)
      for (uint64_t b : edge) EXPECT_EQ(Barrett(m).mul(a, b), mul_mod_exact(a, b, m)) << m;
    for (int i = 0; i < 100000; ++i) {
      const uint64_t a = rng.below(m), b = rng.below(m);
      ASSERT_EQ(Barrett(m).mul(a, b), mul_mod_exact(a, b, m)) << a << " * " << b << " mod " << m;
    }
  }
}

// kRandomQPrimes, the count a large-coefficient bound divides by (verify/lax.h), is the number of
// primes = 3 (mod 4) in [2^30, 2^31): recounted by a sieve over those residues alone (2^28
// numbers, in segments), and random_field_params draws q among exactly those numbers.
TEST(FiniteField, RandomQIsDrawnAmongThisManyPrimes) {
  constexpr uint64_t lo = uint64_t{1} << 30, count = uint64_t{1} << 28;  // n = lo + 3 + 4 i
  std::vector<uint32_t> primes;  // odd primes up to sqrt(2^31)
  {
    std::vector<bool> comp(46341, false);
    for (uint32_t i = 3; i < comp.size(); i += 2) {
      if (comp[i]) continue;
      primes.push_back(i);
      for (uint64_t j = uint64_t{i} * i; j < comp.size(); j += 2 * i) comp[j] = true;
    }
  }
  constexpr uint64_t seg = uint64_t{1} << 22;
  std::vector<uint8_t> prime(seg);
  uint64_t found = 0;
  for (uint64_t i0 = 0; i0 < count; i0 += seg) {
    std::fill(prime.begin(), prime.end(), 1);
    const uint64_t n0 = lo + 3 + 4 * i0;
    for (uint32_t p : primes) {
      uint64_t n = (n0 + p - 1) / p * p;  // the first multiple of p that is = 3 (mod 4)
      while (n % 4 != 3) n += p;
      for (uint64_t k = (n - n0) / 4; k < seg; k += p) prime[k] = 0;  // next: n + 4 p
    }
    for (uint8_t b : prime) found += b;
  }
  EXPECT_EQ(static_cast<double>(found), kRandomQPrimes);
  Rng rng(11);
  for (int k = 0; k < 200; ++k) {
    const FieldParams f = random_field_params(rng);
    EXPECT_TRUE(f.q >= lo && f.q < 2 * lo && f.q % 4 == 3 && is_prime_u64(f.q)) << f.q;
  }
}

// Montgomery form (the batched powers): to, mul and from against 128-bit '%' for the same odd
// moduli, edges included, and a power through it against pow_mod.
TEST(FiniteField, MontgomeryMulMatchesTheExactOne) {
  Rng rng(5);
  for (uint64_t m : {kDefaultP, kDefaultQ, uint64_t{167}, uint64_t{3}, (uint64_t{1} << 62) - 57, (uint64_t{1} << 61) + 1}) {
    const Montgomery mg(m);
    const uint64_t edge[] = {0, 1, m - 1, m - 2, m / 2, m / 2 + 1};
    for (uint64_t a : edge)
      for (uint64_t b : edge) EXPECT_EQ(mg.from(mg.mul(mg.to(a), mg.to(b))), mul_mod_exact(a, b, m)) << m;
    for (int i = 0; i < 100000; ++i) {
      const uint64_t a = rng.below(m), b = rng.below(m);
      ASSERT_EQ(mg.from(mg.mul(mg.to(a), mg.to(b))), mul_mod_exact(a, b, m)) << a << " * " << b << " mod " << m;
      ASSERT_EQ(mg.from(mg.to(a)), a) << a << " mod " << m;
    }
    std::vector<uint64_t> xs;
    for (int i = 0; i < 21; ++i) xs.push_back(rng.below(m));
    std::vector<uint64_t> ys = xs;
    const uint64_t e = m > 3 ? m - 2 : 5;
    pow_memo_all(ys.data(), ys.size(), e, Barrett(m), 1);
    for (size_t i = 0; i < xs.size(); ++i) EXPECT_EQ(ys[i], pow_mod(xs[i], e, m)) << xs[i] << " mod " << m;
  }
}

// The roots' memo grows (2^16 -> 2^19 slots) on a thread that misses often, keeping what it held:
// powers are right before, across and after the growth, and after a change of modulus. Run
// on a thread of its own so that the memo starts empty.
TEST(FiniteField, RootMemoGrowsAndKeepsItsPowersRight) {
  std::thread([] {
    Rng rng(11);
    for (uint64_t m : {kDefaultP, kDefaultQ}) {
      const Barrett b(m);
      const uint64_t e = (m + 1) / 4;
      std::vector<uint64_t> xs(300000);  // > 4 x 2^16 misses: the next call grows the table
      for (uint64_t& x : xs) x = rng.below(m);
      for (int round = 0; round < 3; ++round) {
        std::vector<uint64_t> ys = xs;
        pow_memo_all(ys.data(), ys.size(), e, b, 2);
        for (size_t i = 0; i < xs.size(); i += 97)
          ASSERT_EQ(ys[i], pow_mod(xs[i], e, m)) << "round " << round << ", " << xs[i] << " mod " << m;
        for (size_t i = 0; i < 50; ++i)
          ASSERT_EQ(pow_memo(xs[i], e, b, 2), pow_mod(xs[i], e, m)) << xs[i] << " mod " << m;
      }
    }
  }).join();
}

// The lazy accumulators' reduction (matmul, sums) against 128-bit '%': any 64-bit value
// through Barrett::reduce, any 128-bit value through reduce_u128, for moduli below 2^62.
TEST(FiniteField, FastReductionsMatchTheExactOnes) {
  Rng rng(4);
  for (uint64_t m : {kDefaultP, kDefaultQ, uint64_t{167}, uint64_t{3}, (uint64_t{1} << 62) - 57,
                     (uint64_t{1} << 61) + 1, (uint64_t{1} << 30) + 3}) {
    const Barrett b(m);
    const uint64_t r64 = static_cast<uint64_t>((static_cast<unsigned __int128>(1) << 64) % m);
    const uint64_t edge[] = {0, 1, m - 1, m, m + 1, 2 * m, 3 * m - 1, ~uint64_t{0}, ~uint64_t{0} - m};
    std::vector<unsigned __int128> xs;
    for (uint64_t v : edge) {
      EXPECT_EQ(b.reduce(v), v % m) << v << " mod " << m;
      for (uint64_t w : edge) xs.push_back((static_cast<unsigned __int128>(v) << 64) | w);
    }
    for (int i = 0; i < 100000; ++i) {
      const uint64_t v = rng.next_u64();
      ASSERT_EQ(b.reduce(v), v % m) << v << " mod " << m;
      xs.push_back((static_cast<unsigned __int128>(rng.next_u64()) << 64) | rng.next_u64());
    }
    for (const unsigned __int128 x : xs)
      ASSERT_EQ(reduce_u128(x, b, r64), static_cast<uint64_t>(x % m)) << " mod " << m;
  }
}

TEST(FiniteField, PrimalityAndParamChecks) {
  EXPECT_FALSE(is_prime_u64(1));
  EXPECT_TRUE(is_prime_u64(2));
  EXPECT_FALSE(is_prime_u64(3215031751ULL));  // strong pseudoprime to bases 2, 3, 5, 7
  EXPECT_TRUE(is_prime_u64(18446744073709551557ULL));  // largest 64-bit prime
  EXPECT_TRUE(check_field_params({167, 83}).ok());  // Mirage's pair: valid, only tiny
  EXPECT_EQ(check_field_params({11, 5}).message(), "p and q must be 3 mod 4 (sqrt as the power map x^((m+1)/4))");
  EXPECT_EQ(check_field_params({kDefaultP, 83}).message(), "q = 83 does not divide p - 1 = 4611685969035264022");
  EXPECT_EQ(check_field_params({kDefaultP + 2, kDefaultQ}).message(), "p = 4611685969035264025 is not prime");
}

class FieldOps : public ::testing::Test {
 protected:
  Rng rng{9};
  FieldContext ctx{FieldParams{}, random_root_of_unity(FieldParams{}, rng)};
  FF r() { return random_ff(ctx.params, rng); }
};

TEST_F(FieldOps, Table3ComponentwiseArithmetic) {
  FieldScope scope(ctx);
  const uint64_t p = ctx.params.p, q = ctx.params.q;
  const FF a = r(), b = r();
  const FF s = a + b, d = a - b, m = a * b, v = a / b;
  EXPECT_EQ(s.p, static_cast<uint64_t>((static_cast<unsigned __int128>(a.p) + b.p) % p));
  EXPECT_EQ(s.q, (a.q + b.q) % q);
  EXPECT_EQ(d.q, (a.q + q - b.q) % q);
  EXPECT_EQ(m.p, mul_mod_exact(a.p, b.p, p));
  EXPECT_EQ(m.q, mul_mod_exact(a.q, b.q, q));
  EXPECT_EQ((v * b).p, a.p);
  EXPECT_EQ((v * b).q, a.q);
  EXPECT_EQ(((a - b) + b), a);
  EXPECT_FALSE(ctx.zero_divisor);
  const FF third = Arith<FF>::from_rational(-1, 3);
  EXPECT_EQ((third * Arith<FF>::from_rational(3, 1)).p, p - 1);
}

TEST_F(FieldOps, ExpMapsZqIntoZpAndDropsTheZqPart) {
  FieldScope scope(ctx);
  const FF a = r(), b = r();
  const FF ea = Arith<FF>::exp(a);
  EXPECT_EQ(ea.p, pow_mod(ctx.omega, a.q, ctx.params.p));
  EXPECT_FALSE(ea.has_q);
  EXPECT_EQ((Arith<FF>::exp(a) * Arith<FF>::exp(b)).p, Arith<FF>::exp(a + b).p);  // e^a e^b = e^(a+b)
  EXPECT_TRUE(ctx.invalid.empty());
  (void)Arith<FF>::exp(ea);  // a second exp on one path
  EXPECT_NE(ctx.invalid.find("two exps on one path"), std::string::npos);
}

// The w^x tables are built once per (p, q, w) on a thread and shared by its contexts: w^x is
// right for each of several fields and roots of unity, built in any order and met again.
TEST(FieldContext, SharedOmegaTablesGiveEachContextItsOwnPowers) {
  Rng draw(9);
  std::vector<FieldParams> fields{FieldParams{}, random_field_params(draw), random_field_params(draw)};
  std::vector<std::pair<FieldParams, uint64_t>> draws;
  for (const FieldParams& f : fields)
    for (int k = 0; k < 2; ++k) draws.emplace_back(f, random_root_of_unity(f, draw));
  std::vector<std::shared_ptr<const FieldContext::OmegaTables>> first;
  for (int round = 0; round < 3; ++round)  // 6 draws > the 4 a thread keeps: some built again
    for (size_t d = 0; d < draws.size(); ++d) {
      const auto& [f, w] = draws[d];
      FieldContext c(f, w);
      if (round == 0) first.push_back(c.omega_tables);
      if (round == 0 && d > 0) {
        EXPECT_NE(c.omega_tables, first[d - 1]);
      }
      for (uint64_t x : {uint64_t{0}, uint64_t{1}, uint64_t{65535}, uint64_t{65536}, f.q - 1,
                         draw.below(f.q), draw.below(f.q)})
        ASSERT_EQ(c.omega_pow(x), pow_mod(w, x, f.p)) << "draw " << d << ", round " << round << ", x " << x;
    }
  FieldContext a(fields[1], draws[2].second), b(fields[1], draws[2].second);
  EXPECT_EQ(a.omega_tables, b.omega_tables) << "one draw's tables shared";
  EXPECT_FALSE(FieldContext(fields[1], 0).omega_tables) << "no w: no tables";
}

TEST_F(FieldOps, SqrtIsMultiplicativeAndARootOfResidues) {
  FieldScope scope(ctx);
  for (int i = 0; i < 50; ++i) {
    const FF a = r(), b = r();
    const FF lhs = Arith<FF>::sqrt(a) * Arith<FF>::sqrt(b), rhs = Arith<FF>::sqrt(a * b);
    EXPECT_EQ(lhs, rhs);
    const FF sq = a * a;  // a residue: sqrt(sq)^2 == sq
    EXPECT_EQ(Arith<FF>::sqrt(sq) * Arith<FF>::sqrt(sq), sq);
  }
}

TEST_F(FieldOps, SiluIsExactAndNonLaxOpsAreInvalid) {
  FieldScope scope(ctx);
  const FF a = r();
  const FF one = Arith<FF>::from_rational(1, 1);
  EXPECT_EQ(Arith<FF>::silu(a).p, (a / (one + Arith<FF>::exp(Arith<FF>::zero() - a))).p);
  EXPECT_TRUE(ctx.invalid.empty());
  (void)Arith<FF>::relu(a);
  EXPECT_EQ(ctx.invalid, "relu is not in the Lax fragment");
}

TEST_F(FieldOps, ZeroDivisorsAreFlagged) {
  FieldScope scope(ctx);
  (void)(r() / Arith<FF>::zero());
  EXPECT_TRUE(ctx.zero_divisor);
}

// A tensor's square roots are raised 8 at a time through the memo (eval_op). Against the exact
// power map (pow_mod): zeros, values repeated within one batch of 8 and across batches, values
// with no Z_q part, a count that is not a multiple of 8, two fields, a second pass that reads
// the memo the first one filled, a third on the roots; fresh-variable roots stay the oracle's.
TEST_F(FieldOps, BatchRootsEqualThePowerMap) {
  Rng draw(3);
  const FieldParams other = random_field_params(draw);
  FieldContext second(other, random_root_of_unity(other, draw));
  for (FieldContext* c : {&ctx, &second, &ctx}) {
    FieldScope scope(*c);
    std::vector<FF> v;
    for (int i = 0; i < 203; ++i) {
      FF x = random_ff(c->params, rng);
      if (i % 9 == 4) x.p = 0;
      if (i % 11 == 5) x.q = 0;
      if (i % 6 == 2) x.has_q = false, x.q = 0;
      if (i % 13 == 7) x = v[static_cast<size_t>(i - 2)];  // again, in the same batch
      if (i % 50 == 49) x = v[3];                           // again, batches later
      v.push_back(x);
    }
    // Passes: v, v again (from the memo), then v's roots (whose own roots the memo must not
    // confuse with what it kept for v).
    std::vector<FF> in = v;
    for (int pass = 0; pass < 3; ++pass) {
      std::vector<FF> roots = in;
      Arith<FF>::sqrt_all(roots);
      const uint64_t p = c->params.p, q = c->params.q;
      for (size_t i = 0; i < in.size(); ++i) {
        const FF want{pow_mod(in[i].p, (p + 1) / 4, p), in[i].has_q ? pow_mod(in[i].q, (q + 1) / 4, q) : 0,
                      in[i].has_q};
        EXPECT_EQ(roots[i], want) << "p " << p << ", pass " << pass << ", entry " << i;
      }
      if (pass == 1) in = roots;
    }
  }
  FieldContext fresh(FieldParams{}, 0, SqrtMode::kFreshVariable, 77);
  FieldScope scope(fresh);
  std::vector<FF> v;
  for (int i = 0; i < 20; ++i) v.push_back(random_ff(fresh.params, rng));
  std::vector<FF> roots = v;
  Arith<FF>::sqrt_all(roots);
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(roots[i], Arith<FF>::sqrt(v[i])) << i;
}

// Large tensors of radicands take their roots whole from a per-thread cache: served only for
// the same radicands in the same order under the same moduli (one value changed where the
// look-up's hash does not look, a value without its Z_q part, other moduli: computed again),
// always the power map's values, and never more than 2^20 radicands kept.
TEST_F(FieldOps, WholeTensorRootsServeOnlyTheSameRadicands) {
  std::thread([&] {
    Rng draw(5);
    const FieldParams other = random_field_params(draw);
    FieldContext second(other, random_root_of_unity(other, draw));
    auto expect_power_map = [](const std::vector<FF>& in, const FieldContext& c, const char* what) {
      std::vector<FF> roots = in;
      Arith<FF>::sqrt_all(roots);
      const uint64_t p = c.params.p, q = c.params.q;
      for (size_t i = 0; i < in.size(); ++i) {
        const FF want{pow_mod(in[i].p, (p + 1) / 4, p),
                      in[i].has_q ? pow_mod(in[i].q, (q + 1) / 4, q) : 0, in[i].has_q};
        ASSERT_EQ(roots[i], want) << what << ", p " << p << ", entry " << i;
      }
    };
    for (FieldContext* c : {&ctx, &second}) {
      FieldScope scope(*c);
      std::vector<FF> v(5000);
      for (FF& x : v) x = random_ff(c->params, rng);
      const size_t before = tensor_roots_kept();
      expect_power_map(v, *c, "first");
      EXPECT_EQ(tensor_roots_kept(), before) << "first sight: only noted";
      expect_power_map(v, *c, "second");
      EXPECT_EQ(tensor_roots_kept(), before + v.size()) << "kept";
      expect_power_map(v, *c, "again");
      EXPECT_EQ(tensor_roots_kept(), before + v.size()) << "served, not kept twice";
      std::vector<FF> w = v;
      w[1234].p = (w[1234].p + 1) % c->params.p;  // not one of the 16 the hash reads
      expect_power_map(w, *c, "one value changed");
      w[77].has_q = false, w[77].q = 0;
      expect_power_map(w, *c, "a value without its Z_q part");
      expect_power_map(v, *c, "the first again");
    }
    {
      FieldScope scope(second);
      std::vector<FF> v(5000);
      for (FF& x : v) x = random_ff(ctx.params, rng);  // values below both moduli
      for (FF& x : v) x.p %= second.params.p, x.q %= second.params.q;
      expect_power_map(v, second, "noted under the second field");
      expect_power_map(v, second, "kept under the second field");
      FieldScope inner(ctx);
      expect_power_map(v, ctx, "the same radicands under the first field");
      expect_power_map(v, ctx, "and again");
    }
    FieldScope scope(ctx);
    for (int k = 0; k < 300; ++k) {  // 300 x 5000 radicands > 2^20, each seen twice
      std::vector<FF> v(5000);
      for (FF& x : v) x = random_ff(ctx.params, rng);
      std::vector<FF> w = v;
      Arith<FF>::sqrt_all(v);
      Arith<FF>::sqrt_all(w);
      ASSERT_LE(tensor_roots_kept(), size_t{1} << 20);
    }
    EXPECT_GT(tensor_roots_kept(), (size_t{1} << 20) - 5000);
  }).join();
}

// eval_op takes a whole tensor's roots through sqrt_all: the same values as one root at a time.
TEST_F(FieldOps, TensorSqrtEqualsElementwise) {
  FieldScope scope(ctx);
  HostTensor<FF> t(ir::Shape{3, 7}, FF{});
  for (FF& x : t.data) x = r();
  t.data[4].has_q = false, t.data[4].q = 0;
  t.data[9] = FF{};
  const HostTensor<FF> out = eval_op<FF>(ir::OpKind::kSqrt, ir::OpAttrs{}, {&t}, t.shape);
  ASSERT_EQ(out.data.size(), t.data.size());
  for (size_t i = 0; i < t.data.size(); ++i) EXPECT_EQ(out.data[i], Arith<FF>::sqrt(t.data[i])) << i;
}

// eval_op's division runs along the last dimension (times_inverse_run) and its scale takes the
// factor once: the same values as one entry at a time, under every broadcast of the divisor
// (a row's scalar, a column, a whole tensor, a rank-0 one), the zero-divisor flag included.
TEST_F(FieldOps, TensorDivisionAndScaleEqualElementwiseUnderBroadcast) {
  FieldScope scope(ctx);
  const ir::Shape out{3, 4, 5};
  HostTensor<FF> a(out, FF{});
  for (FF& x : a.data) x = r();
  a.data[7].has_q = false, a.data[7].q = 0;
  for (const ir::Shape& bs : {ir::Shape{3, 4, 5}, ir::Shape{3, 4, 1}, ir::Shape{1, 1, 5},
                              ir::Shape{4, 1}, ir::Shape{1}, ir::Shape{}}) {
    for (bool with_zero : {false, true}) {
      HostTensor<FF> b(bs, FF{});
      for (FF& x : b.data) x = r();
      if (bs.numel() > 1) b.data[1].has_q = false, b.data[1].q = 0;
      if (with_zero) b.data[0].p = 0;
      ctx.zero_divisor = false;
      const HostTensor<FF> got = eval_op<FF>(ir::OpKind::kDiv, ir::OpAttrs{}, {&a, &b}, out);
      EXPECT_EQ(ctx.zero_divisor, with_zero) << bs.to_string();
      ctx.zero_divisor = false;
      const auto st = detail::broadcast_strides(bs, out);
      detail::for_each_broadcast<1>(out, std::array<std::array<int64_t, 4>, 1>{st},
                                    [&](int64_t i, const std::array<int64_t, 1>& o) {
        const FF want = a.data[static_cast<size_t>(i)] / b.data[static_cast<size_t>(o[0])];
        EXPECT_EQ(got.data[static_cast<size_t>(i)], want) << bs.to_string() << ", entry " << i;
      });
      EXPECT_EQ(ctx.zero_divisor, with_zero) << bs.to_string() << ", one at a time";
    }
  }
  ir::OpAttrs scale;
  scale.factor = {3, 7};
  const HostTensor<FF> got = eval_op<FF>(ir::OpKind::kScale, scale, {&a}, out);
  for (size_t i = 0; i < a.data.size(); ++i)
    EXPECT_EQ(got.data[i], detail::unary(ir::OpKind::kScale, scale, a.data[i])) << i;
}

// Tensor division inverts all divisors at once (eval_op); it must equal element-wise division,
// zero parts, missing Z_q parts and the zero-divisor flag included.
// Sizes around the batch inversion's lanes (four interleaved chains and a rest); the default
// field, the search's random fields (q < 2^31) and the group ring's (p, q >= 2^61): the
// inverses are kept in each modulus' Montgomery form.
TEST_F(FieldOps, BatchInversionEqualsDivision) {
  std::vector<FieldParams> fields{FieldParams{}};
  for (int k = 0; k < 3; ++k) fields.push_back(random_field_params(rng));
  for (int k = 0; k < 2; ++k) fields.push_back(random_group_ring_params(rng));
  for (const FieldParams& fp : fields)
  for (const int n : {0, 1, 3, 4, 5, 9, 63, 64, 67}) {
    FieldContext field(fp, 0);
    FieldScope scope(field);
    auto draw = [&] { return random_ff(fp, rng); };
    std::vector<FF> num, den;
    for (int i = 0; i < n; ++i) {
      FF a = draw(), b = draw();
      if (i % 7 == 3) b.p = 0;
      if (i % 5 == 1) b.q = 0;
      if (i % 6 == 2) b.has_q = false, b.q = 12345;  // a value past an exp (its q part is ignored)
      if (i % 4 == 0) a.has_q = false;
      num.push_back(a);
      den.push_back(b);
    }
    std::vector<FF> inv = den;
    Arith<FF>::invert_all(inv);
    for (size_t i = 0; i < num.size(); ++i) {
      field.zero_divisor = false;
      const FF want = num[i] / den[i];
      const bool want_flag = field.zero_divisor;
      field.zero_divisor = false;
      EXPECT_EQ(Arith<FF>::times_inverse(num[i], inv[i]), want) << n << " values, " << i << ", p " << fp.p;
      EXPECT_EQ(field.zero_divisor, want_flag) << n << " values, " << i;
    }
  }
}

TEST(FieldTest, NonLaxAndMismatchedGraphsAreInvalid) {
  Rng rng(1);
  ir::KernelGraph relu = parse_ok("input X : f32[4]\nY = relu(X)\noutput Y\n");
  ir::KernelGraph twoexp = parse_ok("input X : f32[4]\nE = exp(X)\nY = exp(E)\noutput Y\n");
  ir::KernelGraph other = parse_ok("input X : f32[5]\nY = neg(X)\noutput Y\n");
  EXPECT_EQ(field_test(relu, relu, {}, rng).outcome, FieldOutcome::kInvalid);
  FieldTestResult r = field_test(twoexp, twoexp, {}, rng);
  EXPECT_EQ(r.outcome, FieldOutcome::kInvalid);
  EXPECT_NE(r.detail.find("two exps"), std::string::npos);
  EXPECT_EQ(field_test(relu, other, {}, rng).detail, "input 0 differs: 'X' f32[4] vs 'X' f32[5]");
}

TEST(FieldTest, DivisionByAnInputZeroIsInconclusiveNotEqual) {
  // 0 is drawn with probability 1/p per entry; force it with a difference of equal inputs.
  Rng rng(1);
  ir::KernelGraph g = parse_ok("input X : f32[4]\nZ = sub(X, X)\nY = div(X, Z)\noutput Y\n");
  EXPECT_EQ(field_test(g, g, {}, rng).outcome, FieldOutcome::kInconclusive);
}

// One field test of a hand-optimized example against its program, and of a mutant.
FieldOutcome test_pair(const std::string& ref_text, const std::string& cand_text, uint64_t seed) {
  Rng rng(seed);
  return field_test(parse_ok(ref_text), parse_ok(cand_text), {}, rng).outcome;
}

TEST(FieldTest, IdentitiesHoldExactly) {
  const std::string in = "input A : f32[3, 4]\ninput B : f32[3, 4]\ninput C : f32[4, 2]\n";
  // exp(a) exp(b) = exp(a + b)
  EXPECT_EQ(test_pair(in + "x = exp(A)\ny = exp(B)\nO = mul(x, y)\noutput O\n",
                      in + "s = add(A, B)\nO = exp(s)\noutput O\n", 1),
            FieldOutcome::kEqual);
  // (A + B) C = A C + B C
  EXPECT_EQ(test_pair(in + "s = add(A, B)\nO = matmul(s, C)\noutput O\n",
                      in + "x = matmul(A, C)\ny = matmul(B, C)\nO = add(x, y)\noutput O\n", 2),
            FieldOutcome::kEqual);
  // A / B is not B / A
  EXPECT_EQ(test_pair(in + "O = div(A, B)\noutput O\n", in + "O = div(B, A)\noutput O\n", 3),
            FieldOutcome::kDifferent);
}

TEST(FieldTest, HandOptimizedExamplesPassAndMutantsFail) {
  const std::string lora = read_file(example_path("lora"));
  const std::string lora_cm = read_file(example_path("lora.concat_matmul"));
  EXPECT_EQ(test_pair(lora, lora_cm, 1), FieldOutcome::kEqual);
  std::string doubled = lora_cm;  // X W + 2 (X A) B
  doubled.replace(doubled.find("T = matmul(X, A)"), 16, "T0 = matmul(X, A)\nT = scale(T0, factor=2)");
  EXPECT_EQ(test_pair(lora, doubled, 2), FieldOutcome::kDifferent);
  const std::string gqa = read_file(example_path("gqa"));
  EXPECT_EQ(test_pair(gqa, read_file(example_path("gqa.flash_decoding")), 4), FieldOutcome::kEqual);
  EXPECT_EQ(test_pair(read_file(example_path("rms_norm_matmul")),
                      read_file(example_path("rms_norm_matmul.fused")), 5),
            FieldOutcome::kEqual);
}

TEST(FieldTest, TinyConstantChangesAreCaught) {
  // An RMS over 4095 instead of 4096 elements changes the result by 1.2e-4 relative, below a
  // typical float tolerance; over the field it is simply different.
  const std::string in = "input X : f32[2, 4096]\n";
  const std::string tail = "r = sqrt(m)\nY = div(X, r)\noutput Y\n";
  const std::string sums = "q = square(X)\ns = sum(q, dim=1, group=4096)\n";
  EXPECT_EQ(test_pair(in + sums + "m = scale(s, factor=1/4096)\n" + tail,
                      in + sums + "m = scale(s, factor=1/4096)\n" + tail, 6),
            FieldOutcome::kEqual);
  EXPECT_EQ(test_pair(in + sums + "m = scale(s, factor=1/4096)\n" + tail,
                      in + sums + "m = scale(s, factor=1/4095)\n" + tail, 6),
            FieldOutcome::kDifferent);
}

}  // namespace
}  // namespace mugraph::verify

namespace mugraph::verify {
namespace {

// Random primes (issue 19's fuzz found 2^33 = 4 mod 2^31 - 1 accepted by every fixed-q test):
// every drawn pair satisfies the field's preconditions and lies in the documented ranges, and
// the draws differ.
TEST(FieldParamsDraw, RandomPairsAreValidAndInRange) {
  Rng rng(7);
  std::set<uint64_t> qs;
  for (int i = 0; i < 50; ++i) {
    const FieldParams f = random_field_params(rng);
    EXPECT_TRUE(check_field_params(f).ok()) << check_field_params(f).message();
    EXPECT_GE(f.q, kLeastRandomField.q);
    EXPECT_LT(f.q, uint64_t{1} << 31);
    EXPECT_GE(f.p, kLeastRandomField.p);
    EXPECT_LT(f.p, uint64_t{1} << 62);
    qs.insert(f.q);
  }
  EXPECT_GE(qs.size(), 45u);
}

}  // namespace
}  // namespace mugraph::verify
