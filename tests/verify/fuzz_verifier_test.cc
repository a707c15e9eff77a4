// Differential fuzzing of the verifier (issue 19): the mutation generator (verify/mutate.h)
// makes valid pairs of every kind, deterministically; the float64 ground truth matches outputs
// up to a permutation; the pairs the fuzzer found (tests/data/fuzz/) stay fixed; and over 4,000
// seeded trials neither mode accepts a pair the interpreter finds different (the screen as the
// search runs it: sampled entries, then every entry; bench/verify_fuzz runs the same at 100,000
// trials: bench/results/verify.md).
#include <array>
#include <cstdio>
#include <filesystem>

#include "driver/fuzz_verifier.h"
#include "test_util.h"

namespace mugraph::verify {
namespace {

using driver::Truth;
using mugraph::testing::parse_ok;

const std::string kFuzzDir = std::string(MUGRAPH_TEST_DATA_DIR) + "/fuzz";
const std::string kSeedDir = kFuzzDir + "/seeds";

std::vector<SeedPair> seeds() {
  auto s = load_seed_pairs(kSeedDir);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? *s : std::vector<SeedPair>{};
}

TEST(FuzzVerifier, SeedPairsAreEqual) {
  const auto ps = seeds();
  EXPECT_GE(ps.size(), 40u);
  for (const SeedPair& p : ps) {
    SCOPED_TRACE(p.name);
    const auto gt = driver::ground_truth(parse_ok(p.ref), parse_ok(p.base));
    EXPECT_EQ(gt.truth, Truth::kEqual) << gt.note;
  }
}

TEST(FuzzVerifier, EveryKindMakesValidMutantsDeterministically) {
  const auto ps = seeds();
  for (MutationKind k : all_mutations()) {
    SCOPED_TRACE(std::string(mutation_name(k)));
    int valid = 0;
    for (uint64_t i = 0; i < 60; ++i) {
      const Trial t = make_trial(ps, k, 7, i);
      EXPECT_FALSE(t.no_site);
      valid += t.status.ok();
      const Trial again = make_trial(ps, k, 7, i);
      EXPECT_EQ(t.cand_text, again.cand_text);
      EXPECT_EQ(t.ref_text, again.ref_text);
    }
    EXPECT_GE(valid, 10) << "too few valid mutants";
  }
}

TEST(FuzzVerifier, GroundTruthMatchesOutputsUpToPermutation) {
  const std::string xy = "input X : f32[4, 8]\ninput Y : f32[4, 8]\n";
  const auto ref = parse_ok(xy + "A = sub(X, Y)\nB = sub(Y, X)\noutput A\noutput B\n");
  const auto swapped = parse_ok(xy + "B = sub(Y, X)\nA = sub(X, Y)\noutput B\noutput A\n");
  const auto gt = driver::ground_truth(ref, swapped);
  EXPECT_EQ(gt.truth, Truth::kEqual);
  EXPECT_EQ(gt.equal_matchings, (std::vector<std::vector<int>>{{1, 0}}));
  const auto same = parse_ok(xy + "A = sub(X, Y)\nB = sub(X, Y)\noutput A\noutput B\n");
  EXPECT_EQ(driver::ground_truth(ref, same).truth, Truth::kDifferent);
  const auto nan = parse_ok(xy + "A = sub(X, Y)\nS = sqrt(A)\nB = sub(Y, X)\noutput S\noutput B\n");
  EXPECT_EQ(driver::ground_truth(ref, nan).truth, Truth::kUndecided);  // sqrt of negatives
}

// The saved findings of tests/data/fuzz/ with a name starting `prefix`: {ref, cand, ref text}.
std::vector<std::array<std::string, 3>> saved_pairs(const std::string& prefix) {
  std::vector<std::array<std::string, 3>> out;
  for (const auto& e : std::filesystem::directory_iterator(kFuzzDir)) {
    const std::string name = e.path().filename().string(), path = e.path().string();
    const size_t at = path.rfind(".ref.mu");
    if (name.rfind(prefix, 0) != 0 || at == std::string::npos) continue;
    out.push_back({path, path.substr(0, at) + ".cand.mu", mugraph::testing::read_file(path)});
  }
  return out;
}

// The pairs that crashed the verifier (crash_*.{ref,cand}.mu, equal pairs) verify in both modes.
TEST(FuzzVerifier, SavedCrashPairsAreAccepted) {
  const auto pairs = saved_pairs("crash_");
  EXPECT_GE(pairs.size(), 1u);
  for (const auto& [ref_path, cand_path, ref_text] : pairs) {
    SCOPED_TRACE(ref_path);
    const auto ref = parse_ok(ref_text);
    const auto cand = parse_ok(mugraph::testing::read_file(cand_path));
    EXPECT_EQ(driver::ground_truth(ref, cand).truth, Truth::kEqual);
    VerifyOptions o;
    for (Mode mode : {Mode::kScreen, Mode::kCertify}) {
      o.mode = mode;
      const Verdict v = check(ref, cand, o);
      EXPECT_TRUE(mode == Mode::kScreen ? v.kind == VerdictKind::kPassed : accepted(v.kind))
          << verdict_name(v.kind) << ": " << v.summary;
    }
  }
}

// Every false accept the fuzzer found (tests/data/fuzz/false_accept-*.{ref,cand}.mu, each with
// the mode and seed it was found with in its "reproduce" comment) stays a different pair that
// neither mode accepts.
TEST(FuzzVerifier, SavedFalseAcceptsAreRejected) {
  const auto pairs = saved_pairs("false_accept-");
  EXPECT_GE(pairs.size(), 4u);
  for (const auto& [ref_path, cand_path, ref_text] : pairs) {
    SCOPED_TRACE(ref_path);
    const auto ref = parse_ok(ref_text);
    const auto cand = parse_ok(mugraph::testing::read_file(cand_path));
    EXPECT_EQ(driver::ground_truth(ref, cand).truth, Truth::kDifferent);
    const size_t seed_at = ref_text.find("--seed ", ref_text.find("reproduce"));
    ASSERT_NE(seed_at, std::string::npos);
    VerifyOptions o;
    o.seed = std::stoull(ref_text.substr(seed_at + 7));
    for (Mode mode : {Mode::kScreen, Mode::kCertify}) {
      o.mode = mode;
      const Verdict v = check(ref, cand, o);
      EXPECT_FALSE(mode == Mode::kScreen ? v.kind == VerdictKind::kPassed : accepted(v.kind))
          << verdict_name(v.kind) << ": " << v.summary;
    }
  }
}

// The screen's first look (one entry of each output, before the sampled box: verifier.cc)
// changes no verdict, whatever the mutant: it only decides where the sampled test would find
// the same difference. Over 25 valid mutants of every kind, the search's sampled screen
// (power-map sqrt first, float check deferred) and the plain one give the same verdict kind with
// the first look and without it, and the first look decides some of them.
TEST(FuzzVerifier, TheScreensFirstLookChangesNoVerdict) {
  const auto ps = seeds();
  int compared = 0, decided = 0;
  auto compare = [&](const ir::KernelGraph& ref, const ir::KernelGraph& cand, uint64_t seed,
                     const std::string& text) {
    for (Undecided u : {Undecided::kPowerMapThenDefer, Undecided::kFloatCheck}) {
      VerifyOptions o;
      o.mode = Mode::kScreen;
      o.seed = seed;
      o.undecided = u;
      const Verdict with = check(ref, cand, o);
      o.screen_first_look = false;
      const Verdict without = check(ref, cand, o);
      EXPECT_EQ(verdict_name(with.kind), verdict_name(without.kind))
          << text << "\nwith: " << with.summary << "\nwithout: " << without.summary;
      ++compared;
      decided += with.summary.find("(at the first sampled entry)") != std::string::npos;
    }
  };
  // A sqrt identity (equal under the power map and in floats, different as fresh variables):
  // the first look must not decide it on sqrt as a fresh variable.
  const std::string in = "input X : f32[4, 64]\nS = square(X)\nT = sum(S, dim=1, group=64)\n";
  const std::string b = in + "R = sqrt(T)\nU = mul(R, R)\nY = div(X, U)\noutput Y\n";
  compare(parse_ok(in + "U = mul(T, T)\nR = sqrt(U)\nY = div(X, R)\noutput Y\n"), parse_ok(b), 0, b);
  for (MutationKind k : all_mutations()) {
    SCOPED_TRACE(std::string(mutation_name(k)));
    int valid = 0;
    for (uint64_t i = 0; valid < 25 && i < 100; ++i) {
      const Trial t = make_trial(ps, k, 11, i);
      if (!t.status.ok()) continue;
      ++valid;
      compare(t.ref, t.cand, i, t.cand_text);
    }
  }
  std::printf("%d screens compared, %d decided by the first look\n", compared, decided);
  EXPECT_GT(decided, compared / 10);
}

// The fuzzer itself. No false accept in certify mode; in screen mode none beyond sampling misses
// (a PASSED screen that the same screen on every entry refutes: it compares only kScreenSamples
// entries per output, verify/verifier.h), and those rare (the catalog's bound, catalog_test.cc:
// at most 1% of the wrong candidates). False rejects are counted and printed:
// a correct candidate rejected costs the search a candidate, never correctness.
TEST(FuzzVerifier, NoFalseAcceptsIn4000Trials) {
  driver::FuzzOptions o;
  o.seed = 2026;
  o.trials = 4000;
  o.threads = 2;
  const driver::FuzzReport r = driver::fuzz_verifier(seeds(), o);
  std::printf("%s", driver::format_fuzz_report(r).c_str());
  EXPECT_EQ(r.total.certify_false_accepts, 0);
  // The search's screen ends with a field test on every entry: no sampling misses either.
  EXPECT_EQ(r.total.screen_false_accepts, 0);
  for (size_t k = 0; k < r.rows.size(); ++k) {
    SCOPED_TRACE(std::string(mutation_name(all_mutations()[k])));
    EXPECT_EQ(r.rows[k].no_site, 0);
    EXPECT_GE(r.rows[k].equal + r.rows[k].different, r.rows[k].trials / 5);
  }
  EXPECT_GE(r.total.different, 1000);
  EXPECT_GE(r.total.equal, 400);
}

}  // namespace
}  // namespace mugraph::verify
