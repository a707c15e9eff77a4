#include "verify/verifier.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>

#include "support/format.h"
#include "support/memory.h"
#include "verify/field_eval.h"
#include "verify/group_ring_round.h"
#include "verify/interface.h"

namespace mugraph::verify {
namespace {

struct Round {
  FieldOutcome outcome = FieldOutcome::kEqual;
  std::string detail;
  int64_t compared = 0;
};

// The first entry of `want` where a and b differ, or -1.
int64_t first_difference(const BoxTensor& a, const BoxTensor& b, const Box& want) {
  const HostTensor<FF> x = gather(a, want), y = gather(b, want);
  for (size_t i = 0; i < x.data.size(); ++i) {
    if ((i & 0xffff) == 0) check_deadline();
    if (!field_values_agree(x.data[i], y.data[i])) return static_cast<int64_t>(i);
  }
  return -1;
}

// Assigns each ref output a distinct cand output it matches (ok[i][j]); identity first.
bool assign(const std::vector<std::vector<bool>>& ok, size_t i, std::vector<int>& perm,
            std::vector<bool>& used) {
  if (i == ok.size()) return true;
  std::vector<size_t> order{i};
  for (size_t j = 0; j < ok[i].size(); ++j)
    if (j != i) order.push_back(j);
  for (size_t j : order) {
    if (j >= ok[i].size() || used[j] || !ok[i][j]) continue;
    used[j] = true;
    perm[i] = static_cast<int>(j);
    if (assign(ok, i + 1, perm, used)) return true;
    used[j] = false;
  }
  return false;
}

// Whether the evaluation just run met a non-Lax event or a zero divisor (then r says which).
bool flags_bad(Round& r) {
  const auto bad = field_run_problem();
  if (bad) r = {bad->outcome, bad->detail, 0};
  return bad.has_value();
}

// The reference's outputs at `want` under the active context, cached for small boxes: a search
// screens every candidate with the same draw (its screen seed is the search's), so all its
// sampled tests compare against one evaluation of the program. An evaluation that raised a
// flag (zero divisor, non-Lax event) is not cached: it is redone, and the flag with it.
std::vector<BoxTensor> reference_at(const ir::KernelGraph& ref, const std::vector<Box>& want,
                                    uint64_t key, int threads) {
  constexpr int64_t kMaxCachedEntries = int64_t{1} << 16;
  int64_t entries = 0;
  for (const Box& b : want) entries += b.numel();
  if (entries > kMaxCachedEntries) return eval_field(ref, want, key, threads);
  const FieldContext& c = field_context();
  struct Entry {
    ir::KernelGraph g;
    FieldParams f;
    uint64_t w, oracle, key;
    SqrtMode sm;
    std::vector<Box> want;
    std::vector<BoxTensor> out;
  };
  static std::mutex mu;
  static std::vector<std::shared_ptr<const Entry>> cache;  // the last few, newest last
  auto same = [&](const Entry& e) {
    return e.f.p == c.params.p && e.f.q == c.params.q && e.w == c.omega &&
           e.oracle == c.oracle.seed && e.key == key && e.sm == c.sqrt_mode && e.want == want &&
           e.g == ref;
  };
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& e : cache)
      if (same(*e)) return e->out;
  }
  std::vector<BoxTensor> out = eval_field(ref, want, key, threads);
  if (field_run_problem()) return out;
  auto e = std::make_shared<const Entry>(
      Entry{ref, c.params, c.omega, c.oracle.seed, key, c.sqrt_mode, want, out});
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() >= 8) cache.erase(cache.begin());
  cache.push_back(std::move(e));
  return out;
}

// A field test of at least this many output entries evaluates the two programs on two threads
// (unless one thread is asked for); smaller ones (sampled screens) are not worth a thread.
constexpr int64_t kTwoThreadEntries = int64_t{1} << 12;

// One random test: ref at `want`, cand at the matching boxes, compared (and perm found if empty).
Round field_round(const ir::KernelGraph& ref, const ir::KernelGraph& cand, const FieldParams& f,
                  SqrtMode sm, const std::vector<Box>& want, std::vector<int>& perm, Rng& rng,
                  int threads) {
  FieldContext ctx(f, random_root_of_unity(f, rng), sm, rng.next_u64());
  FieldScope scope(ctx);
  const uint64_t key = rng.next_u64();
  Round r;
  auto shape = [](const ir::KernelGraph& g, size_t o) { return g.tensor(g.outputs[o]).type.shape; };
  std::vector<std::optional<Box>> cw(cand.outputs.size());
  for (size_t i = 0; i < want.size(); ++i)
    for (size_t j = 0; j < cand.outputs.size(); ++j)
      if (perm.empty() ? shape(cand, j) == shape(ref, i) : perm[i] == static_cast<int>(j))
        cw[j] = cw[j] ? unite(*cw[j], want[i]) : want[i];
  std::vector<Box> cwant;
  for (size_t j = 0; j < cw.size(); ++j) cwant.push_back(cw[j] ? *cw[j] : full_box(shape(cand, j)));
  // The two programs on two threads when the test is large (a certify test on every entry; a
  // sampled screen, one thread in the search, is not worth a thread).
  int64_t entries = 0;
  for (const Box& w : want) entries += w.numel();
  const size_t n = threads == 1 || entries < kTwoThreadEntries ? 1 : 2;
  std::vector<BoxTensor> a, b;
  parallel_in_field(n, [&](size_t t) {
    if (t == 0) a = reference_at(ref, want, key, threads);
    if (t == 1 || (n == 1 && !field_run_problem())) b = eval_field(cand, cwant, key, threads);
  });
  if (flags_bad(r)) return r;
  for (const Box& w : want) r.compared += w.numel();
  if (perm.empty()) {
    std::vector<std::vector<bool>> ok(want.size(), std::vector<bool>(cand.outputs.size(), false));
    for (size_t i = 0; i < want.size(); ++i)
      for (size_t j = 0; j < cand.outputs.size(); ++j)
        ok[i][j] = shape(cand, j) == shape(ref, i) && first_difference(a[i], b[j], want[i]) < 0;
    std::vector<int> p(want.size(), -1);
    std::vector<bool> used(cand.outputs.size(), false);
    if (assign(ok, 0, p, used)) {
      perm = p;
      return r;
    }
    // Report against the identity (or the first same-shape output) for a readable difference.
    for (size_t i = 0; i < want.size(); ++i) {
      size_t j = i < cand.outputs.size() && shape(cand, i) == shape(ref, i) ? i : 0;
      while (!(shape(cand, j) == shape(ref, i))) ++j;
      const int64_t at = first_difference(a[i], b[j], want[i]);
      if (at >= 0)
        return {FieldOutcome::kDifferent, "output '" + ref.tensor(ref.outputs[i]).name + "' entry " +
                                              index_text(want[i], at) + " differs from candidate output '" +
                                              cand.tensor(cand.outputs[j]).name + "'", r.compared};
    }
    return {FieldOutcome::kDifferent, "no one-to-one matching of the outputs", r.compared};
  }
  for (size_t i = 0; i < want.size(); ++i) {
    const int64_t at = first_difference(a[i], b[static_cast<size_t>(perm[i])], want[i]);
    if (at >= 0)
      return {FieldOutcome::kDifferent, "output '" + ref.tensor(ref.outputs[i]).name + "' entry " +
                                            index_text(want[i], at) + " differs", r.compared};
  }
  return r;
}

// kScreenSamples random entries of each output, as boxes.
std::vector<Box> sample_boxes(const ir::KernelGraph& g, int samples, Rng& rng) {
  std::vector<Box> out;
  for (ir::TensorId id : g.outputs) {
    const ir::Shape& s = g.tensor(id).type.shape;
    Box b;
    b.rank = s.rank;
    for (int k = 0; k < samples; ++k)
      for (int d = 0; d < s.rank; ++d) b.idx[d].push_back(static_cast<int64_t>(rng.below(static_cast<uint64_t>(s[d]))));
    for (int d = 0; d < s.rank; ++d) {
      std::sort(b.idx[d].begin(), b.idx[d].end());
      b.idx[d].erase(std::unique(b.idx[d].begin(), b.idx[d].end()), b.idx[d].end());
    }
    out.push_back(std::move(b));
  }
  return out;
}

std::vector<Box> full_boxes(const ir::KernelGraph& g) {
  std::vector<Box> out;
  for (ir::TensorId id : g.outputs) out.push_back(full_box(g.tensor(id).type.shape));
  return out;
}

// The every-entry test's draw (params, w, sqrt oracle, key), from its seed alone, and the
// program's inputs hashed with it in full, which every candidate reads (FullInputs).
struct FullDraw {
  bool random_primes = true;
  FieldParams f;  // the field: drawn, or o.field with fixed primes
  uint64_t w = 0, oracle = 0, key = 0;
  FullInputs inputs;
  bool of(const VerifyOptions& o) const {
    return random_primes ? o.random_primes
                         : !o.random_primes && o.field.p == f.p && o.field.q == f.q;
  }
};

// The reference's outputs in full for that draw: every candidate of a search is compared
// against the same evaluation (cached).
struct FullRun {
  std::shared_ptr<const FullDraw> draw;
  SqrtMode sm = SqrtMode::kPowerMap;
  std::vector<BoxTensor> outputs;
  std::string problem;  // a non-Lax event or zero divisor in the reference (then no comparison)
};
std::mutex full_runs_mu;
// The last program's draw (its inputs can be a GiB: one kept), and its runs per sqrt mode.
std::vector<std::tuple<ir::KernelGraph, uint64_t, std::shared_ptr<const FullDraw>>> full_draws;
std::vector<std::shared_ptr<const FullRun>> full_runs;

std::shared_ptr<const FullDraw> full_draw(const ir::KernelGraph& ref, const VerifyOptions& o) {
  auto cached = [&]() -> std::shared_ptr<const FullDraw> {
    std::lock_guard<std::mutex> lock(full_runs_mu);
    for (const auto& [g, s, d] : full_draws)
      if (s == o.every_entry_seed && d->of(o) && g == ref) return d;
    return nullptr;
  };
  if (auto d = cached()) return d;
  static std::mutex drawing;  // hashed once: the other threads wait (a fraction of one test)
  std::lock_guard<std::mutex> one(drawing);
  if (auto d = cached()) return d;
  Rng rng(o.every_entry_seed);
  auto d = std::make_shared<FullDraw>();
  d->random_primes = o.random_primes;
  d->f = o.random_primes ? random_field_params(rng) : o.field;
  d->w = random_root_of_unity(d->f, rng);
  d->oracle = rng.next_u64();
  d->key = rng.next_u64();
  FieldContext ctx(d->f, d->w, SqrtMode::kPowerMap, d->oracle);  // the inputs need only the field
  FieldScope scope(ctx);
  d->inputs = full_inputs(ref, d->key);
  std::lock_guard<std::mutex> lock(full_runs_mu);
  full_draws.clear();
  full_runs.clear();  // of the draw before
  full_draws.emplace_back(ref, o.every_entry_seed, d);
  return d;
}

// The reference's run for draw d, from the cache, else evaluated here: by the first thread
// that asks (the others wait for it, unless `wait` is false: then they get null).
std::shared_ptr<const FullRun> full_reference(const ir::KernelGraph& ref, const VerifyOptions& o,
                                              SqrtMode sm, const std::shared_ptr<const FullDraw>& d,
                                              bool wait) {
  auto cached = [&]() -> std::shared_ptr<const FullRun> {
    std::lock_guard<std::mutex> lock(full_runs_mu);
    for (const auto& run : full_runs)
      if (run->draw == d && run->sm == sm) return run;
    return nullptr;
  };
  if (auto run = cached()) return run;
  static std::mutex computing;
  std::unique_lock<std::mutex> one(computing, std::defer_lock);
  if (wait)
    one.lock();
  else if (!one.try_lock())
    return nullptr;
  if (auto run = cached()) return run;
  auto run = std::make_shared<FullRun>();
  run->draw = d;
  run->sm = sm;
  FieldContext ctx(d->f, d->w, sm, d->oracle);
  FieldScope scope(ctx);
  run->outputs = eval_field(ref, full_boxes(ref), d->key, o.threads, &d->inputs);
  if (const auto bad = field_run_problem()) run->problem = bad->detail;
  std::lock_guard<std::mutex> lock(full_runs_mu);
  if (full_runs.size() >= 2) full_runs.erase(full_runs.begin());
  full_runs.push_back(run);
  return run;
}

// One field test on every output entry against the cached reference run (outputs matched by
// `perm`, chosen by the sampled test). The first thread to need the reference evaluates it
// first; the others evaluate their candidates meanwhile and then wait for it, if they must
// (with 16 threads, 15 had waited out the reference's whole run before starting).
Round every_entry_round(const ir::KernelGraph& ref, const ir::KernelGraph& cand,
                        const VerifyOptions& o, SqrtMode sm, const std::vector<int>& perm) {
  const std::shared_ptr<const FullDraw> drawn = full_draw(ref, o);
  const FullDraw& d = *drawn;
  auto run = full_reference(ref, o, sm, drawn, /*wait=*/false);
  const auto unusable = [](const FullRun& fr) -> Round {
    return {FieldOutcome::kInconclusive, fr.problem, 0};
  };
  if (run && !run->problem.empty()) return unusable(*run);
  std::vector<BoxTensor> b;
  Round r;
  {
    FieldContext ctx(d.f, d.w, sm, d.oracle);
    FieldScope scope(ctx);
    std::vector<Box> want(cand.outputs.size());
    for (size_t j = 0; j < cand.outputs.size(); ++j)
      want[j] = full_box(cand.tensor(cand.outputs[j]).type.shape);
    b = eval_field(cand, want, d.key, o.threads, &d.inputs);
    if (flags_bad(r)) return r;
  }
  if (!run) run = full_reference(ref, o, sm, drawn, /*wait=*/true);
  if (!run->problem.empty()) return unusable(*run);
  for (size_t i = 0; i < ref.outputs.size(); ++i) {
    const Box all = full_box(ref.tensor(ref.outputs[i]).type.shape);
    r.compared += all.numel();
    const int64_t at = first_difference(run->outputs[i], b[static_cast<size_t>(perm[i])], all);
    if (at >= 0)
      return {FieldOutcome::kDifferent, "output '" + ref.tensor(ref.outputs[i]).name + "' entry " +
                                            index_text(all, at) + " differs (every-entry test)", r.compared};
  }
  return r;
}

// Runs rounds until `n` pass (or one fails); zero divisors are redrawn.
Round run_tests(const ir::KernelGraph& ref, const ir::KernelGraph& cand, const VerifyOptions& o,
                SqrtMode sm, const std::vector<Box>& want, std::vector<int>& perm, Rng& rng,
                int n, Verdict& v) {
  Round last;
  while (v.tests < n) {
    const FieldParams f = o.random_primes ? random_field_params(rng) : o.field;
    last = field_round(ref, cand, f, sm, want, perm, rng, o.threads);
    if (last.outcome == FieldOutcome::kInconclusive) {
      if (++v.redraws > o.max_redraws) return last;
      continue;
    }
    if (last.outcome != FieldOutcome::kEqual) return last;
    v.entries_compared = last.compared;
    ++v.tests;
  }
  return last;
}

void finish_field_failure(const Round& r, Verdict& v) {
  v.difference = r.detail;
  if (r.outcome == FieldOutcome::kDifferent) {
    v.kind = VerdictKind::kNotEquivalent;
    v.summary = "not equivalent: " + r.detail;
  } else if (r.outcome == FieldOutcome::kInconclusive) {
    v.kind = VerdictKind::kInconclusive;
    v.summary = "inconclusive: a zero divisor in more than " + std::to_string(v.redraws - 1) + " random draws";
  } else {
    v.kind = VerdictKind::kError;
    v.summary = "cannot evaluate over the field: " + r.detail;
  }
}

// Runs the float check into v; false (and v set INCONCLUSIVE) when it could not judge.
bool run_float_check(const ir::KernelGraph& ref, const ir::KernelGraph& cand,
                     const VerifyOptions& o, Verdict& v, bool equality = false) {
  v.floats = float_check(ref, cand, v.permutation, o.float_seed.value_or(o.seed), equality);
  v.float_checked = true;
  if (v.floats.judged) return true;
  v.kind = VerdictKind::kInconclusive;
  v.summary = "inconclusive: the float check could not judge (" + v.floats.note + ")";
  return false;
}

// Whether the power-map test runs first (a difference there: INCONCLUSIVE).
bool power_map_first(Undecided u) {
  return u == Undecided::kPowerMapThenFloatCheck || u == Undecided::kPowerMapThenDefer;
}

// The field test cannot decide (`why`): the float check does, unless the options say otherwise.
void undecided(const ir::KernelGraph& ref, const ir::KernelGraph& cand, const VerifyOptions& o,
               const std::vector<Box>& want, Rng& rng, const std::string& why, Verdict& v) {
  v.permutation.clear();
  if (power_map_first(o.undecided) && o.mode == Mode::kCertify) {
    std::vector<int> perm;
    Verdict scratch;
    const Round pm = run_tests(ref, cand, o, SqrtMode::kPowerMap, want, perm, rng, 1, scratch);
    if (pm.outcome != FieldOutcome::kEqual) {
      v.kind = VerdictKind::kInconclusive;
      v.summary = "inconclusive: " + why + ", and different with power-map sqrt too";
      return;
    }
    v.permutation = perm;
  }
  if (o.undecided == Undecided::kGiveUp) {
    v.kind = VerdictKind::kInconclusive;
    v.summary = "inconclusive: " + why + " (no float check asked for)";
    return;
  }
  if (!run_float_check(ref, cand, o, v, /*equality=*/true)) return;
  v.kind = v.floats.ok ? VerdictKind::kUnproved : VerdictKind::kUnstable;
  const bool wrong64 = v.floats.float64_mismatch;
  v.summary = std::string(v.floats.ok ? "unproved"
                          : wrong64   ? "rejected by the float check (the candidate's float64 "
                                        "run differs from the reference's: wrong, or unstable)"
                                      : "rejected by the float check") +
              ": " + why + (v.floats.ok ? "; the float check passed" : "");
}

const char* kSqrtUndecided =
    "different with sqrt as a fresh variable, which proves nothing (an identity such as "
    "sqrt(25 x) = 5 sqrt(x) or sqrt(x) sqrt(y) = sqrt(x y) looks different there)";

// The float check after field tests that all passed, and the verdict.
void finish_certify(const ir::KernelGraph& ref, const ir::KernelGraph& cand, const VerifyOptions& o,
                    Verdict& v) {
  if (!v.bound.vacuous) v.delta_achieved = std::pow(v.bound.epsilon, v.tests);
  if (!run_float_check(ref, cand, o, v)) return;
  if (!v.floats.ok) {
    v.kind = VerdictKind::kUnstable;
    v.summary = "rejected by the float check: equal in the field tests, far from the float64 "
                "reference (numerically unstable, or a difference the field tests cannot see)";
  } else if (v.bound.vacuous) {
    v.kind = VerdictKind::kPassed;
    v.summary = "passed " + std::to_string(v.tests) + " field tests; no bound (" + v.bound.note + ")";
  } else if (!(v.delta_achieved <= o.delta)) {
    v.kind = VerdictKind::kPassed;
    v.summary = "passed " + std::to_string(v.tests) + " field tests; delta " + fmt_g3(v.delta_achieved) +
                " not below the requested " + fmt_g3(o.delta) + " (test cap)";
  } else {
    v.kind = VerdictKind::kVerified;
    v.summary = "verified: false-accept probability <= " + fmt_g3(v.delta_achieved);
  }
}

// Certifies a program pair with exp by group-ring tests; false when the group ring cannot
// evaluate them (a polynomial over the term limit, sqrt of an exp, ...): the caller then runs the
// field tests.
bool certify_group_ring(const ir::KernelGraph& ref, const ir::KernelGraph& cand,
                        const VerifyOptions& o, const LaxInfo& lr, const LaxInfo& lc, Rng& rng,
                        Verdict& v, std::string& why_not) {
  std::vector<int> perm{0};
  if (ref.outputs.size() > 1) {  // the permutation, chosen by a field test that is not counted
    perm.clear();
    Verdict scratch;
    const bool sqrt = lr.has_sqrt || lc.has_sqrt;
    const Round pr = run_tests(ref, cand, o, sqrt ? SqrtMode::kFreshVariable : SqrtMode::kPowerMap,
                               full_boxes(ref), perm, rng, 1, scratch);
    if (pr.outcome != FieldOutcome::kEqual) {
      why_not = "the field test choosing the output matching failed";
      return false;
    }
  }
  // Beyond what check() reserved for the field tests; never waited for (the caller holds a
  // reservation already): when it does not fit, the field tests run instead, and say why.
  MemoryReservation more;
  const int64_t gr = group_ring_memory_bytes(ref, cand, perm);
  const int64_t extra = gr - check_memory_bytes(ref, cand, o);
  if (std::string why; extra > 0 && !reserve_memory(extra, more, &why, /*wait=*/false)) {
    why_not = "it would hold about " + bytes_text(gr) + " in all; the rest " + why;
    return false;
  }
  const bool sqrt = lr.has_sqrt || lc.has_sqrt;
  const double n_sqrt = lr.sqrt_evaluations + lc.sqrt_evaluations;
  const double sqrt_term = n_sqrt * n_sqrt / 2 * std::max(lr.radicand_degree, lc.radicand_degree) * 2 /
                           static_cast<double>(kLeastGroupRingField.p);
  int n = 1;
  v.tests = 0;
  while (v.tests < n) {
    const GrRound r = group_ring_round(ref, cand, perm, rng, o.threads);
    if (r.fallback) {
      v.tests = 0;
      why_not = r.detail;
      return false;
    }
    v.permutation = perm;
    if (r.outcome == FieldOutcome::kInconclusive) {
      v.kind = VerdictKind::kInconclusive;
      v.summary = "inconclusive: " + r.detail + " in group-ring test " + std::to_string(v.tests + 1) +
                  " (a vanishing denominator counts as a failed test; it is never redrawn)";
      return true;
    }
    if (r.outcome == FieldOutcome::kDifferent) {
      if (sqrt) {
        undecided(ref, cand, o, full_boxes(ref), rng, std::string(kSqrtUndecided) + ": " + r.detail, v);
      } else {
        v.difference = r.detail;
        v.kind = VerdictKind::kNotEquivalent;
        v.summary = "not equivalent: " + r.detail + " (group-ring test)";
      }
      return true;
    }
    v.entries_compared = r.compared;
    if (v.tests++ == 0) {
      TestBound b;
      b.epsilon = r.worst.epsilon + sqrt_term;
      b.k = r.worst.m;
      b.d = r.worst.d_exp;
      b.vacuous = !(b.epsilon < 1);
      b.note = "group ring Z_p[Z_q], p and q random primes >= 2^61: per entry <= " + fmt_g3(r.worst.m) +
               " exp terms, exponent degree " + fmt_g3(r.worst.d_exp) + ", coefficient degree " +
               fmt_g3(r.worst.d_coef) + (n_sqrt > 0 ? ", " + fmt_g3(n_sqrt) + " sqrt symbols" : "");
      if (b.vacuous) b.note += ": per-test bound " + fmt_g3(b.epsilon) + " >= 1";
      v.bound = b;
      n = b.vacuous ? o.no_bound_tests : std::min(tests_needed(b.epsilon, o.delta), o.max_tests);
    }
  }
  finish_certify(ref, cand, o, v);
  return true;
}

void certify(const ir::KernelGraph& ref, const ir::KernelGraph& cand, const VerifyOptions& o,
             const LaxInfo& lr, const LaxInfo& lc, Rng& rng, Verdict& v) {
  std::string why_not;  // why the group-ring test did not decide
  if ((lr.has_exp || lc.has_exp) && o.random_primes && !lr.sqrt_of_exp && !lc.sqrt_of_exp &&
      certify_group_ring(ref, cand, o, lr, lc, rng, v, why_not))
    return;
  const bool sqrt = lr.has_sqrt || lc.has_sqrt;
  const SqrtMode sm = sqrt ? SqrtMode::kFreshVariable : SqrtMode::kPowerMap;
  const auto want = full_boxes(ref);
  Round r = run_tests(ref, cand, o, sm, want, v.permutation, rng, 1, v);
  if (r.outcome == FieldOutcome::kEqual) {
    // With several outputs the first test chose the permutation: only tests drawn after that
    // choice count towards the bound.
    if (ref.outputs.size() > 1) v.tests = 0;
    v.bound = test_bound(lr, lc, v.permutation, o.random_primes ? kLeastRandomField : o.field,
                         o.random_primes);
    if (!why_not.empty()) v.bound.note += " (the group-ring test gave up: " + why_not + ")";
    const int n = v.bound.vacuous ? o.no_bound_tests
                                  : std::min(tests_needed(v.bound.epsilon, o.delta), o.max_tests);
    r = run_tests(ref, cand, o, sm, want, v.permutation, rng, n, v);
  }
  if (r.outcome != FieldOutcome::kEqual) {
    if (r.outcome == FieldOutcome::kDifferent && sqrt)
      return undecided(ref, cand, o, want, rng, std::string(kSqrtUndecided) + ": " + r.detail, v);
    finish_field_failure(r, v);
    return;
  }
  finish_certify(ref, cand, o, v);
}

}  // namespace

namespace {

// A screen's first look: the test that follows (same draw: `rng` is a copy) on one entry of each
// output, the first of `want`'s, a sub-box of it. Most wrong candidates of a search differ at every
// entry, and one entry demands a fraction of the blocks that the sampled box does (QKNorm at paper
// shapes: one block of rows instead of up to four), so they are rejected for that fraction. Only a
// difference on the first draw is acted on: the sampled test would find it too (the same values at
// the same entries), so the verdict's kind is the one the sampled test gives, except where the
// sampled box meets a zero divisor that this entry does not (then the sampled test redraws, and
// may end INCONCLUSIVE where this says different: rejected either way). Anything else (equal, a
// zero divisor) leaves the decision to the sampled test. Nothing when `want` holds one entry per
// output already.
std::optional<Round> first_look(const ir::KernelGraph& ref, const ir::KernelGraph& cand,
                                const VerifyOptions& o, SqrtMode sm, const std::vector<Box>& want,
                                Rng rng) {
  std::vector<Box> one;
  bool smaller = false;
  for (const Box& b : want) {
    Box e;
    e.rank = b.rank;
    for (int d = 0; d < b.rank; ++d) e.idx[d] = {b.idx[d].front()};
    smaller = smaller || b.numel() > 1;
    one.push_back(std::move(e));
  }
  if (!smaller || !o.screen_first_look) return std::nullopt;
  std::vector<int> perm;
  Verdict scratch;
  VerifyOptions once = o;  // the first draw only: a zero divisor leaves it to the sampled test
  once.max_redraws = 0;
  Round r = run_tests(ref, cand, once, sm, one, perm, rng, 1, scratch);
  if (r.outcome != FieldOutcome::kDifferent) return std::nullopt;
  r.detail += " (at the first sampled entry)";
  return r;
}

void check_pair(const ir::KernelGraph& ref, const ir::KernelGraph& cand, const VerifyOptions& o,
                std::chrono::steady_clock::time_point t0, Verdict& v) {
  const LaxInfo lr = classify_lax(ref), lc = classify_lax(cand);
  v.lax = lr.lax && lc.lax;
  Rng rng(o.seed);
  if (!v.lax) {
    v.lax_note = !lr.lax ? "reference: " + lr.reason : "candidate: " + lc.reason;
    if (run_float_check(ref, cand, o, v, /*equality=*/true)) {
      v.kind = v.floats.ok ? VerdictKind::kUnproved : VerdictKind::kUnstable;
      v.summary = std::string(v.floats.ok ? "unproved" : "rejected by the float check") +
                  ": not Lax (" + v.lax_note + "), so only the float check ran";
    }
  } else if (o.mode == Mode::kScreen) {
    const bool sqrt = lr.has_sqrt || lc.has_sqrt;
    const auto want = sample_boxes(ref, o.screen_samples, rng);
    const SqrtMode sm = sqrt ? SqrtMode::kFreshVariable : SqrtMode::kPowerMap;
    const bool pm_first = sqrt && power_map_first(o.undecided);
    // (With sqrt as a fresh variable, a difference goes on to the float check: no first look.)
    const std::optional<Round> look =
        pm_first || !sqrt ? first_look(ref, cand, o, SqrtMode::kPowerMap, want, rng) : std::nullopt;
    if (look && !sqrt) {
      finish_field_failure(*look, v);
      v.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return;
    }
    std::vector<int> pm_perm;  // the outputs' matching the power-map test found
    if (pm_first) {
      // The search's order: the power map first, a cheap filter that rejects most wrong
      // candidates in one test (a difference there proves nothing: INCONCLUSIVE).
      Verdict scratch;
      const Round pm =
          look ? *look : run_tests(ref, cand, o, SqrtMode::kPowerMap, want, pm_perm, rng, 1, scratch);
      if (pm.outcome != FieldOutcome::kEqual) {
        if (pm.outcome == FieldOutcome::kDifferent) {
          v.kind = VerdictKind::kInconclusive;
          v.summary = "inconclusive: different with power-map sqrt (" + pm.detail +
                      "), which proves nothing";
        } else {
          finish_field_failure(pm, v);
        }
        v.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return;
      }
    }
    Round r = run_tests(ref, cand, o, sm, want, v.permutation, rng, 1, v);
    const int64_t sampled = v.entries_compared;
    if (r.outcome == FieldOutcome::kEqual && o.screen_every_entry) {
      r = every_entry_round(ref, cand, o, sm, v.permutation);
      if (r.outcome == FieldOutcome::kEqual) {
        ++v.tests;
        v.entries_compared = r.compared;
      }
    }
    if (r.outcome == FieldOutcome::kEqual) {
      v.kind = VerdictKind::kPassed;
      v.summary = "passed the screen: 1 field test on " + std::to_string(sampled) + " sampled output entries" +
                  (o.screen_every_entry ? ", 1 on all " + std::to_string(v.entries_compared) : std::string());
    } else if (r.outcome == FieldOutcome::kDifferent && sqrt && !o.screen_every_entry &&
               o.undecided == Undecided::kPowerMapThenDefer) {
      // The power-map test passed (pm_first): the float check is the every-entry test's.
      v.kind = VerdictKind::kPassed;
      v.permutation = pm_perm;
      int64_t entries = 0;
      for (const Box& b : want) entries += b.numel();
      v.summary = "passed the screen: 1 field test with power-map sqrt on " +
                  std::to_string(entries) + " sampled output entries; " + std::string(kFloatCheckPending) +
                  " (left to the test on every entry): " + kSqrtUndecided + ": " + r.detail;
    } else if (r.outcome == FieldOutcome::kDifferent && sqrt) {
      undecided(ref, cand, o, want, rng, std::string(kSqrtUndecided) + ": " + r.detail, v);
    } else {
      finish_field_failure(r, v);
    }
  } else {
    certify(ref, cand, o, lr, lc, rng, v);
  }
}

}  // namespace

namespace {

int64_t input_entries(const ir::KernelGraph& g) {
  int64_t n = 0;
  for (ir::TensorId id : g.inputs) n += g.tensor(id).type.shape.numel();
  return n;
}

// Entries a full evaluation holds at once: the inputs, then each op's outputs, tensors dropped
// after their last reader (as demanded_peak_entries, without planning every block's tiles:
// in full, every tensor is whole).
int64_t full_peak_entries(const ir::KernelGraph& g) {
  return detail::live_peak(g, [&](ir::TensorId id) { return g.tensor(id).type.shape.numel(); });
}

}  // namespace

void release_every_entry_cache() {
  std::lock_guard<std::mutex> lock(full_runs_mu);
  full_draws.clear();
  full_runs.clear();
}

int64_t check_memory_bytes(const ir::KernelGraph& ref, const ir::KernelGraph& cand,
                           const VerifyOptions& o) {
  const int64_t full = std::max(full_peak_entries(ref), full_peak_entries(cand));
  // Entries the field tests evaluate at once: certify's tests on every entry evaluate both
  // programs at once when they are large (field_round, kTwoThreadEntries).
  int64_t outputs = 0;
  for (ir::TensorId id : ref.outputs) outputs += ref.tensor(id).type.shape.numel();
  int64_t peak = o.mode == Mode::kCertify && o.threads != 1 && outputs >= kTwoThreadEntries
                     ? full_peak_entries(ref) + full_peak_entries(cand)
                     : full;
  // The every-entry test's shared inputs stay whole for the whole evaluation (full counts each
  // until its last reader), and the reference's outputs are cached beside the candidate's:
  // every check reserves them again (one copy exists: an over-reservation).
  if (o.mode == Mode::kScreen && o.screen_every_entry)
    peak = full + std::max(input_entries(ref), input_entries(cand)) + 2 * outputs;
  if (o.mode == Mode::kScreen && !o.screen_every_entry && ref.outputs.size() == cand.outputs.size()) {
    Rng rng(o.seed);  // boxes of the size the screen samples (where they fall matters little)
    const std::vector<Box> s = sample_boxes(ref, o.screen_samples, rng);
    const std::vector<std::optional<Box>> want(s.begin(), s.end());
    bool same = true;
    for (size_t i = 0; i < ref.outputs.size(); ++i)
      same = same && ref.tensor(ref.outputs[i]).type.shape == cand.tensor(cand.outputs[i]).type.shape;
    if (same) peak = std::max(demanded_peak_entries(ref, want), demanded_peak_entries(cand, want));
  }
  // Per entry: the value, and the two plain arrays a matmul's right operand is copied into
  // (finite_field.cc's matmul_block).
  const int64_t field = peak * static_cast<int64_t>(sizeof(FF) + 16);
  // The float check (certify always; a screen only where the field cannot decide) runs both
  // programs in full and caches the reference's inputs.
  const LaxInfo lr = classify_lax(ref), lc = classify_lax(cand);
  // (A kPowerMapThenDefer screen without the every-entry test leaves a sqrt float check to it.)
  const bool deferred = o.mode == Mode::kScreen && !o.screen_every_entry &&
                        o.undecided == Undecided::kPowerMapThenDefer;
  const bool floats_run = o.mode == Mode::kCertify || !lr.lax || !lc.lax ||
                          ((lr.has_sqrt || lc.has_sqrt) && !deferred);
  const int64_t floats =
      floats_run ? std::max(input_entries(ref), input_entries(cand)) * 12 + full * 8 : 0;
  return std::max(field, floats);
}

int64_t interpret_memory_bytes(const ir::KernelGraph& g) {
  return (input_entries(g) + full_peak_entries(g)) * static_cast<int64_t>(sizeof(double));
}

Verdict check(const ir::KernelGraph& ref, const ir::KernelGraph& cand, const VerifyOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  Verdict v;
  v.mode = o.mode;
  Status s = check_same_inputs(ref, cand);
  if (s.ok()) s = check_output_shapes(ref, cand);
  if (s.ok()) s = check_field_params(o.field);
  if (!s.ok()) {
    v.summary = s.message();
    return v;
  }
  try {
    DeadlineScope scope(o.deadline);
    MemoryReservation hold;
    std::string why;
    if (!reserve_memory(check_memory_bytes(ref, cand, o), hold, &why)) {
      const LaxInfo lr = classify_lax(ref), lc = classify_lax(cand);
      v.lax = lr.lax && lc.lax;
      if (!v.lax) v.lax_note = !lr.lax ? "reference: " + lr.reason : "candidate: " + lc.reason;
      v.kind = VerdictKind::kInconclusive;
      v.cut = "memory budget";
      v.summary = "inconclusive: not checked: it " + why;
      return v;
    }
    check_pair(ref, cand, o, t0, v);
  } catch (const DeadlinePassed& e) {
    // Nothing proven, nothing refuted: a cut verification accepts nothing.
    v.kind = VerdictKind::kInconclusive;
    v.cut = e.what();
    v.summary = std::string("inconclusive: cut by the ") + (e.cancelled ? "interrupt (Ctrl-C)" : "time budget") +
                " after " + std::to_string(v.tests) + " passed test(s), " +
                fmt_g3(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()) + " s";
    v.float_checked = false;
  }
  v.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return v;
}

}  // namespace mugraph::verify
