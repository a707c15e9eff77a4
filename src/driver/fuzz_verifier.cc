#include "driver/fuzz_verifier.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <tuple>

#include "driver/driver.h"
#include "support/format.h"
#include "verify/interpret.h"
#include "verify/random_inputs.h"

namespace mugraph::driver {
namespace {

// Every matching of cand outputs to ref outputs of equal shapes, the identity first.
std::vector<std::vector<int>> matchings(const ir::KernelGraph& ref, const ir::KernelGraph& cand) {
  auto shape = [](const ir::KernelGraph& g, size_t i) { return g.tensor(g.outputs[i]).type.shape; };
  std::vector<int> m(cand.outputs.size());
  for (size_t i = 0; i < m.size(); ++i) m[i] = static_cast<int>(i);
  std::vector<std::vector<int>> out;
  do {
    bool fits = m.size() == ref.outputs.size();
    for (size_t i = 0; i < m.size() && fits; ++i)
      fits = shape(cand, static_cast<size_t>(m[i])) == shape(ref, i);
    if (fits) out.push_back(m);
  } while (std::next_permutation(m.begin(), m.end()));
  return out;
}

// The truth of one matching, its relative errors appended to `note`.
Truth judge_matching(const ir::KernelGraph& ref, const ir::KernelGraph& cand,
                     const std::vector<int>& m, std::string& note) {
  ir::KernelGraph c = cand;
  for (size_t i = 0; i < m.size(); ++i) c.outputs[i] = cand.outputs[static_cast<size_t>(m[i])];
  bool undecided = false, different = false;
  for (uint64_t seed : kTruthSeeds) {
    auto diffs = compare_graphs(ref, c, seed, Precision::kDouble);
    if (!diffs.ok()) return Truth::kUndecided;
    note += " seed " + std::to_string(seed) + ":";
    for (const OutputDiff& d : *diffs) {
      note += " " + d.name + " " + fmt_g3(d.max_rel);
      if (!std::isfinite(d.max_rel))
        undecided = true;
      else if (d.max_rel >= kTruthDifferent)
        different = true;
      else if (d.max_rel > kTruthEqual)
        undecided = true;
    }
  }
  // A non-finite output anywhere leaves the matching undecided, even beside a clear difference.
  return undecided ? Truth::kUndecided : different ? Truth::kDifferent : Truth::kEqual;
}

// Whether g's float64 outputs are too ill-conditioned to judge by: moving every input by a
// relative 2^-30 (~1e-9, random signs) moves some output by kTruthDifferent or more (normwise),
// or makes it non-finite. A correct value then needs a condition number above 1e5 (cancellation
// of huge intermediates, as in (e/c - e) + e with c = 2^62), and float64's rounding of such a
// program (1e-16 x 1e5 and beyond) can pass for a real difference, or hide one.
bool ill_conditioned(const ir::KernelGraph& g) {
  Rng rng(kTruthSeeds[0]);
  auto in = verify::random_inputs(g, rng);
  const auto a = verify::interpret<double>(g, in);
  for (auto& t : in)
    for (double& x : t.data) x *= 1 + (rng.below(2) ? 0x1p-30 : -0x1p-30);
  const auto b = verify::interpret<double>(g, in);
  if (!a.ok() || !b.ok()) return true;
  for (size_t o = 0; o < a->size(); ++o) {
    const OutputDiff d = diff_values("", (*a)[o].data, (*b)[o].data);
    if (!(d.max_rel < kTruthDifferent)) return true;
  }
  return false;
}

// Whether g scales by a constant beyond 2^+-40 (0 aside). Next to such a constant, float64 sees
// too little: a term scaled by 2^-40 moves a sum by ~1e-12, below kTruthEqual, and one scaled by
// 2^40 swallows the other terms' low bits (e / 2^62 - e + e is 0, not e / 2^62), so float64 can
// call equal programs different and different ones equal. 2^40 keeps the constants that matter
// to the field (2^33 = 4 mod 2^31 - 1, p / 2^40) decidable.
bool has_extreme_constant(const ir::KernelGraph& g) {
  auto extreme = [](ir::OpKind op, const ir::OpAttrs& a) {
    if (op != ir::OpKind::kScale || a.factor.num == 0) return false;
    const double v = std::fabs(a.factor.to_double());
    return v > 0x1p40 || v < 0x1p-40;
  };
  for (const ir::KernelOp& op : g.ops) {
    if (!op.graph_defined) {
      if (extreme(op.op, op.attrs)) return true;
      continue;
    }
    for (const ir::BlockNode& n : op.block->nodes) {
      if (n.kind == ir::BlockNodeKind::kCompute && extreme(n.op, n.attrs)) return true;
      if (n.kind != ir::BlockNodeKind::kThreadGraph) continue;
      for (const ir::ThreadGraph::Node& tn : n.thread->nodes)
        if (extreme(tn.op, tn.attrs)) return true;
    }
  }
  return false;
}

std::string matching_text(const std::vector<int>& m) {
  std::string s = "[";
  for (size_t i = 0; i < m.size(); ++i) s += (i ? " " : "") + std::to_string(m[i]);
  return s + "]";
}

struct Outcome {
  bool no_site = false, invalid = false;
  int invalid_mutants = 0;
  Truth truth = Truth::kUndecided;
  std::array<verify::VerdictKind, 2> verdicts{};
  std::array<bool, 2> false_accept{}, false_reject{};
  bool sampling_miss = false;
  double seconds = 0;
  std::string seed_name;
  std::vector<FuzzFinding> findings;
};

bool accepts(verify::Mode mode, verify::VerdictKind k) {
  return mode == verify::Mode::kScreen ? k == verify::VerdictKind::kPassed : verify::accepted(k);
}
bool rejects(verify::VerdictKind k) {
  return k == verify::VerdictKind::kNotEquivalent || k == verify::VerdictKind::kUnstable;
}
bool contains(const std::vector<std::vector<int>>& v, const std::vector<int>& m) {
  return std::find(v.begin(), v.end(), m) != v.end();
}

// The verifier's seed for a trial and mode: a function of the run seed and the trial only.
uint64_t verify_seed(uint64_t seed, uint64_t index, int mode) {
  return Rng(seed ^ 0x5bd1e995ULL).next_u64() + 2 * index + static_cast<uint64_t>(mode);
}

// Runs the verifier in `mode` (0 screen, 1 certify) on a decided pair; records the verdict, and
// a finding for a false accept or reject, in `out`.
void run_mode(const verify::Trial& t, const GroundTruth& gt, const FuzzOptions& o, int mode,
              Outcome& out) {
  verify::VerifyOptions vo = o.verify;
  vo.mode = mode == 0 ? verify::Mode::kScreen : verify::Mode::kCertify;
  vo.seed = verify_seed(o.seed, t.index, mode);
  vo.threads = 1;
  vo.screen_every_entry = true;  // the search's screen (what it writes)
  vo.every_entry_seed = vo.seed;
  const auto v = verify_graphs(t.ref, t.cand, vo);
  const verify::VerdictKind k = v.ok() ? v->kind : verify::VerdictKind::kError;
  const size_t m = static_cast<size_t>(mode);
  out.verdicts[m] = k;
  const bool bad_matching =
      v.ok() && !v->permutation.empty() && contains(gt.different_matchings, v->permutation);
  out.false_accept[m] = accepts(vo.mode, k) && (gt.truth == Truth::kDifferent || bad_matching);
  out.false_reject[m] = rejects(k) && gt.truth == Truth::kEqual;
  if (!out.false_accept[m] && !out.false_reject[m]) return;
  FuzzFinding f{t, vo.mode, vo.seed, out.false_accept[m], false, "", gt.note};
  f.trial.ref = f.trial.cand = ir::KernelGraph{};  // the texts say it all
  f.verdict = std::string(verify::verdict_name(k)) + ": " +
              (v.ok() ? v->summary : v.status().message()) +
              (bad_matching ? " (outputs matched as " + matching_text(v->permutation) + ")" : "");
  out.findings.push_back(std::move(f));
}

// Samples per output that make the screen compare every entry (each index of a dim of n <= 64
// is missed with probability (1 - 1/n)^4096 < 1e-27), and the largest dim that holds for.
constexpr int kEverySample = 4096;
constexpr int64_t kEverySampleDim = 64;

// Whether a screen acceptance was a sampling miss: the same screen with every entry sampled does
// not pass (the sampled entries missed every differing one: the screen's documented trade-off,
// verify/verifier.h). Undecidable (false) for outputs with a dim beyond kEverySampleDim.
bool is_sampling_miss(const verify::Trial& t, const FuzzOptions& o) {
  for (ir::TensorId id : t.ref.outputs) {
    const ir::Shape& s = t.ref.tensor(id).type.shape;
    for (int d = 0; d < s.rank; ++d)
      if (s[d] > kEverySampleDim) return false;
  }
  verify::VerifyOptions vo = o.verify;
  vo.mode = verify::Mode::kScreen;
  vo.seed = verify_seed(o.seed, t.index, 0);
  vo.threads = 1;
  vo.screen_samples = kEverySample;
  const auto v = verify_graphs(t.ref, t.cand, vo);
  return v.ok() && v->kind != verify::VerdictKind::kPassed;
}

Outcome run_trial(const std::vector<verify::SeedPair>& seeds, const FuzzOptions& o,
                  uint64_t index) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto& kinds = verify::all_mutations();
  const verify::Trial t = verify::make_trial(seeds, kinds[index % kinds.size()], o.seed, index);
  Outcome out;
  out.seed_name = t.seed_name;
  out.no_site = t.no_site;
  out.invalid_mutants = t.invalid_mutants;
  out.invalid = !t.no_site && !t.status.ok();
  if (!t.status.ok()) return out;
  const GroundTruth gt = ground_truth(t.ref, t.cand);
  out.truth = gt.truth;
  if (gt.truth != Truth::kUndecided)
    for (int mode = 0; mode < 2; ++mode) run_mode(t, gt, o, mode, out);
  out.sampling_miss = out.false_accept[0] && is_sampling_miss(t, o);
  for (FuzzFinding& f : out.findings)
    f.sampling_miss = out.sampling_miss && f.accept && f.mode == verify::Mode::kScreen;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

void count(const Outcome& x, FuzzRow& r) {
  ++r.trials;
  r.seconds += x.seconds;
  r.invalid_mutants += x.invalid_mutants;
  if (x.no_site) ++r.no_site;
  if (x.invalid) ++r.invalid;
  if (x.no_site || x.invalid) return;
  if (x.truth == Truth::kUndecided) {
    ++r.undecided;
    return;
  }
  const size_t truth = x.truth == Truth::kEqual ? 0 : 1;
  ++(truth == 0 ? r.equal : r.different);
  for (size_t mode = 0; mode < 2; ++mode)
    ++r.verdicts[mode][truth][static_cast<size_t>(x.verdicts[mode])];
  r.screen_false_accepts += x.false_accept[0];
  r.screen_sampling_misses += x.sampling_miss;
  r.certify_false_accepts += x.false_accept[1];
  r.screen_false_rejects += x.false_reject[0];
  r.certify_false_rejects += x.false_reject[1];
}

// False rejects and sampling misses printed per kind and mode in the report (every other false
// accept is printed).
constexpr int kBriefShown = 3;

std::vector<Outcome> run_all(const std::vector<verify::SeedPair>& seeds, const FuzzOptions& o) {
  std::vector<Outcome> outs(static_cast<size_t>(std::max<int64_t>(o.trials, 0)));
  std::atomic<int64_t> next{0}, done{0};
  std::mutex progress;
  auto work = [&] {
    for (int64_t i = next++; i < o.trials; i = next++) {
      outs[static_cast<size_t>(i)] = run_trial(seeds, o, static_cast<uint64_t>(o.first + i));
      const int64_t d = ++done;
      if (o.progress && (d % 1000 == 0 || d == o.trials)) {
        std::lock_guard<std::mutex> lock(progress);
        o.progress(d);
      }
    }
  };
  const int n = o.threads > 0 ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (int k = 1; k < n; ++k) pool.emplace_back(work);
  work();
  for (std::thread& th : pool) th.join();
  return outs;
}

// `text` as "# " comment lines of at most 100 columns, wrapped at spaces (continuations
// indented).
std::string comment_block(const std::string& text) {
  constexpr size_t kWidth = 100;
  std::string out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::string prefix = "# ";
    while (prefix.size() + line.size() > kWidth) {
      size_t cut = line.rfind(' ', kWidth - prefix.size());
      if (cut == std::string::npos || cut == 0) cut = line.find(' ');
      if (cut == std::string::npos) break;
      out += prefix + line.substr(0, cut) + "\n";
      line = line.substr(cut + 1);
      prefix = "#   ";
    }
    out += prefix + line + "\n";
  }
  return out;
}

}  // namespace

void FuzzRow::add(const FuzzRow& o) {
  trials += o.trials, no_site += o.no_site, invalid += o.invalid, undecided += o.undecided;
  invalid_mutants += o.invalid_mutants;
  equal += o.equal, different += o.different;
  screen_false_accepts += o.screen_false_accepts;
  screen_sampling_misses += o.screen_sampling_misses;
  screen_false_rejects += o.screen_false_rejects;
  certify_false_accepts += o.certify_false_accepts;
  certify_false_rejects += o.certify_false_rejects;
  for (size_t m = 0; m < 2; ++m)
    for (size_t t = 0; t < 2; ++t)
      for (size_t k = 0; k < kVerdictKinds; ++k) verdicts[m][t][k] += o.verdicts[m][t][k];
  seconds += o.seconds;
}

GroundTruth ground_truth(const ir::KernelGraph& ref, const ir::KernelGraph& cand) {
  GroundTruth gt;
  const auto ms = matchings(ref, cand);
  for (const std::vector<int>& m : ms) {
    gt.note += (gt.note.empty() ? "outputs " : "; outputs ") + matching_text(m) + ":";
    const Truth t = judge_matching(ref, cand, m, gt.note);
    if (t == Truth::kEqual) gt.equal_matchings.push_back(m);
    if (t == Truth::kDifferent) gt.different_matchings.push_back(m);
  }
  gt.truth = !gt.equal_matchings.empty()                                 ? Truth::kEqual
             : !ms.empty() && gt.different_matchings.size() == ms.size() ? Truth::kDifferent
                                                                         : Truth::kUndecided;
  if (gt.truth == Truth::kUndecided) return gt;
  if (has_extreme_constant(ref) || has_extreme_constant(cand)) {
    gt.truth = Truth::kUndecided;
    gt.note += "; a scale constant beyond 2^+-40: float64 cannot judge";
  } else if (ill_conditioned(ref) || ill_conditioned(cand)) {
    gt.truth = Truth::kUndecided;
    gt.note += "; ill-conditioned in float64 (inputs moved by 2^-30 move an output by >= " +
               fmt_g3(kTruthDifferent) + ")";
  }
  return gt;
}

FuzzReport fuzz_verifier(const std::vector<verify::SeedPair>& seeds, const FuzzOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  FuzzReport r;
  r.options = o;
  const auto& kinds = verify::all_mutations();
  r.rows.resize(kinds.size());
  std::vector<Outcome> outs = run_all(seeds, o);
  for (size_t i = 0; i < outs.size(); ++i) {
    const size_t kind = static_cast<size_t>(o.first + static_cast<int64_t>(i)) % kinds.size();
    count(outs[i], r.rows[kind]);
    for (FuzzFinding& f : outs[i].findings) r.findings.push_back(std::move(f));
    auto& [n, sec] = r.seed_cost[outs[i].seed_name];
    ++n, sec += outs[i].seconds;
  }
  for (size_t i = 0; i < outs.size(); ++i)
    if (outs[i].seconds > r.slowest_seconds)
      r.slowest_seconds = outs[i].seconds, r.slowest_trial = o.first + static_cast<int64_t>(i);
  for (const FuzzRow& row : r.rows) r.total.add(row);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

namespace {

// One row of the report table (format_fuzz_report's header names the columns).
std::string table_row(const std::string& name, const FuzzRow& x) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%-14s %7lld %7lld %7lld %9lld %7lld %9lld %6lld %7lld %6lld %6lld %6lld %8.2f "
                "%9lld\n",
                name.c_str(), (long long)x.trials, (long long)x.no_site, (long long)x.invalid,
                (long long)x.undecided, (long long)x.equal,
                (long long)x.different, (long long)x.screen_false_accepts,
                (long long)x.screen_sampling_misses, (long long)x.screen_false_rejects,
                (long long)x.certify_false_accepts, (long long)x.certify_false_rejects,
                x.trials ? 1e3 * x.seconds / double(x.trials) : 0.0, (long long)x.invalid_mutants);
  return buf;
}

// The verdict counts by mode and ground truth, and the seed pairs that cost the most time.
std::string verdicts_and_costs(const FuzzReport& r) {
  std::ostringstream o;
  std::vector<std::pair<double, std::string>> costly;
  for (const auto& [name, c] : r.seed_cost) costly.push_back({c.second, name});
  std::sort(costly.rbegin(), costly.rend());
  o << "costliest seed pairs (trials, s):";
  for (size_t k = 0; k < std::min<size_t>(costly.size(), 5); ++k)
    o << (k ? "; " : " ") << costly[k].second << " (" << r.seed_cost.at(costly[k].second).first
      << ", " << fmt_g3(costly[k].first) << ")";
  o << "\nverdicts on decided pairs:\n                  ";
  for (int k = 0; k < kVerdictKinds; ++k)
    o << " " << verify::verdict_name(static_cast<verify::VerdictKind>(k));
  o << "\n";
  for (size_t m = 0; m < 2; ++m)
    for (size_t t = 0; t < 2; ++t) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%-8s %-9s", m == 0 ? "screen" : "certify",
                    t == 0 ? "equal" : "different");
      o << buf;
      for (size_t k = 0; k < kVerdictKinds; ++k) o << " " << r.total.verdicts[m][t][k];
      o << "\n";
    }
  return o.str();
}

}  // namespace

std::string format_fuzz_report(const FuzzReport& r) {
  std::ostringstream o;
  char buf[256];
  o << "verifier fuzz: seed " << r.options.seed << ", " << r.options.trials << " trials, "
    << fmt_g3(r.seconds) << " s (slowest trial " << r.slowest_trial << ": "
    << fmt_g3(r.slowest_seconds) << " s)\n";
  o << "FA: false accepts (scrFA: of which scrMiss sampling misses), FR: false rejects\n";
  std::snprintf(buf, sizeof buf, "%-14s %7s %7s %7s %9s %7s %9s %6s %7s %6s %6s %6s %8s %9s\n",
                "kind", "trials", "no-site", "invalid", "undecided", "equal", "different",
                "scrFA", "scrMiss", "scrFR", "cerFA", "cerFR", "ms/trial", "inval.mut");
  o << buf;
  const auto& kinds = verify::all_mutations();
  for (size_t k = 0; k < kinds.size(); ++k)
    o << table_row(std::string(verify::mutation_name(kinds[k])), r.rows[k]);
  o << table_row("total", r.total) << verdicts_and_costs(r);
  std::map<std::tuple<verify::MutationKind, verify::Mode, bool>, int> shown;
  for (const FuzzFinding& f : r.findings) {
    const bool brief = !f.accept || f.sampling_miss;
    if (brief && shown[{f.trial.kind, f.mode, f.accept}]++ >= kBriefShown) continue;
    o << (f.accept ? "FALSE ACCEPT" : "false reject") << " ("
      << (f.mode == verify::Mode::kScreen ? "screen" : "certify")
      << (f.sampling_miss ? ", sampling miss" : "") << ") trial " << f.trial.index << " ["
      << verify::mutation_name(f.trial.kind) << "] " << f.trial.seed_name << "\n";
    for (const std::string& e : f.trial.edits) o << "    " << e << "\n";
    o << "    verdict: " << f.verdict << "\n    truth: " << f.truth << "\n";
  }
  return o.str();
}

Result<std::string> write_finding(const FuzzFinding& f, uint64_t seed, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return error(dir, ": ", ec.message());
  const std::string mode = f.mode == verify::Mode::kScreen ? "screen" : "certify";
  const std::string what = f.sampling_miss ? "sampling_miss-"
                           : f.accept      ? "false_accept-"
                                           : "false_reject-";
  const std::string name = what + mode + "-" + std::string(verify::mutation_name(f.trial.kind)) +
                           "-s" + std::to_string(seed) + "-t" + std::to_string(f.trial.index);
  std::ostringstream head;
  head << "verifier fuzz: " << (f.accept ? "FALSE ACCEPT" : "false reject")
       << (f.sampling_miss ? " (sampling miss)" : "") << " in " << mode
       << " mode (bench/verify_fuzz --seed " << seed << " --first " << f.trial.index
       << " --trials 1: " << verify::mutation_name(f.trial.kind)
       << ")\nseed pair: " << f.trial.seed_name << "\n";
  for (const std::string& e : f.trial.edits) head << "edit: " << e << "\n";
  head << "verdict: " << f.verdict << "\nfloat64 truth (compare_graphs): " << f.truth
       << "\nreproduce (in this folder): mugraph verify"
       << (f.mode == verify::Mode::kScreen ? " --screen" : "") << " --seed " << f.verify_seed << " "
       << name << ".ref.mu " << name << ".cand.mu\n";
  const std::string comment = comment_block(head.str());
  for (const auto& [suffix, text] :
       {std::pair<std::string, std::string>{".ref.mu", f.trial.ref_text},
        {".cand.mu", f.trial.cand_text}}) {
    std::ofstream out(dir + "/" + name + suffix);
    out << comment << text;
    if (!out) return error(dir, "/", name, suffix, ": cannot write");
  }
  return dir + "/" + name;
}

}  // namespace mugraph::driver
