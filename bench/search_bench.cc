// The search benchmark (issue 5), in two tables, every cell measured in this one run.
//
// Table 5 layout (Mirage Table 5): RMSNorm+MatMul at the paper's shapes, one graph-defined
// kernel, max block ops 5..11, with and without abstract-expression pruning, 1 and 2 threads.
// Each cell stops at the time budget (the paper's unpruned runs take > 10 h); a cell that
// stopped says so, with the share of tasks done. "prefixes" counts all work, including the
// tasks the budget interrupted.
//
// Paper benchmarks: each program of examples/ at its paper shapes, with the options a user
// would pass for a single fused kernel (and 2 kernels for LoRA's concat-matmul form): search
// time, time to the first verified candidate, candidates, and the best uGraph's shape.
//
// Planned (issue 24 item 3): each program with NO search options (search/plan.h), within
// `mugraph search`'s default budget (60 s: 36 s of search, the rest certify): whether the
// expert's form is among the candidates, when the first candidate came, the stages, the best
// uGraph and certify's verdict. GQA counts twice: FlashAttention (one kernel with a loop) and
// FlashDecoding (split-KV: two graph-defined kernels).
//
// Ranks (issue 24 item 2): under `mpirun -np N`, RMSNorm+MatMul at reduced shapes (the
// discovery test's program), one graph-defined kernel of up to 9 block ops: the search on rank
// 0 alone with one thread, on one process with N threads, and on the N ranks with one thread
// each, in this one run; the same candidates each time (checked), the speedups, and the
// distribution of task times that bounds scaling (no run can take less than its longest task).
//
//   build/bench/search_bench [--budget S] [--bench-budget S] [--only table5|programs|planned]
//                            [--space mirage|ours]   (Table 5's search space; default mirage)
//                            [--ops N]   (Table 5: only the cells of N block ops)
//   mpirun --bind-to none -np 2 build/bench/search_bench --only ranks   (unbound: by default
//   Open MPI binds each of 2 ranks to one core, and rank 0's N threads would share it)
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "driver/driver.h"
#include "search/plan.h"
#include "search/distributed.h"
#include "search/search.h"
#include "support/transport.h"

using namespace mugraph;

namespace {

std::string example(const char* name) { return std::string(MUGRAPH_EXAMPLES_DIR) + "/" + name + ".mu"; }

// "time s": the search proper (oracle, tasks: enumerate and screen on sampled entries, merge);
// "+ all s": the test of the distinct candidates on every output entry after it, best first
// (search/screen_task.h); "found": candidates that passed both ("/ N" when the budget ended
// the second before it reached all N that passed the first).
void row(const char* label, const search::SearchResult& r) {
  const auto& s = r.stats;
  char found[24];
  std::snprintf(found, sizeof found, s.unconfirmed ? "%zu/%llu" : "%zu", r.candidates.size(),
                static_cast<unsigned long long>(s.confirmed + s.unconfirmed));
  std::printf("| %-34s | %8.1f | %7.1f | %10llu | %5d/%-5d | %7s | %8.1f | %-10s |\n", label,
              s.space_seconds, s.total_seconds - s.space_seconds,
              static_cast<unsigned long long>(s.states_all), s.tasks_done, s.tasks_total, found,
              s.first_candidate_seconds, std::string(search::stop_reason_name(r.stop_reason)).c_str());
  std::fflush(stdout);
}

void header() {
  std::printf("| %-34s | %8s | %7s | %10s | %11s | %7s | %8s | %-10s |\n", "run", "time s", "+ all s",
              "prefixes", "tasks", "found", "first s", "stop");
  std::printf("|%s|----------|---------|------------|-------------|---------|----------|------------|\n",
              std::string(36, '-').c_str());
}

// --only ranks (rank 0; the others serve its tasks).
int ranks_bench(Transport* mpi, search::Ranks* ranks_ptr) {
  if (!mpi) return std::fprintf(stderr, "--only ranks: run it under mpirun -np N (N >= 2)\n"), 1;
  search::Ranks& ranks = *ranks_ptr;
  const std::string path = std::string(MUGRAPH_EXAMPLES_DIR) + "/../tests/data/search/rms_norm_matmul.mu";
  auto g = driver::load_graph_file(path);
  if (!g.ok()) return std::fprintf(stderr, "%s\n", g.status().message().c_str()), 1;
  search::SearchOptions o;
  o.max_kernel_ops = 1;
  o.max_block_ops = 9;
  o.grid_sizes = {1, 2, 4, 8};
  o.min_blocks = 1;
  o.forloop_ranges = {1, 4};
  const int n = mpi->size();
  std::printf("## Ranks: RMSNorm+MatMul X[4,64] W[64,32], 1 kernel, 9 block ops, grids 1-8, "
              "loops 1 4; %d ranks\n\n", n);
  std::printf("| %-34s | %8s | %8s | %11s | %5s |\n", "run", "time s", "speedup", "tasks", "found");
  std::printf("|%s|----------|----------|-------------|-------|\n", std::string(36, '-').c_str());
  double base = 0;
  std::vector<uint64_t> first;
  std::vector<double> task_seconds;
  for (int run = 0; run < 3; ++run) {
    search::SearchOptions ro = o;
    ro.threads = run == 1 ? n : 1;
    ro.ranks = run == 2 ? &ranks : nullptr;
    auto r = search::search_lax(*g, ro);
    if (!r.ok()) return std::fprintf(stderr, "%s\n", r.status().message().c_str()), 1;
    std::vector<uint64_t> hashes;
    for (const auto& c : r->candidates) hashes.push_back(c.hash);
    if (run == 0) base = r->stats.total_seconds, first = hashes, task_seconds = r->task_seconds;
    char label[80];
    std::snprintf(label, sizeof label, "%s", run == 0   ? "rank 0 alone, 1 thread"
                                             : run == 1 ? "one process, N threads"
                                                        : "N ranks, 1 thread each");
    std::printf("| %-34s | %8.2f | %7.2fx | %5d/%-5d | %5zu |%s\n", label, r->stats.total_seconds,
                base / r->stats.total_seconds, r->stats.tasks_done, r->stats.tasks_total,
                r->candidates.size(), hashes == first ? "" : " CANDIDATES DIFFER");
    std::fflush(stdout);
    if (hashes != first) return 1;
  }
  std::sort(task_seconds.begin(), task_seconds.end());
  double sum = 0;
  for (double t : task_seconds) sum += t;
  auto pct = [&](double p) {
    return task_seconds[std::min(task_seconds.size() - 1,
                                 static_cast<size_t>(p * static_cast<double>(task_seconds.size())))];
  };
  std::printf("\nTask times (rank 0 alone): %zu tasks, %.2f s in all; median %.4f s, p90 %.4f s, "
              "p99 %.4f s, longest %.3f s (%.1f%% of the whole: at most %.0fx from any number of "
              "ranks)\n", task_seconds.size(), sum, pct(0.5), pct(0.9), pct(0.99),
              task_seconds.back(), 100 * task_seconds.back() / sum, sum / task_seconds.back());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  auto joined = join_mpi(&argc, &argv);
  if (!joined.ok()) return std::fprintf(stderr, "%s\n", joined.status().message().c_str()), 1;
  const std::unique_ptr<Transport> mpi = std::move(joined).value();
  if (mpi && mpi->rank() != 0)
    return search::serve_tasks(*mpi, 1, nullptr, search::kDefaultRankTimeoutSeconds);
  std::unique_ptr<search::Ranks> ranks;  // rank 0's view of the others; QUIT when destroyed
  if (mpi)
    ranks = std::make_unique<search::Ranks>(
        *mpi, search::kDefaultRankTimeoutSeconds,
        [](const std::string& l) { std::fprintf(stderr, "%s\n", l.c_str()); });
  double budget = 60, bench_budget = 120;
  std::string only;
  bool our_space = false;  // Table 5: Mirage's space unless --space ours
  int only_ops = 0;        // Table 5: only the cells of this many block ops (--ops N)
  const char* const usage =
      "usage: search_bench [--only table5|programs|planned|ranks] [--budget S] "
      "[--bench-budget S] [--ops N] [--space mirage|ours]\n";
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") return std::fputs(usage, stdout), 0;
    const bool known = flag == "--space" || flag == "--budget" || flag == "--bench-budget" ||
                       flag == "--only" || flag == "--ops";
    if (!known || i + 1 >= argc)
      return std::fprintf(stderr, "search_bench: %s '%s'\n%s",
                          known ? "no value after" : "unknown option", argv[i], usage), 2;
    const char* const v = argv[i + 1];
    if (flag == "--space") our_space = !std::strcmp(v, "ours");
    if (flag == "--budget") budget = std::atof(v);
    if (flag == "--bench-budget") bench_budget = std::atof(v);
    if (flag == "--only") only = v;
    if (flag == "--ops") only_ops = std::atoi(v);
  }
  if (!only.empty() && only != "table5" && only != "programs" && only != "planned" && only != "ranks")
    return std::fprintf(stderr, "search_bench: unknown --only '%s'\n%s", only.c_str(), usage), 2;
  if (only == "ranks") return ranks_bench(mpi.get(), ranks.get());
  if (only.empty() || only == "table5") {
    auto g = driver::load_graph_file(example("rms_norm_matmul"));
    if (!g.ok()) return std::fprintf(stderr, "%s\n", g.status().message().c_str()), 1;
    std::printf("## Table 5 layout: RMSNorm+MatMul X[16,4096] G[4096] W[4096,4096], 1 kernel, "
                "budget %.0f s per cell, %s\n\n", budget,
                our_space ? "our default space (grids of up to 2 dims, loops 1 4 16 64)"
                          : "Mirage's space (1-D grids of 32..4096 blocks, loops 4 16 64)");
    header();
    for (int ops : {5, 7, 9, 11})
      for (bool prune : {true, false})
        for (int threads : {1, 2}) {
          if (only_ops > 0 && ops != only_ops) continue;
          search::SearchOptions o;
          o.max_kernel_ops = 1;
          o.max_block_ops = ops;
          o.prune = prune;
          o.threads = threads;
          o.time_budget_s = budget;
          if (!our_space) {
            o.max_grid_dims = 1;
            o.forloop_ranges = {4, 16, 64};
          }
          auto r = search::search_lax(*g, o);
          if (!r.ok()) return std::fprintf(stderr, "%s\n", r.status().message().c_str()), 1;
          char label[64];
          std::snprintf(label, sizeof label, "block ops %2d, %s, %d thread%s", ops,
                        prune ? "pruned  " : "unpruned", threads, threads > 1 ? "s" : "");
          row(label, *r);
        }
    std::printf("\n");
  }
  if (only.empty() || only == "programs") {
    struct Bench {
      const char* name;
      int kernel_ops, block_ops, graph_defined;
      int64_t min_blocks = 32;  // nTrans: 8 rows, 8 blocks of whole rows, no loop
      bool loop = true;         // (bench/search_options.sh says the same for the CLI)
    };
    std::printf("## Paper benchmarks at paper shapes, 2 threads, budget %.0f s each\n\n",
                bench_budget);
    header();
    for (Bench b : {Bench{"rms_norm_matmul", 1, 9, 1}, Bench{"gated_mlp", 1, 6, 1},
                    Bench{"gqa", 1, 8, 1}, Bench{"lora", 2, 0, 0}, Bench{"ntrans", 1, 13, 1, 8, false},
                    Bench{"qknorm_attention", 1, 18, 1}}) {
      auto g = driver::load_graph_file(example(b.name));
      if (!g.ok()) return std::fprintf(stderr, "%s\n", g.status().message().c_str()), 1;
      search::SearchOptions o;
      o.max_kernel_ops = b.kernel_ops;
      o.max_block_ops = b.block_ops;
      o.max_graph_defined_ops = b.graph_defined;
      o.min_blocks = b.min_blocks;
      if (!b.loop) o.forloop_ranges = {1};
      o.threads = 2;
      o.time_budget_s = bench_budget;
      auto r = search::search_lax(*g, o);
      if (!r.ok()) return std::fprintf(stderr, "%s\n", r.status().message().c_str()), 1;
      row(b.name, *r);
      if (!r->candidates.empty()) {
        const auto& c = r->candidates.front();
        std::printf("|   best: %d kernel op(s), %d graph-defined, %d block ops%s\n", c.kernel_ops,
                    c.graph_defined_ops, c.block_ops, "");
      }
    }
  }
  if (only == "planned") {
    std::printf("## Planned search (no search options), %.0f s budget each, 2 threads\n\n",
                search::kPlannedBudgetSeconds);
    std::printf("| %-16s | %-22s | %-5s | %7s | %-40s | %-10s |\n", "program", "form", "found",
                "first s", "best (kernel ops, graph-defined, block ops)", "certify");
    std::printf("|------------------|------------------------|-------|---------|"
                "------------------------------------------|------------|\n");
    using Form = bool (*)(const ir::KernelGraph&);
    auto single = [](const ir::KernelGraph& g) { return g.ops.size() == 1 && g.ops[0].graph_defined; };
    auto flash = [](const ir::KernelGraph& g) {
      return g.ops.size() == 1 && g.ops[0].graph_defined && g.ops[0].block->forloop > 1;
    };
    auto split_kv = [](const ir::KernelGraph& g) {  // partials of Q, K, V; then their sum
      if (g.ops.size() != 2 || !g.ops[0].graph_defined || !g.ops[1].graph_defined) return false;
      for (ir::TensorId t : g.ops[1].inputs)
        if (std::find(g.inputs.begin(), g.inputs.end(), t) != g.inputs.end()) return false;
      return g.ops[0].inputs.size() == g.inputs.size();
    };
    auto concat = [](const ir::KernelGraph& g) {
      for (const ir::KernelOp& op : g.ops)
        if (op.op == ir::OpKind::kConcatMatmul) return true;
      return false;
    };
    struct Planned {
      const char* name;
      std::vector<std::pair<const char*, Form>> forms;
    };
    for (const Planned& p : {Planned{"rms_norm_matmul", {{"one kernel", single}}},
                             Planned{"gated_mlp", {{"one kernel", single}}},
                             Planned{"gqa", {{"FlashAttention", flash}, {"split-KV pair", split_kv}}},
                             Planned{"lora", {{"concat-matmul", concat}}},
                             Planned{"ntrans", {{"one kernel", single}}},
                             Planned{"qknorm_attention", {{"one kernel", single}}}}) {
      auto g = driver::load_graph_file(example(p.name));
      if (!g.ok()) return std::fprintf(stderr, "%s\n", g.status().message().c_str()), 1;
      search::SearchOptions o;
      o.plan = true;
      o.threads = 2;
      o.time_budget_s = search::kPlannedBudgetSeconds;
      auto r = search::superoptimize(*g, o);
      if (!r.ok()) return std::fprintf(stderr, "%s\n", r.status().message().c_str()), 1;
      const search::SearchResult& part = r->parts.at(0);
      for (const auto& [form, is] : p.forms) {
        bool found = false;
        for (const search::Candidate& c : part.candidates) found = found || is(c.graph);
        char best[64] = "-";
        if (!part.candidates.empty()) {
          const search::Candidate& c = part.candidates.front();
          std::snprintf(best, sizeof best, "%d, %d, %d", c.kernel_ops, c.graph_defined_ops, c.block_ops);
        }
        std::printf("| %-16s | %-22s | %-5s | %7.1f | %-40s | %-10s |\n", p.name, form,
                    found ? "yes" : "NO", part.stats.first_candidate_seconds, best,
                    r->program_itself ? "itself"
                    : r->certify_ran  ? std::string(verify::verdict_name(r->certified.kind)).c_str()
                                      : "-");
      }
      for (const std::string& line : part.stages) std::printf("|   %s\n", line.c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}
