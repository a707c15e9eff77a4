// Differential fuzzing of the verifier (issue 19): random (reference, candidate) pairs from
// verify/mutate.h, judged by the float64 interpreter and by the verifier in both modes.
//
// GROUND TRUTH. compare_graphs in double on two input seeds, for every matching of the
// candidate's outputs to the reference's (the verifier matches outputs up to a permutation, so
// a candidate with swapped outputs is equal, under that permutation). Per output the normwise
// relative error decides: <= kTruthEqual equal, >= kTruthDifferent different, in between or not
// finite undecided. A matching is equal when every output on both seeds is equal, different
// when some output on some seed is different (and nothing is non-finite); the pair is equal when
// some matching is equal, different when every matching is, and undecided otherwise (such
// trials are discarded and counted). Also undecided, because float64 cannot judge them: a pair
// where either program scales by a constant beyond 2^+-40 (terms below float64's resolution,
// or swallowed: e / 2^62 - e + e evaluates to 0), or is ill-conditioned (an output moves by
// >= kTruthDifferent when the inputs move by 2^-30). A blind spot remains: programs that differ
// by less than kTruthEqual (a factor 1 against (p - 1) / p) count as equal, so the verifier's
// correct rejection of such a pair shows as a false reject.
//
// ERRORS OF THE VERIFIER. On a decided pair, each mode's verdict is an acceptance (screen:
// PASSED; certify: VERIFIED, PASSED or UNPROVED), a rejection (NOT EQUIVALENT, UNSTABLE) or
// neither (INCONCLUSIVE, ERROR). A false accept is an acceptance of a different pair, or of an
// equal pair under an output matching that the ground truth finds different (the caller would
// wire the outputs wrongly). A false reject is a rejection of an equal pair. The verifier's
// contract (verify/verifier.h) allows neither in certify mode but with probability <= delta,
// and for the screen a false accept only when its sampled entries miss every differing one: a
// screen false accept is a *sampling miss* when the same screen with every output entry sampled
// does not pass; any other false accept is a bug.
//
// Deterministic: trial i depends on (seeds, options.seed, i) alone and results are merged in
// trial order, so the report is the same for any thread count (timings aside).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "verify/mutate.h"
#include "verify/verifier.h"

namespace mugraph::driver {

// The float64 interpreter's reorderings change results by ~1e-15 relative on the seed corpus
// (examples: 5e-16 to 7e-15), so 1e-9 leaves six orders of margin for an equal pair; a real
// mutation changes outputs by far more than 1e-4 (scale factors off by one part in 64 or more,
// wrong operands), so pairs in between are rare and too close to call.
inline constexpr double kTruthEqual = 1e-9;
inline constexpr double kTruthDifferent = 1e-4;
inline constexpr std::array<uint64_t, 2> kTruthSeeds = {11, 12};

enum class Truth { kEqual, kDifferent, kUndecided };

struct GroundTruth {
  Truth truth = Truth::kUndecided;
  std::vector<std::vector<int>> equal_matchings;  // ref output i -> cand output m[i]
  std::vector<std::vector<int>> different_matchings;
  std::string note;  // per matching and seed, each output's relative error
};

// The ground truth for a pair with equal inputs and the same multiset of output shapes.
GroundTruth ground_truth(const ir::KernelGraph& ref, const ir::KernelGraph& cand);

struct FuzzOptions {
  uint64_t seed = 1;
  int64_t trials = 2000;
  int64_t first = 0;             // trial indices first .. first + trials - 1 (to rerun one)
  int threads = 0;               // trials run in parallel; 0: all cores
  verify::VerifyOptions verify;  // mode and seed are set per trial; threads forced to 1
  // Called now and then with the number of finished trials (from a worker thread, serialized).
  std::function<void(int64_t done)> progress;
};

// Verdict counts are indexed by verify::VerdictKind.
inline constexpr int kVerdictKinds = 7;

struct FuzzRow {
  int64_t trials = 0, no_site = 0, invalid = 0, undecided = 0, equal = 0, different = 0;
  int64_t invalid_mutants = 0;  // discarded mutants, also those of trials that drew a valid one
  int64_t screen_false_accepts = 0, screen_false_rejects = 0;
  int64_t screen_sampling_misses = 0;  // of the screen's false accepts, the sampling misses
  int64_t certify_false_accepts = 0, certify_false_rejects = 0;
  // Verdicts on decided pairs: [mode: screen, certify][truth: equal, different][VerdictKind].
  std::array<std::array<std::array<int64_t, kVerdictKinds>, 2>, 2> verdicts{};
  double seconds = 0;  // ground truth + both verifier runs
  void add(const FuzzRow& o);
};

// One verifier error, with what it takes to reproduce it.
struct FuzzFinding {
  verify::Trial trial;
  verify::Mode mode = verify::Mode::kScreen;
  uint64_t verify_seed = 0;    // VerifyOptions::seed of the run (mugraph verify --seed)
  bool accept = true;          // false accept (else false reject)
  bool sampling_miss = false;  // a screen false accept that sampling every entry refutes
  std::string verdict;         // verdict name and summary
  std::string truth;           // the ground truth's numbers
};

struct FuzzReport {
  FuzzOptions options;
  std::vector<FuzzRow> rows;  // one per mutation kind, in all_mutations() order
  FuzzRow total;
  std::vector<FuzzFinding> findings;  // every false accept and false reject, in trial order
  double seconds = 0;
  std::map<std::string, std::pair<int64_t, double>> seed_cost;  // seed pair -> trials, seconds
  int64_t slowest_trial = -1;
  double slowest_seconds = 0;
  // False accepts other than the screen's sampling misses: each one is a verifier bug.
  int64_t unexplained_false_accepts() const {
    return total.screen_false_accepts - total.screen_sampling_misses + total.certify_false_accepts;
  }
};

// Runs `o.trials` trials, spread evenly over the mutation kinds (trial i has kind i mod 10).
FuzzReport fuzz_verifier(const std::vector<verify::SeedPair>& seeds, const FuzzOptions& o);

// The report table: one row per kind and a total, the verdict counts, every false accept and
// the first false rejects of each kind and mode.
std::string format_fuzz_report(const FuzzReport& r);

// Writes a finding as DIR/<name>.ref.mu and DIR/<name>.cand.mu, each opening with comments that
// say what was found (seed, trial, edits, verdict, ground truth). Returns the base path.
Result<std::string> write_finding(const FuzzFinding& f, uint64_t seed, const std::string& dir);

}  // namespace mugraph::driver
