// Verifier benchmark (issue 3): screen and certify times for the paper-size RMSNorm+MatMul
// (16x4096 by 4096x4096) and GQA attention programs against their hand-optimized uGraphs, with
// the targets printed beside them (screen <= 50 ms, certify at delta 1e-9 <= 10 s for
// RMSNorm+MatMul). Each number is the median of `--reps` runs in this one process.
//   build/bench/verify_bench [--reps N] [--examples DIR]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "driver/driver.h"

using namespace mugraph;

namespace {

struct Case {
  const char* name;
  const char* ref;
  const char* cand;
  double screen_target_s;   // < 0: none given
  double certify_target_s;  // < 0: none given
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 5;
  std::string dir = MUGRAPH_EXAMPLES_DIR;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--reps")) reps = std::max(1, std::atoi(argv[i + 1]));
    if (!std::strcmp(argv[i], "--examples")) dir = argv[i + 1];
  }
  const Case cases[] = {
      {"RMSNorm+MatMul", "rms_norm_matmul", "rms_norm_matmul.fused", 0.050, 10.0},
      {"GQA attention", "gqa", "gqa.flash_attention", -1, -1},
      {"GatedMLP", "gated_mlp", "gated_mlp.fused", -1, -1},
  };
  std::printf("%-16s %-8s %10s %8s %10s  %s\n", "program", "mode", "median s", "target",
              "time/target", "verdict");
  for (const Case& c : cases) {
    auto ref = driver::load_graph_file(dir + "/" + c.ref + ".mu");
    auto cand = driver::load_graph_file(dir + "/" + c.cand + ".mu");
    if (!ref.ok() || !cand.ok()) {
      std::fprintf(stderr, "cannot load %s\n", c.name);
      return 1;
    }
    for (verify::Mode mode : {verify::Mode::kScreen, verify::Mode::kCertify}) {
      const bool screen = mode == verify::Mode::kScreen;
      std::vector<double> times;
      verify::Verdict last;
      for (int r = 0; r < (screen ? reps : std::max(1, reps / 2)); ++r) {
        verify::VerifyOptions o;
        o.mode = mode;
        o.seed = static_cast<uint64_t>(r);
        const auto t0 = std::chrono::steady_clock::now();
        last = verify::check(*ref, *cand, o);
        times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      const double target = screen ? c.screen_target_s : c.certify_target_s;
      const double m = median(times);
      char ratio[32] = "-";
      if (target > 0) std::snprintf(ratio, sizeof ratio, "%.2f", m / target);
      char target_s[32] = "-", delta[48];
      if (target > 0) std::snprintf(target_s, sizeof target_s, "%.3g", target);
      if (last.delta_achieved >= 0)
        std::snprintf(delta, sizeof delta, "delta %.2e", last.delta_achieved);
      else
        std::snprintf(delta, sizeof delta, "%s", screen ? "sampled entries" : "no bound");
      std::printf("%-16s %-8s %10.4f %8s %10s  %s, %d tests, %s\n", c.name, screen ? "screen" : "certify",
                  m, target_s, ratio, std::string(verify::verdict_name(last.kind)).c_str(), last.tests,
                  delta);
    }
  }
  return 0;
}
