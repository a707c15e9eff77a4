// The equivalence verifier: check(ref, cand) -> Verdict (STYLE rule 11). Two modes.
//
// SCREEN (inside the search): one random test over Z_p x Z_q with power-map sqrt, comparing a
// random subset of output entries: kScreenSamples entries per output, drawn uniformly, and
// every entry of the box they span (field_eval.h computes only what those entries need). The
// trade-off: a candidate wrong in only a few entries escapes unless one is sampled; wrong
// reductions, maps and operands spoil whole rows, columns or tiles and are caught with
// probability ~1 - (1 - fraction wrong)^samples. tests/verify/catalog_test.cc measures the
// false-accept rate over the mutant catalog (bench/results/verify.md records it). No float
// check (it needs full float runs).
//
// CERTIFY (on the final answer): every output entry, repeated with fresh inputs, a fresh w and a
// fresh sqrt oracle until the per-test bound of verify/lax.h raised to the number of tests
// reaches delta, plus the float check. Programs with sqrt are tested with fresh-variable sqrt
// (the bound needs it); if that rejects a candidate that power-map sqrt accepts, the candidate
// is equal only through sqrt identities (sqrt(x) sqrt(y) = sqrt(x y)) and is reported unproved.
// When the bound is vacuous (softmax over thousands of keys) the verdict says "no bound" and
// kNoBoundTests tests are run. A test that meets a zero divisor is redrawn, never counted.
//
// NON-LAX programs (relu, gelu, two exps on a path): only the float check runs; the verdict is
// "unproved", never "verified".
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "verify/field_test.h"
#include "verify/float_check.h"
#include "verify/lax.h"

namespace mugraph::verify {

enum class Mode { kScreen, kCertify };

inline constexpr int kScreenSamples = 4;  // output entries sampled per output in screen mode
inline constexpr int kNoBoundTests = 4;   // certify tests when no bound applies

struct VerifyOptions {
  Mode mode = Mode::kCertify;
  double delta = 1e-9;                 // certify: wanted bound on wrongly accepting
  uint64_t seed = 0;
  FieldParams field;
  int screen_samples = kScreenSamples;
  int max_tests = 1000;                // certify: never more tests than this
  int no_bound_tests = kNoBoundTests;
  int max_redraws = 20;                // zero-divisor redraws before giving up
  int threads = 0;                     // for a graph-defined kernel's blocks; 0: all cores
};

enum class VerdictKind {
  kVerified,       // certify: all tests passed, bound <= delta, float check passed
  kPassed,         // passed every test, but no proof at delta (screen, no bound, cap reached)
  kNotEquivalent,  // a field test found a differing entry
  kUnstable,       // equal over the field, rejected by the float check
  kUnproved,       // not Lax (float check only), or equal only through sqrt identities
  kInconclusive,   // too many zero divisors
  kError,          // the graphs cannot be compared (inputs differ, ...)
};
std::string_view verdict_name(VerdictKind k);

struct Verdict {
  VerdictKind kind = VerdictKind::kError;
  std::string summary;               // one line
  bool lax = false;                  // both programs Lax
  std::string lax_note;              // which op/path breaks it, when not
  Mode mode = Mode::kCertify;
  int tests = 0, redraws = 0;
  int64_t entries_compared = 0;      // per test, all outputs
  TestBound bound;                   // per test
  double delta_achieved = -1;        // epsilon^tests; < 0 when there is no bound
  std::string difference;            // the first differing output entry, when any
  FloatReport floats;
  bool float_checked = false;
  std::vector<int> permutation;      // ref output i is cand output permutation[i]
  double seconds = 0;
};

Verdict check(const ir::KernelGraph& ref, const ir::KernelGraph& cand, const VerifyOptions& opt);

// A multi-line human-readable report (what `mugraph verify` prints).
std::string format_verdict(const Verdict& v, const ir::KernelGraph& ref, const ir::KernelGraph& cand);

}  // namespace mugraph::verify
