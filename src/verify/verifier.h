// The equivalence verifier: check(ref, cand) -> Verdict (STYLE rule 11). Two modes.
//
// WHAT A VERDICT MEANS (the contract every caller relies on):
//   VERIFIED        certify only: every output entry agreed in tests whose number makes the
//                   stated false-accept bound (verify/lax.h) <= delta, every choice the verifier
//                   made (the output permutation) fixed before the counted tests, and the float
//                   check ran and passed. The only verdict that proves anything.
//   PASSED          the field tests agreed but prove nothing at delta (screen mode; no finite
//                   bound; test cap); the float check ran and passed in certify mode. One
//                   screen-mode exception: with Undecided::kPowerMapThenDefer the power-map test
//                   agreed, sqrt as a fresh variable did not, and the float check is pending
//                   (its summary says so; the search's every-entry test runs it).
//   UNPROVED        the field test cannot decide (not Lax; sqrt identities) and the float check
//                   ran and passed.
//   NOT EQUIVALENT  a field test found a differing entry in a program pair the field models
//                   faithfully (no sqrt): over the reals the programs differ.
//   UNSTABLE        rejected by the float check (equal over the field but numerically far
//                   worse, or the field could not decide and the float runs disagree).
//   INCONCLUSIVE    nothing could be concluded: too many zero divisors, a float check that could
//                   not judge (non-finite float64 reference at every input scale), or an
//                   undecided field test the caller asked not to float-check.
//   ERROR           the graphs cannot be compared (different inputs or output shapes).
// So a wrong candidate is never VERIFIED (but with probability <= delta), and never PASSED or
// UNPROVED without a float check that ran and passed (screen-mode PASSED: the field test only,
// as for any screen); a correct one is never NOT EQUIVALENT.
//
// SCREEN (inside the search): one random test over Z_p x Z_q, comparing a random subset of
// output entries: kScreenSamples entries per output, drawn uniformly, and every entry of the box
// they span (field_eval.h computes only what those entries need). The trade-off: a candidate
// wrong in only a few entries escapes unless one is sampled; wrong reductions, maps and operands
// spoil whole rows, columns or tiles and are caught with probability ~1 - (1 - fraction
// wrong)^samples. tests/verify/catalog_test.cc measures the false-accept rate over the mutant
// catalog (bench/results/verify.md records it). No float check (it needs full float runs).
// The sampled test's draw runs first on one entry of each output (screen_first_look): a
// difference there is one the sampled test would find too, and most wrong candidates of a search
// differ everywhere, so they are rejected for the blocks that one entry needs.
// With screen_every_entry (what the search uses), a candidate that passes the sampled test also
// passes one field test on EVERY output entry before it counts as passed: a wrong candidate then
// escapes only if every differing entry agrees in that field test, whatever fraction of the
// output is wrong (a permuted block, one wrong tile, one wrong entry): for exp-free programs the
// per-test bound of verify/lax.h (e.g. (d/p)(d/q) < 1e-30 for a bilinear difference); for
// programs with exp the root-of-unity test has no proven bound (THE GROUP-RING TEST below is the
// proof; certify runs it), and the differential fuzz measures it: 0 false accepts.
//
// CERTIFY (on the final answer): every output entry, repeated with fresh inputs, a fresh w and a
// fresh sqrt oracle until the per-test bound of verify/lax.h raised to the number of counted
// tests reaches delta, plus the float check. The first test also chooses the output
// permutation when the reference has more than one output; it is then not counted (the bound
// holds for tests drawn after every choice is fixed).
//
// SQRT. Programs with sqrt are tested with sqrt as a fresh variable (finite_field.h proves what
// that can and cannot conclude): agreement is evidence like any other test; a difference proves
// nothing (sqrt(25 x) = 5 sqrt(x) differs there), so it is never NOT EQUIVALENT: the float check
// decides between UNPROVED and UNSTABLE (VerifyOptions::undecided).
//
// NON-LAX programs (relu, gelu, two exps on a path): only the float check runs; the verdict is
// UNPROVED or UNSTABLE, never VERIFIED.
//
// THE GROUP-RING TEST (certify, programs with exp; verify/group_ring.h evaluates it). Theorem 2
// of the paper is vacuous once an output sums more than a few exp terms (softmax over 256 keys)
// and rests on a conjecture; certify therefore keeps exponentials formal.
//   The formal ring. Let K = Q(x, r) be the rational functions of the inputs x and of one new
//   variable r_y per distinct radicand y of a sqrt (sqrt is an uninterpreted symbol; a radicand
//   must be exp-free). Let E = K[exp(K)] be the group ring of the additive group of K over K: its
//   elements are finite sums sum_i c_i exp(g_i) with c_i, g_i in K and distinct g_i, multiplied
//   by exp(g) exp(h) = exp(g + h). Every Lax program entry is a fraction N / D of two elements of
//   E (one exp per path: an exponent is always exp-free, so it lies in K). Exponentials of
//   rational functions with pairwise non-constant differences are linearly independent over
//   C(x) (Ostrowski; Rosenlicht), and for constant differences Hermite-Lindemann (exp(c) is
//   transcendental for algebraic c != 0) gives the same: the map from E to real functions is
//   injective. So if two programs agree as real functions, N1 D2 = N2 D1 holds in E; with sqrt
//   read as r_y this needs no sqrt algebra, only that equal formal objects are equal functions
//   (substitute r_y = sqrt(y)), which is the direction soundness needs.
//   The test. Draw primes p and q uniformly from [2^61, 2^62), an input point x_p mod p and an
//   independent point x_q mod q, and for every distinct radicand a random root (r_p, r_q) keyed
//   by the radicand's value. The map c_i exp(g_i) -> c_i(x_p) z^(g_i(x_q)) into the group ring
//   Z_p[Z_q] = Z_p[z]/(z^q - 1) is a ring homomorphism wherever no denominator vanishes (it is
//   the group-ring functor applied to evaluation mod p on K and evaluation mod q on the group
//   (K, +)); no root of unity is involved, and q need not divide p - 1. Every exp-free value is
//   therefore evaluated twice (mod p as a coefficient, mod q for an exponent); an exponent is
//   never derived from a mod-p value. A program value is kept as a pair (numerator polynomial,
//   multiset of denominator factors) and never divided; two entries agree when N1 D2 == N2 D1
//   coefficient by coefficient (the numerators alone when the expanded denominators coincide).
//   The bound. Let Delta = N1 D2 - N2 D1 != 0 in E, with m terms after merging, each exponent
//   difference g_i - g_j of degree <= d_exp (numerator of the difference of two fractions) and
//   every coefficient's numerator of degree <= d_coef. Take one term c_1 exp(g_1) of Delta. Its
//   image vanishes only if (a) g_1(x_q) = g_j(x_q) mod q for one of the other m - 1 exponents,
//   probability <= (m - 1) d_exp / q by Schwartz-Zippel mod q, or (b) c_1(x_p) = 0 mod p,
//   probability <= d_coef / p, or (c) q divides every integer coefficient of some G_1 H_j - G_j
//   H_1, or p of c_1's numerator: a non-zero integer below 2^b has at most floor(b / 61) prime
//   factors >= 2^61, each drawn with probability 1 / (number of primes in the range). So one
//   test passes a wrong pair with probability
//     epsilon <= (m - 1) d_exp / 2^61 + d_coef / 2^61 + (content terms) + C(n, 2) d_r 2 / 2^61,
//   the last term for two of the n sqrt radicands whose random roots collide. A test in which
//   a divisor vanishes counts as failed (the verdict is INCONCLUSIVE; it is never redrawn, so no
//   conditioning enters the bound). A program pair is NOT EQUIVALENT only on a difference in a
//   test without sqrt (a homomorphism cannot separate equal elements); with sqrt a difference
//   goes to the float check (sqrt(25 x) = 5 sqrt(x) differs formally).
//   Where m, d_exp and d_coef come from. Each value carries bounds on its formal (unmerged)
//   form (GrMeta, group_ring.h) computed by the rules of fraction arithmetic from the program's
//   structure alone: the term count, degrees and bit heights of the numerator, and per
//   denominator factor. A factor is shared by where it comes from: dividing by a value makes
//   that value's numerator object one factor, so a softmax row keeps one denominator and a sum of
//   entries over it adds numerators; two factors are never merged because their images agree.
//   For softmax attention over n keys, m <= 2 n^2 (N: n terms, D: n terms), d_exp = 2, d_coef
//   = 1: about 3e-11 per test at 4096 keys, so one test reaches delta = 1e-9.
//   Every output entry is compared (streamed in chunks of rows, never all at once); the test
//   fails if any entry differs, so a wrong pair passes only if its differing entry's Delta
//   vanishes: the per-test bound is the largest over entries, no union bound needed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "support/deadline.h"
#include "verify/field_test.h"
#include "verify/float_check.h"
#include "verify/lax.h"

namespace mugraph::verify {

enum class Mode { kScreen, kCertify };

inline constexpr int kScreenSamples = 4;  // output entries sampled per output in screen mode
inline constexpr int kNoBoundTests = 4;   // certify tests when no bound applies

// What to do when the field test cannot decide (a program with sqrt whose fresh-variable test
// differs): run the float check (the honest answer, `mugraph verify`), first ask power-map sqrt
// and give up on a difference there (the search: a cheap filter that may lose a correct
// candidate whose constants are non-residues, never accepts a wrong one without the float
// check), or give up at once (INCONCLUSIVE).
// kPowerMapThenDefer is the search's screen on sampled entries (without screen_every_entry;
// with it, and in certify mode, it is kPowerMapThenFloatCheck): as kPowerMapThenFloatCheck, but
// a screen whose power-map test passes leaves the float check to the test every candidate that
// passed the screen gets next (search/screen_task.h: the every-entry test, with
// kPowerMapThenFloatCheck, which repeats this screen and then runs the float check): it passes
// the screen PASSED (the power-map test is the field test it passed) with the float check
// pending, and says so. The float check ran in both before (the same one, on the same seed):
// once is enough.
enum class Undecided { kFloatCheck, kPowerMapThenFloatCheck, kGiveUp, kPowerMapThenDefer };

struct VerifyOptions {
  Mode mode = Mode::kCertify;
  double delta = 1e-9;                 // certify: wanted bound on wrongly accepting
  uint64_t seed = 0;
  FieldParams field;                   // used when random_primes is off
  bool random_primes = true;           // a fresh (p, q) per test (finite_field.h: RANDOM PRIMES)
  int screen_samples = kScreenSamples;
  // Screen only: the sampled test's draw on one entry of each output first, and a difference
  // there decides (verifier.cc, first_look: the same verdict kind, for a fraction of the work
  // when a candidate differs everywhere). Off only to compare (tests).
  bool screen_first_look = true;
  int max_tests = 1000;                // certify: never more tests than this
  int no_bound_tests = kNoBoundTests;
  int max_redraws = 20;                // zero-divisor redraws before giving up
  int threads = 0;                     // for a graph-defined kernel's blocks; 0: all cores
  Undecided undecided = Undecided::kFloatCheck;
  // The float check's input seed when set (else `seed`). The search sets one seed for all its
  // candidates so that the reference's float runs are computed once (float_check.h caches them).
  std::optional<uint64_t> float_seed;
  // Screen only: after the sampled test passes, one more field test compares EVERY output entry
  // (what `search` writes has passed it). Its draw comes from `every_entry_seed` alone, so that
  // one search hashes the program's inputs in full and evaluates the reference once (cached,
  // until release_every_entry_cache) for all candidates, which read those inputs (every check
  // reserves the inputs whole and the reference's outputs, check_memory_bytes, so the one
  // shared copy stays within the budget while checks run). See SCREEN above.
  bool screen_every_entry = false;
  uint64_t every_entry_seed = 0;
  // When the check must stop (a time budget, Ctrl-C): past it the verdict is INCONCLUSIVE with
  // `cut` set, whatever had passed (support/deadline.h; the evaluators check it per op, block
  // and matmul row).
  Deadline deadline;
};

enum class VerdictKind {
  kVerified,       // certify: all tests passed, bound <= delta, float check passed
  kPassed,         // passed every test, but no proof at delta (screen, no bound, cap reached;
                   // a kPowerMapThenDefer screen: the power-map test, the float check pending)
  kNotEquivalent,  // a field test found a differing entry (no sqrt: a real difference)
  kUnstable,       // rejected by the float check
  kUnproved,       // the field cannot decide (not Lax, sqrt); the float check passed
  kInconclusive,   // zero divisors, a float check that could not judge, or given up
  kError,          // the graphs cannot be compared (inputs differ, ...)
};
std::string_view verdict_name(VerdictKind k);
// Whether the candidate was accepted at all (VERIFIED, PASSED or UNPROVED).
bool accepted(VerdictKind k);
// What a kPowerMapThenDefer screen's summary says when it leaves the float check pending, and
// whether a verdict's text (a summary, or a search's "PASSED (screen...): summary", as read
// back from a checkpoint too) says so: such a candidate is not yet known to be equal.
inline constexpr std::string_view kFloatCheckPending = "the float check pending";
bool float_check_pending(std::string_view verdict_text);

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
  std::string cut;                   // "time budget", "cancelled" or "memory budget" when one of
                                     // them stopped it (or, memory, kept it from starting)
};

// Checks `cand` against `ref`. First it reserves check_memory_bytes() of the memory budget
// (support/memory.h), waiting while other checks hold it; a check that needs more than the
// whole budget is not run: INCONCLUSIVE, `cut` = "memory budget", the summary says how much.
Verdict check(const ir::KernelGraph& ref, const ir::KernelGraph& cand, const VerifyOptions& opt);

// An estimate of the most memory check() holds at once: the field evaluation of the larger
// program in full (each tensor dropped after its last reader) at sizeof(FF) + 16 bytes per
// entry (a matmul's operand copies), or the float check's cached inputs plus its float64 run,
// whichever is larger. The group-ring test of a certify with exp reserves its own extra share
// (one output chunk, verifier.cc), or falls back to the field tests when it does not fit.
int64_t check_memory_bytes(const ir::KernelGraph& ref, const ir::KernelGraph& cand,
                           const VerifyOptions& opt);

// Frees the every-entry test's cached inputs and reference outputs (the search calls it when
// its test is over: a weight matrix in the field takes 24 bytes per entry).
void release_every_entry_cache();

// An estimate of the memory of interpret<double>(g) on a copy of its inputs (each tensor
// dropped after its last reader).
int64_t interpret_memory_bytes(const ir::KernelGraph& g);

// A multi-line human-readable report (what `mugraph verify` prints).
std::string format_verdict(const Verdict& v, const ir::KernelGraph& ref, const ir::KernelGraph& cand);

}  // namespace mugraph::verify
