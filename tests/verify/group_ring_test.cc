// The group-ring test (verifier.h: THE GROUP-RING TEST): its evaluation against the independent
// root-of-unity field evaluation (z -> w is a ring homomorphism Z_p[Z_q] -> Z_p when q | p - 1),
// VERIFIED attention with a bound that shared denominators keep finite, every wrong attention
// mutant rejected, and the corner cases the proof names.
#include <cmath>
#include <regex>

#include "test_util.h"
#include "verify/field_eval.h"
#include "verify/group_ring.h"
#include "verify/verifier.h"

namespace mugraph::verify {
namespace {

using mugraph::testing::example_path;
using mugraph::testing::parse_ok;
using mugraph::testing::read_file;

const char* kIn = "input Q : f32[2, 16, 8]\ninput K : f32[2, 8, 64]\ninput V : f32[2, 64, 8]\n";

// softmax(Q K / 4) V over 64 keys, without the max subtraction (the Lax form).
std::string attention() {
  return std::string(kIn) + R"(QK = matmul(Q, K)
S = scale(QK, factor=1/4)
E = exp(S)
D = sum(E, dim=2, group=64)
P = div(E, D)
O = matmul(P, V)
output O
)";
}

// The split-KV form of examples/gqa.split_kv.mu at small size; `scale`, `div` and the output
// map of kernel 2 are parameters for the mutants.
std::string split_kv(const std::string& scale = "s = scale(qk, factor=1/4)",
                     const std::string& div = "o = div(n, d)",
                     const std::string& omap = "omap={x:0, y:1}") {
  return std::string(kIn) + R"(NP, DP = graph_defined(Q, K, V, grid=[2, 4, 2], forloop=2) {
  q = input_iterator(Q, imap={x:0, z:1}, fmap=phi)
  k = input_iterator(K, imap={x:0, y:2}, fmap=2)
  v = input_iterator(V, imap={x:0, y:1}, fmap=1)
  qk = matmul(q, k)
  )" + scale + R"(
  e = exp(s)
  d = sum(e, dim=2, group=8)
  n = matmul(e, v)
  nacc = accumulator(n, fmap=phi)
  dacc = accumulator(d, fmap=phi)
  output_saver(nacc, omap={x:0, y:2, z:1})
  output_saver(dacc, omap={x:0, y:2, z:1})
}
O = graph_defined(NP, DP, grid=[2, 2, 1], forloop=4) {
  np = input_iterator(NP, imap={x:0, y:1}, fmap=2)
  dp = input_iterator(DP, imap={x:0, y:1}, fmap=2)
  n = accumulator(np, fmap=phi)
  d = accumulator(dp, fmap=phi)
  )" + div + R"(
  output_saver(o, )" + omap + R"()
}
output O
)";
}

// A GR value mapped through z -> w: N(w) / prod D_j(w) in Z_p.
uint64_t at_root(const GR& x, uint64_t w, const FieldParams& f) {
  if (x.exp_free()) return x.s.p;
  auto eval = [&](const Poly& poly) {
    uint64_t s = 0;
    for (const Term& t : poly) s = (s + mul_mod_exact(t.c, pow_mod(w, t.e, f.p), f.p)) % f.p;
    return s;
  };
  uint64_t v = eval(*x.num);
  if (x.den)
    for (const Factor& d : *x.den) v = mul_mod_exact(v, pow_mod(eval(*d.poly), f.p - 2, f.p), f.p);
  return v;
}

// A normalized polynomial (group_ring.h): exponents strictly increasing, coefficients in (0, p).
bool normalized(const Poly& x, const FieldParams& f) {
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i].c == 0 || x[i].c >= f.p || (i > 0 && x[i - 1].e >= x[i].e)) return false;
  return true;
}

// The group-ring evaluation, mapped onto the root-of-unity field, equals that field's own
// evaluation (a separate code path: w^x per exp, exact division), entry by entry.
void expect_maps_onto_field(const std::string& text, uint64_t seed) {
  const auto g = parse_ok(text);
  Rng rng(seed);
  const FieldParams f = random_field_params(rng);
  const uint64_t w = random_root_of_unity(f, rng);
  FieldContext ctx(f, w, SqrtMode::kFreshVariable, rng.next_u64());
  FieldScope scope(ctx);
  const uint64_t key = rng.next_u64();
  std::vector<Box> all;
  std::vector<std::optional<Box>> want;
  for (ir::TensorId id : g.outputs) {
    all.push_back(full_box(g.tensor(id).type.shape));
    want.push_back(all.back());
  }
  const auto field = eval_field(g, all, key, 1);
  const auto ring = eval_group_ring(g, want, key, 1);
  ASSERT_TRUE(ctx.invalid.empty()) << ctx.invalid;
  ASSERT_FALSE(ctx.zero_divisor);
  for (size_t o = 0; o < g.outputs.size(); ++o) {
    ASSERT_TRUE(ring[o].has_value());
    const auto& fv = field[o].data.data;
    const auto& rv = ring[o]->data.data;
    ASSERT_EQ(fv.size(), rv.size());
    int wrong = 0, unnormalized = 0;
    for (size_t i = 0; i < fv.size(); ++i) {
      wrong += at_root(rv[i], w, f) != fv[i].p;
      if (rv[i].exp_free()) continue;
      unnormalized += !normalized(*rv[i].num, f);
      if (rv[i].den)
        for (const Factor& d : *rv[i].den) unnormalized += !normalized(*d.poly, f);
    }
    EXPECT_EQ(wrong, 0) << "output " << o << " of\n" << text;
    EXPECT_EQ(unnormalized, 0) << "output " << o << " of\n" << text;
  }
}

TEST(GroupRing, EvaluationMapsOntoTheRootOfUnityField) {
  const std::string in = "input X : f32[4, 8]\ninput Y : f32[4, 8]\ninput W : f32[8, 8]\n";
  for (uint64_t seed : {1, 2, 3}) {
    expect_maps_onto_field(attention(), seed);
    expect_maps_onto_field(split_kv(), seed);
    // Each output entry sums 8 iterations of 8 exp terms, and the entries of one row repeat one
    // exponent sequence (the sum's sorting order is reused within a row, made afresh per row).
    expect_maps_onto_field(mugraph::testing::kSmallFlashAttention, seed);
    // silu (a two-term denominator per entry), products and sums of exps, division by an exp
    // monomial (inverted), sqrt as a fresh symbol, exp-free outputs.
    expect_maps_onto_field(in + "A = silu(X)\nB = matmul(A, W)\nC = mul(B, Y)\noutput C\n", seed);
    expect_maps_onto_field(in + "A = exp(X)\nB = exp(Y)\nC = mul(A, B)\nD = add(C, A)\n"
                                "E = div(D, B)\nF = sub(E, Y)\noutput F\n", seed);
    expect_maps_onto_field(in + "A = exp(X)\nS = sum(A, dim=1, group=8)\nR = div(Y, S)\n"
                                "T = div(R, S)\nU = add(R, T)\noutput U\n", seed);
    expect_maps_onto_field(in + "Q = mul(X, X)\nR = sqrt(Q)\nN = div(Y, R)\nE = exp(N)\n"
                                "M = matmul(E, W)\noutput M\noutput R\n", seed);
  }
}

TEST(GroupRing, AttentionIsVerifiedWithABoundThatSharedDenominatorsKeepFinite) {
  VerifyOptions o;
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {attention(), attention()},
      {attention(), split_kv()},
      {mugraph::testing::kSmallAttention, mugraph::testing::kSmallFlashAttention}};
  for (const auto& [ref, cand] : pairs) {
    const Verdict v = check(parse_ok(ref), parse_ok(cand), o);
    EXPECT_EQ(v.kind, VerdictKind::kVerified) << v.summary << "\n" << v.bound.note;
    EXPECT_LE(v.delta_achieved, o.delta);
    EXPECT_NE(v.bound.note.find("group ring"), std::string::npos) << v.bound.note;
    // N and D each hold 64 exp terms: the difference N1 D2 - N2 D1 has at most 2 64^2 terms.
    // Without shared denominators (D^64 per entry) the count would be astronomically larger.
    EXPECT_EQ(v.bound.k, 2.0 * 64 * 64);
    EXPECT_EQ(v.bound.d, 2);  // exponent differences of q . k: degree 2
  }
}

TEST(GroupRing, WrongAttentionMutantsAreRejected) {
  const auto ref = parse_ok(attention());
  const std::vector<std::string> mutants = {
      split_kv("s = scale(qk, factor=-1/4)"),                   // exp sign
      split_kv("s = scale(qk, factor=1/1)"),                    // missing scale
      split_kv("s = scale(qk, factor=1/4)", "o = div(d, n)"),   // swapped operands
      split_kv("s = scale(qk, factor=1/4)", "o = div(n, d)", "omap={x:1, y:0}"),  // permuted blocks
  };
  for (const std::string& m : mutants) {
    const Verdict v = check(ref, parse_ok(m), VerifyOptions{});
    EXPECT_EQ(v.kind, VerdictKind::kNotEquivalent) << v.summary << "\n" << m;
    EXPECT_NE(v.summary.find("group-ring"), std::string::npos) << v.summary;
  }
}

TEST(GroupRing, VanishingDenominatorIsAFailedTestNotARedraw) {
  const std::string in = "input X : f32[4, 8]\n";
  const auto g = parse_ok(in + "A = exp(X)\nZ = sub(A, A)\nO = div(X, Z)\noutput O\n");
  const Verdict v = check(g, g, VerifyOptions{});
  EXPECT_EQ(v.kind, VerdictKind::kInconclusive) << v.summary;
  EXPECT_NE(v.summary.find("never redrawn"), std::string::npos) << v.summary;
  EXPECT_EQ(v.redraws, 0);
}

TEST(GroupRing, RandomPrimesSeeAScaleThatFixedPrimesWouldMiss) {
  // x 2^61 = x modulo the Mersenne prime 2^61 - 1: a fixed exponent prime there fails every test.
  const std::string in = "input X : f32[4, 8]\n";
  const auto a = parse_ok(in + "S = scale(X, factor=2305843009213693952/1)\nE = exp(S)\noutput E\n");
  const auto b = parse_ok(in + "S = scale(X, factor=2/1)\nE = exp(S)\nT = mul(E, E)\noutput T\n");
  const Verdict v = check(a, b, VerifyOptions{});
  EXPECT_EQ(v.kind, VerdictKind::kNotEquivalent) << v.summary;
}

TEST(GroupRing, SqrtIdentityIsUnprovedNeverNotEquivalent) {
  const std::string in = "input X : f32[4, 8]\ninput Y : f32[4, 8]\n";
  const auto a = parse_ok(in + "Q = mul(X, X)\nT = scale(Q, factor=25/1)\nR = sqrt(T)\nE = exp(Y)\n"
                               "O = mul(R, E)\noutput O\n");
  const auto b = parse_ok(in + "Q = mul(X, X)\nR = sqrt(Q)\nF = scale(R, factor=5/1)\nE = exp(Y)\n"
                               "O = mul(F, E)\noutput O\n");
  const Verdict v = check(a, b, VerifyOptions{});
  EXPECT_EQ(v.kind, VerdictKind::kUnproved) << v.summary;
  const Verdict same = check(a, a, VerifyOptions{});
  EXPECT_EQ(same.kind, VerdictKind::kVerified) << same.summary;
}

// Review finding: a bound that overflows (degree 2^1030) for one entry must not be forgotten
// when a later entry's bound is finite: either order of the entries gives no bound.
TEST(GroupRing, AnEntryWithoutABoundIsNeverMaskedByLaterEntries) {
  std::string chain = "input X : f32[1, 1]\ninput W : f32[1, 1]\nA0 = scale(X, factor=3/1)\n";
  for (int i = 1; i <= 1030; ++i)
    chain += "A" + std::to_string(i) + " = square(A" + std::to_string(i - 1) + ")\n";
  chain += "B = add(A1030, A1030)\nE = exp(W)\n";
  for (const char* y : {"Y = concat(B, E, dim=1)\n", "Y = concat(E, B, dim=1)\n"}) {
    const auto g = parse_ok(chain + y + "output Y\n");
    const Verdict v = check(g, g, VerifyOptions{});
    EXPECT_NE(v.kind, VerdictKind::kVerified) << y << v.summary;
  }
}

}  // namespace
}  // namespace mugraph::verify
