// Differential fuzzing of the verifier (issue 19): random (reference, candidate) pairs made by
// mutating small programs and their hand-optimized forms (verify/mutate.h), judged by the
// float64 interpreter and by the verifier in screen and certify mode (driver/fuzz_verifier.h).
// Prints one row per mutation kind: trials, discarded (no site, invalid, undecided), equal and
// different pairs, false accepts (FA) and false rejects (FR) of each mode, and every finding.
// Exit 1 if any false accept other than the screen's sampling misses (screen acceptances that
// the same screen on every output entry refutes: the screen's documented trade-off, counted).
//
//   verify_fuzz [--trials N] [--first I] [--seed S] [--threads T] [--seeds DIR] [--findings DIR]
//               [--show-invalid K] [--dump-trial I]
//
// N defaults to 100000, S to 1, T to all cores; DIR to tests/data/fuzz/seeds. The trials are
// I .. I + N - 1 (I = 0): `--first I --trials 1` reruns trial I alone. --findings writes
// every finding as a pair of .mu files with a comment header (how to reproduce it).
// --show-invalid prints the edits and errors of the first K invalid mutants of each kind and
// exits (to see what the generator wastes); --dump-trial prints trial I's pair and exits.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "driver/fuzz_verifier.h"

using namespace mugraph;

namespace {

int print_invalid(const std::vector<verify::SeedPair>& seeds, const driver::FuzzOptions& o, int k) {
  const auto& kinds = verify::all_mutations();
  std::vector<int> shown(kinds.size(), 0);
  for (int64_t i = 0; i < o.trials; ++i) {
    const size_t kind = static_cast<size_t>(i) % kinds.size();
    if (shown[kind] >= k) continue;
    const verify::Trial t =
        verify::make_trial(seeds, kinds[kind], o.seed, static_cast<uint64_t>(i));
    if (t.status.ok()) continue;
    ++shown[kind];
    std::printf("trial %lld [%s] %s\n", (long long)i,
                std::string(verify::mutation_name(t.kind)).c_str(), t.seed_name.c_str());
    for (const std::string& e : t.edits) std::printf("    %s\n", e.c_str());
    std::printf("    invalid: %s\n", t.status.message().c_str());
  }
  return 0;
}

int print_trial(const std::vector<verify::SeedPair>& seeds, const driver::FuzzOptions& o,
                uint64_t i) {
  const auto& kinds = verify::all_mutations();
  const verify::Trial t = verify::make_trial(seeds, kinds[i % kinds.size()], o.seed, i);
  std::printf("# trial %llu [%s] %s: %s\n", (unsigned long long)i,
              std::string(verify::mutation_name(t.kind)).c_str(), t.seed_name.c_str(),
              t.status.ok() ? "valid" : t.status.message().c_str());
  for (const std::string& e : t.edits) std::printf("# %s\n", e.c_str());
  std::printf("# ---- reference\n%s# ---- candidate\n%s", t.ref_text.c_str(), t.cand_text.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  driver::FuzzOptions o;
  o.trials = 100000;
  std::string seeds_dir = MUGRAPH_FUZZ_SEEDS_DIR, findings_dir;
  int show_invalid = 0;
  int64_t dump = -1;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--trials") && has_value) {
      o.trials = std::atoll(argv[++i]);
    } else if (!std::strcmp(argv[i], "--first") && has_value) {
      o.first = std::atoll(argv[++i]);
    } else if (!std::strcmp(argv[i], "--seed") && has_value) {
      o.seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (!std::strcmp(argv[i], "--threads") && has_value) {
      o.threads = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--seeds") && has_value) {
      seeds_dir = argv[++i];
    } else if (!std::strcmp(argv[i], "--findings") && has_value) {
      findings_dir = argv[++i];
    } else if (!std::strcmp(argv[i], "--dump-trial") && has_value) {
      dump = std::atoll(argv[++i]);
    } else if (!std::strcmp(argv[i], "--show-invalid") && has_value) {
      show_invalid = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: verify_fuzz [--trials N] [--first I] [--seed S] [--threads T] "
                           "[--seeds DIR] [--findings DIR] [--show-invalid K] [--dump-trial I]\n");
      return 2;
    }
  }
  auto seeds = verify::load_seed_pairs(seeds_dir);
  if (!seeds.ok()) {
    std::fprintf(stderr, "%s\n", seeds.status().message().c_str());
    return 2;
  }
  if (show_invalid > 0) return print_invalid(*seeds, o, show_invalid);
  if (dump >= 0) return print_trial(*seeds, o, static_cast<uint64_t>(dump));
  o.progress = [&](int64_t done) {
    std::fprintf(stderr, "%lld / %lld trials\n", (long long)done, (long long)o.trials);
  };
  const driver::FuzzReport r = driver::fuzz_verifier(*seeds, o);
  std::printf("seed pairs: %zu from %s\n%s", seeds->size(), seeds_dir.c_str(),
              driver::format_fuzz_report(r).c_str());
  for (const driver::FuzzFinding& f : r.findings) {
    if (findings_dir.empty()) break;
    auto path = driver::write_finding(f, o.seed, findings_dir);
    std::printf("%s\n", path.ok() ? ("wrote " + *path + ".{ref,cand}.mu").c_str()
                                  : path.status().message().c_str());
  }
  return r.unexplained_false_accepts() > 0 ? 1 : 0;
}
