// The verifier's parts: Lax classification and its reasons, the bound, the float check, output
// matching, and demand-driven evaluation against the plain interpreter.
#include <algorithm>

#include "test_util.h"
#include "verify/field_eval.h"
#include "verify/interpret.h"
#include "verify/small_programs.h"
#include "verify/verifier.h"

namespace mugraph::verify {
namespace {

using mugraph::testing::example_path;
using mugraph::testing::parse_ok;
using mugraph::testing::read_file;

const std::string kIn = "input X : f32[4, 8]\ninput Y : f32[4, 8]\n";

TEST(Lax, ClassifiesAndNamesTheOffendingOpAndPath) {
  EXPECT_TRUE(classify_lax(parse_ok(read_file(example_path("gqa")))).lax);
  EXPECT_TRUE(classify_lax(parse_ok(read_file(example_path("gated_mlp.fused")))).lax);
  const LaxInfo relu = classify_lax(parse_ok(kIn + "R = relu(X)\nO = add(R, Y)\noutput O\n"));
  EXPECT_FALSE(relu.lax);
  EXPECT_EQ(relu.reason, "relu at kernel op 'R' is not in the Lax fragment");
  const LaxInfo two = classify_lax(parse_ok(kIn + "A = exp(X)\nB = add(A, Y)\nC = exp(B)\noutput C\n"));
  EXPECT_FALSE(two.lax);
  EXPECT_EQ(two.reason, "second exp on one path at kernel op 'C': X -> A -> B -> C");
  // exp after silu, inside a thread graph of a block graph
  const LaxInfo block = classify_lax(parse_ok(kIn + R"(O = graph_defined(X, grid=[1, 1, 1], forloop=1) {
  x = input_iterator(X, imap={}, fmap=phi)
  o = thread_graph(x) {
    s = silu(x)
    e = exp(s)
    output e
  }
  output_saver(o, omap={})
}
output O
)"));
  EXPECT_FALSE(block.lax);
  EXPECT_EQ(block.reason, "second exp on one path at thread node 'e' of block node 'o' of kernel 'O': X -> x -> s -> e");
  // Two exps on different paths are fine.
  EXPECT_TRUE(classify_lax(parse_ok(kIn + "A = exp(X)\nB = exp(Y)\nC = mul(A, B)\noutput C\n")).lax);
}

TEST(Lax, BoundsFollowTheProgram) {
  const FieldParams f;
  auto bound = [&](const std::string& a, const std::string& b) {
    const LaxInfo x = classify_lax(parse_ok(a)), y = classify_lax(parse_ok(b));
    return test_bound(x, y, {0}, f);
  };
  // exp-free: Schwartz-Zippel with the difference's degree (x*y vs y*x: degree 2).
  const TestBound mul = bound(kIn + "O = mul(X, Y)\noutput O\n", kIn + "O = mul(Y, X)\noutput O\n");
  EXPECT_FALSE(mul.vacuous);
  EXPECT_EQ(mul.d, 2);
  EXPECT_NEAR(mul.epsilon, 2.0 / f.p * 2.0 / f.q, 1e-30);
  // exp(x) exp(y) vs exp(x + y): k = 2 terms, Theorem 2.
  const TestBound e = bound(kIn + "A = exp(X)\nB = exp(Y)\nO = mul(A, B)\noutput O\n",
                            kIn + "T = add(X, Y)\nO = exp(T)\noutput O\n");
  EXPECT_FALSE(e.vacuous);
  EXPECT_EQ(e.k, 2);
  EXPECT_NEAR(e.epsilon, std::pow(static_cast<double>(f.q), -0.25), 1e-3);
  // softmax over 4096 keys: vacuous, and it says so.
  const TestBound att = bound(read_file(example_path("gqa")), read_file(example_path("gqa.flash_attention")));
  EXPECT_TRUE(att.vacuous);
  EXPECT_NE(att.note.find(">= 1"), std::string::npos) << att.note;
  EXPECT_EQ(tests_needed(1e-3, 1e-9), 3);
  EXPECT_EQ(tests_needed(0.5, 1e-9), 30);
}

VerifyOptions certify_opts() { return VerifyOptions{}; }

TEST(Verifier, NonLaxIsNeverVerified) {
  const auto a = parse_ok(kIn + "R = relu(X)\noutput R\n");
  const Verdict same = check(a, a, certify_opts());
  EXPECT_EQ(same.kind, VerdictKind::kUnproved);
  EXPECT_FALSE(same.lax);
  EXPECT_TRUE(same.float_checked);
  EXPECT_NE(same.summary.find("not Lax"), std::string::npos);
  const Verdict gelu = check(a, parse_ok(kIn + "R = gelu(X)\noutput R\n"), certify_opts());
  EXPECT_EQ(gelu.kind, VerdictKind::kUnstable) << gelu.summary;  // float check: relu != gelu
}

TEST(Verifier, FloatCheckRejectsAnUnstableCandidate) {
  // x = (x + 1e8) - 1e8 over the reals and the field; in float32 x is lost entirely.
  const auto ref = parse_ok(kIn + "O = add(X, Y)\noutput O\n");
  const auto bad = parse_ok(kIn + "A = add(X, Y)\nB = scale(A, factor=100000000)\nC = add(B, X)\n"
                                  "D = sub(C, X)\nO = scale(D, factor=1/100000000)\noutput O\n");
  const auto big = parse_ok(kIn + "A = scale(X, factor=100000000)\nB = add(A, Y)\nC = sub(B, A)\n"
                                  "D = add(C, X)\nO = sub(D, Y)\nE = add(O, Y)\noutput E\n");
  EXPECT_EQ(check(ref, bad, certify_opts()).kind, VerdictKind::kVerified);  // stable reordering
  const Verdict v = check(ref, big, certify_opts());
  EXPECT_EQ(v.kind, VerdictKind::kUnstable) << v.summary;
  ASSERT_EQ(v.floats.outputs.size(), 1u);
  EXPECT_GT(v.floats.outputs[0].cand_err, 100 * v.floats.outputs[0].limit);
}

TEST(Verifier, FindsAndReturnsTheOutputPermutation) {
  const auto ref = parse_ok(kIn + "S = add(X, Y)\nT = mul(X, Y)\nU = sub(X, Y)\noutput S\noutput T\noutput U\n");
  const auto cand = parse_ok(kIn + "U = sub(X, Y)\nS = add(X, Y)\nT = mul(X, Y)\noutput U\noutput S\noutput T\n");
  for (Mode m : {Mode::kScreen, Mode::kCertify}) {
    VerifyOptions o;
    o.mode = m;
    const Verdict v = check(ref, cand, o);
    EXPECT_TRUE(v.kind == VerdictKind::kVerified || v.kind == VerdictKind::kPassed) << v.summary;
    EXPECT_EQ(v.permutation, (std::vector<int>{1, 2, 0}));
  }
  // Same shapes, one output wrong: no matching, and the difference is named.
  const auto wrong = parse_ok(kIn + "U = sub(Y, X)\nS = add(X, Y)\nT = mul(X, Y)\noutput U\noutput S\noutput T\n");
  const Verdict v = check(ref, wrong, certify_opts());
  EXPECT_EQ(v.kind, VerdictKind::kNotEquivalent);
  EXPECT_NE(v.summary.find("output 'U'"), std::string::npos) << v.summary;
}

TEST(Verifier, SqrtIdentitiesAreNotCertified) {
  // sqrt(x y) = sqrt(x) sqrt(y) holds for the power map but not for a fresh variable per radicand.
  const auto a = parse_ok(kIn + "T = mul(X, Y)\nO = sqrt(T)\noutput O\n");
  const auto b = parse_ok(kIn + "A = sqrt(X)\nB = sqrt(Y)\nO = mul(A, B)\noutput O\n");
  VerifyOptions screen;
  screen.mode = Mode::kScreen;
  EXPECT_EQ(check(a, b, screen).kind, VerdictKind::kPassed);
  const Verdict v = check(a, b, certify_opts());
  EXPECT_EQ(v.kind, VerdictKind::kUnproved) << v.summary;
  EXPECT_NE(v.summary.find("sqrt"), std::string::npos);
}

TEST(Verifier, InterfaceMismatchIsAnError) {
  const Verdict v = check(parse_ok(kIn + "O = add(X, Y)\noutput O\n"),
                          parse_ok("input X : f32[4, 8]\ninput Z : f32[4, 8]\nO = add(X, Z)\noutput O\n"),
                          certify_opts());
  EXPECT_EQ(v.kind, VerdictKind::kError);
  EXPECT_EQ(v.summary, "input 1 differs: 'Y' f32[4, 8] vs 'Z' f32[4, 8]");
}

TEST(Verifier, ZeroDivisorsAreRedrawnNotIgnored) {
  // X - X is identically zero: every draw divides by zero, so the verdict is inconclusive.
  const auto g = parse_ok(kIn + "Z = sub(X, X)\nO = div(Y, Z)\noutput O\n");
  const Verdict v = check(g, g, certify_opts());
  EXPECT_EQ(v.kind, VerdictKind::kInconclusive) << v.summary;
  EXPECT_GT(v.redraws, 0);
}

// Demand-driven evaluation computes exactly what the plain interpreter does, on any box.
TEST(FieldEval, SlicedEqualsFullEvaluation) {
  const std::vector<std::string> texts = {
      read_file(example_path("lora.concat_matmul")),
      kIn + "C = concat(X, Y, dim=1)\nR = repeat(C, dim=0, times=2)\nS = reshape(R, shape=[16, 8])\n"
            "T = sum(S, dim=1, group=4)\nYT = reshape(Y, shape=[8, 4])\nM = matmul(S, YT)\noutput T\noutput M\n",
      "input Q : f32[2, 8, 4]\ninput K : f32[2, 4, 16]\ninput V : f32[2, 16, 4]\nO = attention(Q, K, V)\noutput O\n",
      // Graph-defined kernels: a thread graph after the loop (Fig. 3b form).
      mugraph::testing::kRmsFusedSmall,
      // Split-KV: 3-D grid, imap and fmap on one dim, two kernels, a loop over partial sums.
      R"(input Q : f32[2, 8, 4]
input K : f32[2, 4, 16]
input V : f32[2, 16, 4]
NP, DP = graph_defined(Q, K, V, grid=[2, 2, 2], forloop=2) {
  q = input_iterator(Q, imap={x:0, z:1}, fmap=phi)
  k = input_iterator(K, imap={x:0, y:2}, fmap=2)
  v = input_iterator(V, imap={x:0, y:1}, fmap=1)
  qk = matmul(q, k)
  e = exp(qk)
  d = sum(e, dim=2, group=4)
  n = matmul(e, v)
  nacc = accumulator(n, fmap=phi)
  dacc = accumulator(d, fmap=phi)
  output_saver(nacc, omap={x:0, y:2, z:1})
  output_saver(dacc, omap={x:0, y:2, z:1})
}
O = graph_defined(NP, DP, grid=[2, 2, 1], forloop=2) {
  np = input_iterator(NP, imap={x:0, y:1}, fmap=2)
  dp = input_iterator(DP, imap={x:0, y:1}, fmap=2)
  n = accumulator(np, fmap=phi)
  d = accumulator(dp, fmap=phi)
  o = div(n, d)
  output_saver(o, omap={x:0, y:1})
}
output O
)",
      // A concatenating accumulator read after the loop, and two outputs.
      R"(input A : f32[8, 16]
input B : f32[16, 8]
O, C = graph_defined(A, B, grid=[2, 1, 1], forloop=2) {
  a = input_iterator(A, imap={x:0}, fmap=1)
  b = input_iterator(B, imap={}, fmap=0)
  m = matmul(a, b)
  e = exp(a)
  acc = accumulator(m, fmap=phi)
  cat = accumulator(e, fmap=1)
  r = sum(cat, dim=1, group=16)
  o = div(acc, r)
  output_saver(o, omap={x:0})
  output_saver(cat, omap={x:0})
}
output O
output C
)",
      // Only a concatenating accumulator (only the iterations writing demanded parts run) and
      // a loop-invariant tile (computed once).
      R"(input A : f32[8, 16]
input G : f32[4]
C = graph_defined(A, G, grid=[2, 1, 1], forloop=4) {
  a = input_iterator(A, imap={x:0}, fmap=1)
  g = input_iterator(G, imap={}, fmap=phi)
  e = exp(g)
  m = mul(a, e)
  cat = accumulator(m, fmap=1)
  output_saver(cat, omap={x:0})
}
output C
)"};
  for (const std::string& text : texts) {
    const ir::KernelGraph g = parse_ok(text);
    FieldContext ctx(FieldParams{}, 12345);
    FieldScope scope(ctx);
    const auto full = interpret<FF>(g, hashed_inputs(g, 7));
    ASSERT_TRUE(full.ok());
    Rng rng(4);
    for (int trial = 0; trial < 9; ++trial) {
      std::vector<Box> want;
      for (ir::TensorId id : g.outputs) {
        const ir::Shape& s = g.tensor(id).type.shape;
        Box b;
        b.rank = s.rank;
        for (int d = 0; d < s.rank; ++d) {  // 1 to 3 distinct indices per dim
          for (int n = 0; n <= trial % 3; ++n) b.idx[d].push_back(static_cast<int64_t>(rng.below(static_cast<uint64_t>(s[d]))));
          std::sort(b.idx[d].begin(), b.idx[d].end());
          b.idx[d].erase(std::unique(b.idx[d].begin(), b.idx[d].end()), b.idx[d].end());
        }
        want.push_back(b);
      }
      const auto sliced = eval_field(g, want, 7);
      for (size_t o = 0; o < want.size(); ++o) {
        const BoxTensor whole{g.tensor(g.outputs[o]).type.shape, full_box(g.tensor(g.outputs[o]).type.shape), (*full)[o]};
        EXPECT_EQ(gather(sliced[o], want[o]).data, gather(whole, want[o]).data) << text;
      }
    }
  }
}

}  // namespace
}  // namespace mugraph::verify
