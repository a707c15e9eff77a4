// Pruning-oracle benchmark (issue 4): queries per second on the prefixes met while walking the
// prefixes of each paper program (expr/prefix_walk.h), all in one run:
//   saturate   one-off e-graph saturation of the program's expression;
//   cold       every distinct prefix asked once of a fresh oracle (cache misses): e-graph mode
//              and Z3 mode on the same queries (Z3 on the first --z3-queries of them);
//   warm       the walk's full query sequence again, every answer from the cache.
//   build/bench/oracle_bench [--z3-queries N] [--examples DIR]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "driver/driver.h"
#include "expr/abstract.h"
#include "expr/oracle.h"
#include "expr/prefix_walk.h"

using namespace mugraph;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Seconds to ask `oracle` about each of `queries`; counts the kept ones.
double ask_all(expr::Oracle& oracle, const std::vector<expr::Expr>& queries, size_t& kept) {
  kept = 0;
  const double t0 = now_s();
  for (expr::Expr e : queries) kept += oracle.may_lead_to(e);
  return now_s() - t0;
}

}  // namespace

int main(int argc, char** argv) {
  size_t z3_queries = 1000;
  std::string dir = MUGRAPH_EXAMPLES_DIR;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--z3-queries")) z3_queries = std::max(1, std::atoi(argv[i + 1]));
    if (!std::strcmp(argv[i], "--examples")) dir = argv[i + 1];
  }
  const char* programs[] = {"rms_norm_matmul", "gated_mlp", "gqa", "lora", "qknorm_attention"};
  std::printf("%-17s %8s %7s %9s %12s %12s %12s %9s\n", "program", "queries", "e-nodes",
              "saturate", "e-graph q/s", "Z3 q/s", "warm q/s", "e-graph/Z3");
  for (const char* name : programs) {
    auto g = driver::load_graph_file(dir + "/" + name + ".mu");
    if (!g.ok()) {
      std::fprintf(stderr, "%s\n", g.status().message().c_str());
      return 1;
    }
    expr::ExprPool pool;
    const auto outputs = expr::abstract_expressions(*g, pool).outputs;
    // Collect the queries with a throwaway oracle, so that every timed oracle starts cold.
    expr::Oracle walker(pool, outputs);
    const expr::WalkResult walk = expr::walk_prefixes(*g, pool, walker);

    const double t0 = now_s();
    expr::Oracle fast(pool, outputs);
    const double saturate = now_s() - t0;
    size_t kept_fast = 0, kept_z3 = 0, kept_warm = 0;
    const double cold = ask_all(fast, walk.queries, kept_fast);
    // Warm: the walk's question sequence, as often as it asked (repeats included), cached.
    std::vector<expr::Expr> sequence;
    while (sequence.size() < walk.asked) sequence.insert(sequence.end(), walk.queries.begin(), walk.queries.end());
    const double warm = ask_all(fast, sequence, kept_warm);

    expr::OracleOptions z3_only;
    z3_only.mode = expr::OracleMode::kZ3;
    expr::Oracle z3(pool, outputs, z3_only);
    const std::vector<expr::Expr> sample(
        walk.queries.begin(), walk.queries.begin() + static_cast<long>(std::min(z3_queries, walk.queries.size())));
    const double z3_time = ask_all(z3, sample, kept_z3);

    const double fast_qps = static_cast<double>(walk.queries.size()) / cold;
    const double z3_qps = static_cast<double>(sample.size()) / z3_time;
    std::printf("%-17s %8zu %7zu %8.3fs %12.0f %12.1f %12.0f %8.0fx\n", name, walk.queries.size(),
                fast.stats().saturation.nodes, saturate, fast_qps, z3_qps,
                static_cast<double>(sequence.size()) / warm, fast_qps / z3_qps);
    const auto z3s = z3.stats();
    std::printf("    kept %zu of %zu (e-graph); Z3 kept %zu of %zu sampled, %zu timeouts\n", kept_fast,
                walk.queries.size(), kept_z3, sample.size(), z3s.z3_timeouts);
  }
  std::printf("cold: every distinct prefix once (cache misses); warm: the walk's whole query "
              "sequence from the cache.\nSaturation is paid once per program; amortized over "
              "the cold queries it is included in neither q/s column.\n");
  return 0;
}
