// mugraph command-line tool: check, run, compare, verify and draw uGraphs; print their abstract
// expressions and ask the pruning oracle.
// Exit codes: 0 ok, 1 user error (bad file, invalid uGraph), 2 internal error,
// 3 `compare` found a difference / `verify` rejected the candidate / `search` found nothing,
// 4 `verify` could not prove equivalence (screen PASSED, not Lax, no bound, inconclusive) nor
//   refute it,
// 5 `search` stopped early (time budget, Ctrl-C) before finding a uGraph or before certify
//   finished,
// 6 `search` found a uGraph that is not VERIFIED (PASSED or UNPROVED): not handed out unless
//   --accept-unproved.
#include <CLI/CLI.hpp>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <sched.h>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <iostream>
#include <thread>

#include "driver/driver.h"
#include "driver/cuda_backend.h"
#include "driver/optimize.h"
#include "driver/tune.h"
#include "driver/progress.h"
#include "driver/version.h"
#include "ir/dot.h"
#include "ir/hlo_import.h"
#include "ir/json.h"
#include "ir/text.h"
#include "search/distributed.h"
#include "search/plan.h"
#include "support/memory.h"
#include "support/transport.h"
#include "model_cli.h"
#include "result_cache_cli.h"
#include "runtime/cpu_jit.h"

namespace {

using namespace mugraph;

constexpr int kUserError = 1, kInternalError = 2, kMismatch = 3, kUnproved = 4,
              kNotVerified = 6;

struct Options {
  std::string file, file_b, target = "h100", out, precision = "double";
  bool min_blocks_given = false;  // else search::default_min_blocks(target)
  bool time_budget_given = false; // tune --time-budget
  uint64_t seed = 0;
  bool json = false;
  // Default tolerance of `compare`: 1e-9 relative in double. Reorderings of sums (what fused
  // kernels do) change results by ~1e-15 relative in double; real mistakes give O(1).
  double tol = 1e-9;
  double delta = 1e-9;
  bool screen = false;
  int samples = verify::kScreenSamples;
  std::vector<std::string> prefixes;
  bool z3 = false;
  search::SearchOptions search;
  int64_t max_states = 0;
  std::string out_dir;
  bool quiet = false;
  bool no_prune = false;
  bool accept_unproved = false;
  int top_n = 8, runs = 10;
  std::vector<std::string> input_scales;  // --input-scale NAME=S, applied to the program / A / REF
  std::string memory_budget;              // --memory-budget SIZE (search, optimize, verify)
  bool memory_budget_given = false;
  double rank_timeout = search::kDefaultRankTimeoutSeconds;  // --rank-timeout (under MPI)
  bool no_cache = false;                  // optimize --no-cache
  int population = 64;                    // tune --population
  std::string cache_action, cache_key;    // mugraph cache ACTION [KEY]
  double started_s = 0;                   // when the command began (steady clock)
};

std::atomic<bool> g_interrupted{false};
extern "C" void on_sigint(int) { g_interrupted = true; }

// Ctrl-C (SIGINT) and SIGTERM (what mpirun sends its ranks on Ctrl-C) stop a search cleanly:
// what was found is kept and the checkpoint written.
void catch_stop_signals(bool on) {
  std::signal(SIGINT, on ? on_sigint : SIG_DFL);
  std::signal(SIGTERM, on ? on_sigint : SIG_DFL);
}

int fail(const Status& s) {
  std::cerr << "error: " << s.message() << "\n";
  return kUserError;
}

// Loads and validates a uGraph; `input_scales` (--input-scale flags) are applied to it.
Result<ir::KernelGraph> load_valid(const std::string& path, const std::string& target_name,
                                   const std::vector<std::string>& input_scales = {}) {
  MG_ASSIGN_OR_RETURN(ir::KernelGraph g, driver::load_graph_file(path));
  MG_RETURN_IF_ERROR(driver::apply_input_scales(g, input_scales));
  MG_ASSIGN_OR_RETURN(target::Target t, target::find_target(target_name));
  MG_RETURN_IF_ERROR(driver::validate(g, t).with_context(path + ": "));
  return g;
}

Result<driver::Precision> precision(const std::string& p) {
  if (p == "double") return driver::Precision::kDouble;
  if (p == "float") return driver::Precision::kFloat;
  return error("--precision must be double or float, got '", p, "'");
}

int cmd_check(const Options& o) {
  auto g = load_valid(o.file, o.target);
  if (!g.ok()) return fail(g.status());
  std::cout << (o.json ? ir::to_json(*g) + "\n" : ir::print_graph(*g));
  std::cerr << o.file << ": valid uGraph for target " << o.target << "\n";
  return 0;
}

int cmd_run(const Options& o) {
  auto g = load_valid(o.file, o.target, o.input_scales);
  if (!g.ok()) return fail(g.status());
  auto p = precision(o.precision);
  if (!p.ok()) return fail(p.status());
  auto r = driver::run_graph(*g, o.seed, *p);
  if (!r.ok()) return fail(r.status());
  std::printf("%-12s %-18s %12s %12s %12s %12s  %s\n", "output", "shape", "min", "max", "mean",
              "rms", "first values");
  for (const auto& s : *r) {
    std::string head;
    for (double v : s.head) head += std::to_string(v) + " ";
    std::printf("%-12s %-18s %12.5g %12.5g %12.5g %12.5g  %s%s\n", s.name.c_str(),
                s.shape.to_string().c_str(), s.min, s.max, s.mean, s.rms, head.c_str(),
                s.non_finite ? ("(" + std::to_string(s.non_finite) + " non-finite!)").c_str() : "");
  }
  bool non_finite = false;
  for (const auto& s : *r) non_finite |= s.non_finite > 0;
  if (non_finite)
    if (auto f = driver::find_run_overflow(*g, o.seed, *p); f.ok() && f->has_value())
      std::printf("%s (scale the inputs: --input-scale NAME=S)\n", (*f)->message().c_str());
  return 0;
}

int cmd_compare(const Options& o) {
  auto a = load_valid(o.file, o.target, o.input_scales);
  if (!a.ok()) return fail(a.status());
  auto b = load_valid(o.file_b, o.target);
  if (!b.ok()) return fail(b.status());
  auto p = precision(o.precision);
  if (!p.ok()) return fail(p.status());
  auto r = driver::compare_graphs(*a, *b, o.seed, *p);
  if (!r.ok()) return fail(r.status().with_context(o.file + " vs " + o.file_b + ": "));
  // Non-finite outputs of A itself are A's doing: say so instead of calling B different.
  bool nan = false;
  for (const auto& d : *r) nan |= std::isnan(d.max_rel);
  if (nan)
    if (auto f = driver::find_run_overflow(*a, o.seed, *p); f.ok() && f->has_value())
      return fail(error(o.file, ": ", (*f)->message(), " on these inputs, so ", o.file_b,
                        " cannot be compared with it (scale the inputs: --input-scale NAME=S)"));
  bool same = true;
  std::printf("%-12s %14s %14s  %s\n", "output", "max abs err", "max rel err", "verdict");
  for (const auto& d : *r) {
    const bool ok = d.max_rel <= o.tol;  // false for NaN
    same &= ok;
    std::printf("%-12s %14.3e %14.3e  %s\n", d.name.c_str(), d.max_abs, d.max_rel,
                ok ? "equal" : "DIFFERENT");
  }
  std::printf("%s (seed %llu, %s, tolerance %.1e relative)\n", same ? "EQUAL" : "DIFFERENT",
              static_cast<unsigned long long>(o.seed), o.precision.c_str(), o.tol);
  return same ? 0 : kMismatch;
}

int cmd_verify(const Options& o) {
  auto a = load_valid(o.file, o.target, o.input_scales);
  if (!a.ok()) return fail(a.status());
  auto b = load_valid(o.file_b, o.target);
  if (!b.ok()) return fail(b.status());
  if (!(o.delta > 0 && o.delta < 1)) return fail(error("--delta must be in (0, 1), got ", o.delta));
  verify::VerifyOptions vo;
  vo.mode = o.screen ? verify::Mode::kScreen : verify::Mode::kCertify;
  vo.delta = o.delta;
  vo.seed = o.seed;
  if (o.samples < 1) return fail(error("--samples must be at least 1, got ", o.samples));
  vo.screen_samples = o.samples;
  auto v = driver::verify_graphs(*a, *b, vo);
  if (!v.ok()) return fail(v.status().with_context(o.file + " vs " + o.file_b + ": "));
  // Graphs that cannot be compared (other inputs, other output shapes) are a user error.
  if (v->kind == verify::VerdictKind::kError)
    return fail(error(o.file, " vs ", o.file_b, ": cannot be compared: ", v->summary));
  std::cout << verify::format_verdict(*v, *a, *b);
  if (!v->cut.empty()) std::cerr << "verify: " << v->summary << "\n";
  switch (v->kind) {
    case verify::VerdictKind::kVerified: return 0;
    case verify::VerdictKind::kPassed: return kUnproved;  // a screen pass proves nothing
    case verify::VerdictKind::kNotEquivalent:
    case verify::VerdictKind::kUnstable: return kMismatch;
    case verify::VerdictKind::kUnproved:
    case verify::VerdictKind::kInconclusive: return kUnproved;
    case verify::VerdictKind::kError: return kUserError;
  }
  return kInternalError;
}

int cmd_expr(const Options& o) {
  auto g = load_valid(o.file, o.target);
  if (!g.ok()) return fail(g.status());
  bool abbreviated = false;
  for (const driver::TensorExpr& t : driver::tensor_expressions(*g)) {
    std::printf("%-12s %s\n", t.tensor.c_str(), t.expr.c_str());
    abbreviated |= t.abbreviated;
  }
  if (abbreviated)
    std::printf("(large terms abbreviated: @T stands for tensor T's term above)\n");
  if (o.prefixes.empty()) return 0;
  auto r = driver::ask_oracle(*g, o.prefixes, o.z3 ? expr::OracleMode::kZ3 : expr::OracleMode::kEGraph);
  if (!r.ok()) return fail(r.status());
  for (const driver::PrefixAnswer& a : r->answers)
    std::printf("%-5s %s\n", a.keep ? "KEEP" : "PRUNE", a.prefix.c_str());
  std::printf("%s\n", r->stats.to_string().c_str());
  return 0;
}

// The search options of `search` and `optimize` from the flags.
search::SearchOptions search_options(const Options& o, const target::Target& t) {
  search::SearchOptions so = o.search;
  so.target = t;
  if (!o.min_blocks_given) so.min_blocks = search::default_min_blocks(t);
  so.seed = o.seed;
  so.prune = !o.no_prune;
  so.max_states = static_cast<uint64_t>(std::max<int64_t>(0, o.max_states));
  so.cancel = &g_interrupted;
  if (!o.quiet) so.progress = driver::terminal_progress();
  return so;
}

// Exit: 0 a VERIFIED uGraph was found and handed out (best.mu; also when the search stopped
// early: the summary says so), or an unproven one with --accept-unproved; 6 the best uGraph is
// PASSED or UNPROVED and was not handed out; 3 none was found, or certify rejected every one
// tried; 5 the search stopped early (time budget, state limit, Ctrl-C) before finding one
// (resume from the checkpoint); 1 bad input.
int cmd_search(Options& o) {
  auto g = load_valid(o.file, o.target, o.input_scales);
  if (!g.ok()) return fail(g.status());
  auto t = target::find_target(o.target);
  if (!t.ok()) return fail(t.status());
  search::SearchOptions so = search_options(o, *t);
  if (so.checkpoint.empty() && !o.out_dir.empty()) so.checkpoint = o.out_dir + "/checkpoint.json";
  catch_stop_signals(true);
  auto r = driver::superoptimize(*g, so);
  driver::end_progress();
  catch_stop_signals(false);
  if (!r.ok()) return fail(r.status());
  const bool hand_out = driver::hand_out_best(*r, o.accept_unproved);
  std::string summary;
  if (!o.out_dir.empty()) {
    auto w = driver::write_search_results(*r, *g, o.out_dir, o.accept_unproved);
    if (!w.ok()) return fail(w.status());
    summary = *w;
  } else {
    summary = driver::search_summary(*r, *g);
    if (const std::string loud = driver::not_verified_line(*r, o.accept_unproved); !loud.empty())
      summary += loud + "\n";
  }
  std::cout << summary;
  if (hand_out && o.out_dir.empty())
    std::cout << "\n"
              << driver::text_with_verdict(*r->best,
                                           std::string(verify::verdict_name(r->certified.kind)) +
                                               (r->program_itself ? ": " : " (certify): ") +
                                               r->certified.summary);
  if (r->stop_reason != search::StopReason::kExhausted) {
    std::cerr << "search stopped early (" << search::stop_reason_name(r->stop_reason) << ")";
    if (!so.checkpoint.empty()) {
      std::cerr << "; continue with --resume --checkpoint " << so.checkpoint;
      if (so.plan)
        std::cerr << " (the planned search's stages are in " << so.checkpoint << "[.partK].stage-*)";
    }
    std::cerr << "\n";
    if (!r->best) return 5;
  }
  if (!r->best) {
    uint64_t over_memory = 0;
    for (const search::SearchResult& p : r->parts) over_memory += p.stats.over_memory;
    if (over_memory > 0) {  // not "nothing there": some were never screened
      std::cerr << "search: " << over_memory
                << " complete uGraphs could not be screened within the memory budget; rerun "
                   "with a larger --memory-budget\n";
      return 5;
    }
    return kMismatch;
  }
  if (hand_out) return 0;
  if (!r->certified.cut.empty()) {  // certify was stopped: nothing refuted, nothing proven
    std::cerr << "certify of the best uGraph was "
              << (r->certified.cut == "memory budget"
                      ? "not run (over the memory budget): not handed out; raise --memory-budget\n"
                      : r->certified.cut == "cancelled"
                            ? "interrupted: not handed out; run the command again (with --out "
                              "and --resume the search goes on from its checkpoint)\n"
                            : "cut (" + r->certified.cut +
                                  "): not handed out; give it more time (--time-budget)\n");
    return 5;
  }
  return r->certify_ran && !verify::accepted(r->certified.kind) ? kMismatch : kNotVerified;
}

// Exit: 0 the report was written (the program itself may be the answer: the report says so),
// 1 bad input or a backend error (no compiler, compile failure).
int cmd_optimize(Options& o) {
  auto g = load_valid(o.file, o.target, o.input_scales);
  if (!g.ok()) return fail(g.status());
  auto t = target::find_target(o.target);
  if (!t.ok()) return fail(t.status());
  driver::OptimizeOptions oo;
  oo.search = search_options(o, *t);
  // Like `search`: a cut search leaves a checkpoint in OUT, and --resume continues it.
  if (oo.search.checkpoint.empty() && !o.out_dir.empty())
    oo.search.checkpoint = o.out_dir + "/search/checkpoint.json";
  oo.top_n = o.top_n;
  oo.runs = o.runs;
  oo.seed = o.seed + 1;
  oo.certify.seed = o.seed;
  oo.accept_unproved = o.accept_unproved;
  // The result cache: a hit hands out what an earlier run stored, without searching. --resume
  // asks for the search itself, so it skips the look-up (and stores what it finds).
  std::optional<driver::ResultCache> cache;
  if (!tools::cache_disabled(o.no_cache)) cache = tools::open_cache_or_warn();
  if (cache && !oo.search.resume) {
    const int served = tools::serve_from_cache(*cache, *g, oo, o.out_dir, o.started_s);
    if (served >= 0) return served;
  }
  catch_stop_signals(true);
  auto r = driver::optimize(*g, oo);
  driver::end_progress();
  catch_stop_signals(false);
  if (!r.ok()) return fail(r.status());
  std::cout << driver::format_report(*r, *g);
  if (!o.out_dir.empty()) {
    if (Status s = driver::write_optimize_results(*r, *g, o.out_dir); !s.ok()) return fail(s);
    std::cout << "written to " << o.out_dir << "\n";
  } else {
    std::cout << "\n" << ir::print_graph(r->chosen().graph);
  }
  // Stored after the report is out (a busy cache file may make it wait).
  if (cache)
    tools::store_in_cache(*cache, *r, *g, oo, std::filesystem::path(o.file).filename().string());
  if (r->search.stop_reason != search::StopReason::kExhausted && !oo.search.checkpoint.empty())
    std::cerr << "search stopped early (" << search::stop_reason_name(r->search.stop_reason)
              << "); search further with --resume --checkpoint " << oo.search.checkpoint << "\n";
  return 0;
}

// Writes `text` to the file `path`, or to stdout when `path` is empty. A failed write is an
// error (exit 1), also when it shows only as the stream is flushed and closed (a full disk,
// /dev/full: small outputs sit in the buffer until then).
Status write_output(const std::string& path, const std::string& text) {
  if (path.empty()) {
    std::cout << text << std::flush;
    if (!std::cout) return error("standard output: cannot write");
    return ok_status();
  }
  std::ofstream f(path);
  if (!f) return error(path, ": cannot write: ", std::strerror(errno));
  f << text;
  f.close();
  if (!f) return error(path, ": cannot write: ", std::strerror(errno));
  return ok_status();
}

// mugraph tune PROGRAM: MCFuser's tiling search for a two-matmul chain (driver/tune.h).
// Exit: 0 a VERIFIED tuned kernel was handed out (best.mu in --out, else printed), or an
// unproven one with --accept-unproved; 6 the best tiling certify did not reject is PASSED or
// UNPROVED (not handed out); 3 certify rejected every tiling tried (or their runs differed from
// the program's); 1 bad input (not such a chain, a bad flag) or a backend error.
int cmd_tune(Options& o) {
  auto g = load_valid(o.file, o.target, o.input_scales);
  if (!g.ok()) return fail(g.status());
  auto t = target::find_target(o.target);
  if (!t.ok()) return fail(t.status());
  if (o.top_n < 1) return fail(Status::error("--top must be >= 1, got " + std::to_string(o.top_n)));
  if (o.population < 1)
    return fail(Status::error("--population must be >= 1, got " + std::to_string(o.population)));
  if (o.time_budget_given && !(o.search.time_budget_s > 0))
    return fail(Status::error("--time-budget must be > 0"));
  driver::TuneOptions to;
  to.target = *t;
  to.search.population = o.population;
  to.search.measure_top = o.top_n;
  to.search.seed = o.seed;
  to.seed = o.seed + 1;
  to.certify.seed = o.seed;
  to.accept_unproved = o.accept_unproved;
  if (o.time_budget_given) to.search.time_limit_s = o.search.time_budget_s;
  auto r = driver::tune(*g, to);
  if (!r.ok()) return fail(r.status().with_context(o.file + ": "));
  const std::string report = driver::format_tune_report(*r);
  std::cout << report;
  if (!o.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.out_dir, ec);
    if (ec) return fail(Status::error(o.out_dir + ": cannot create: " + ec.message()));
    std::vector<std::pair<std::string, std::string>> files{{"report.txt", report},
                                                           {"tune.json", driver::tune_report_json(*r)}};
    if (r->best)
      files.push_back({"best.mu", driver::text_with_verdict(
                                      *r->best, std::string(verify::verdict_name(r->certified.kind)) +
                                                    " (certify): " + r->certified.summary)});
    for (const auto& [name, text] : files)
      if (Status st = write_output(o.out_dir + "/" + name, text); !st.ok()) return fail(st);
    std::cout << "written to " << o.out_dir << "\n";
  } else if (r->best) {
    std::cout << "\n" << ir::print_graph(*r->best);
  }
  if (!r->best) return r->not_verified.empty() ? kMismatch : kNotVerified;
  return 0;
}

int cmd_codegen(const Options& o) {
  auto t = target::find_target(o.target);
  if (!t.ok()) return fail(t.status());
  auto g = load_valid(o.file, o.target);
  if (!g.ok()) return fail(g.status());
  auto m = t->kind == target::Kind::kCpu ? codegen::cpu::generate_cpu({{"graph", &*g}})
                                         : driver::generate_cuda({{"graph", &*g}}, *t);
  if (!m.ok()) return fail(m.status());
  if (Status s = write_output(o.out, m->source); !s.ok()) return fail(s);
  return 0;
}

int cmd_dot(const Options& o) {
  auto g = load_valid(o.file, o.target);
  if (!g.ok()) return fail(g.status());
  if (Status s = write_output(o.out, ir::to_dot(*g)); !s.ok()) return fail(s);
  return 0;
}

// mugraph hlo FILE.hlo: the HLO module's entry computation as a mugraph program (issue 22).
int cmd_hlo(const Options& o) {
  std::ifstream f(o.file);
  if (!f) return fail(Status::error("cannot read " + o.file));
  std::stringstream text;
  text << f.rdbuf();
  auto h = ir::import_hlo(text.str(), o.file);
  if (!h.ok()) return fail(h.status());
  std::string out = "# imported from " + o.file + " (mugraph hlo)\n";
  for (const auto& [name, v] : h->constants) {
    std::ostringstream c;
    c << std::setprecision(17) << v;
    out += "# " + name + " stands for the HLO constant " + c.str() + "\n";
  }
  for (const std::string& n : h->notes) out += "# note: " + n + "\n";
  out += ir::print_graph(h->graph);
  if (Status s = write_output(o.out, out); !s.ok()) return fail(s);
  return 0;
}

// --memory-budget SIZE (verify, search, optimize).
void add_memory_budget_flag(CLI::App* c, Options& o) {
  c->add_option("--memory-budget", o.memory_budget,
                "memory the search and the verifier may hold at once, e.g. 8G or 512M (default: "
                "half of the machine's memory); checks then wait for each other, caches are "
                "dropped, a check larger than the budget is refused and said")
      ->each([&o](const std::string&) { o.memory_budget_given = true; });
}

// --input-scale NAME=S (run, compare, verify, search, optimize).
void add_input_scale_flag(CLI::App* c, Options& o) {
  c->add_option("--input-scale", o.input_scales,
                "NAME=S: input NAME's random values scaled by S (repeatable; default 1/sqrt(fan-in) "
                "for a matmul weight, 1 for an activation, or the program's scale=)")
      ->expected(1)
      ->take_all();
}

// The flags that describe the search space. Given none, `search` and `optimize` plan the
// space from the program (search/plan.h) within a default time budget; given any, they search
// exactly the space the flags (and the defaults of the others) describe.
constexpr const char* kSpaceFlags[] = {
    "--max-kernel-ops", "--max-block-ops", "--max-graph-defined", "--max-block-outputs",
    "--max-kernel-op-inputs", "--grid-sizes", "--min-blocks", "--max-blocks",
    "--max-grid-dims", "--forloop"};

// After parsing: plan the space when no space flag was given (with its default budget).
void plan_unless_space_given(CLI::App* c, Options& o) {
  for (const char* f : kSpaceFlags)
    if (c->count(f) > 0) return;
  o.search.plan = true;
  if (c->count("--time-budget") == 0) o.search.time_budget_s = search::kPlannedBudgetSeconds;
}

// The search flags, shared by `search` and `optimize`.
void add_search_flags(CLI::App* c, Options& o, const std::string& targets) {
  const std::string space =
      " (a space flag: given none, the space is planned from the program: predefined kernel "
      "ops, then one graph-defined kernel without a loop, then with one (one block op per "
      "program op plus the loop's accumulators), each deepened while time is left, then split-K "
      "forms of the best looped kernels, then up to two kernels; given any, Mirage's space "
      "with the flags given: default ";
  c->add_option("--max-kernel-ops", o.search.max_kernel_ops, "kernel ops per uGraph" + space + "5)");
  c->add_option("--max-block-ops", o.search.max_block_ops, "compute ops + accumulators per block graph" + space + "11)");
  c->add_option("--max-graph-defined", o.search.max_graph_defined_ops, "graph-defined kernels per uGraph" + space + "1)");
  c->add_option("--max-block-outputs", o.search.max_block_outputs, "outputs per block graph" + space + "2)");
  c->add_option("--max-kernel-op-inputs", o.search.max_kernel_op_inputs,
                "inputs of one graph-defined op" + space + "4)");
  c->add_option("--grid-sizes", o.search.grid_sizes, "sizes a grid dim may take" + space + "1 2 4 ... 4096)")->expected(1, 64);
  c->add_option("--min-blocks", o.search.min_blocks, "fewest blocks per grid" + space + "32 on a GPU target, 4 per core on cpu)");
  c->add_option("--max-blocks", o.search.max_blocks, "most blocks per grid" + space + "4096)");
  c->add_option("--max-grid-dims", o.search.max_grid_dims, "grid dims of size > 1" + space + "2)");
  c->add_option("--forloop", o.search.forloop_ranges, "for-loop ranges" + space + "1 4 16 64)")->expected(1, 16);
  c->add_option("--threads", o.search.threads, "search threads (default: all cores)");
  c->add_option("--time-budget", o.search.time_budget_s,
                "stop after this many seconds, keeping what was found (default: 60 for a planned "
                "space, none when a space flag is given)");
  c->add_option("--max-states", o.max_states, "stop after about this many prefixes");
  c->add_option("--checkpoint", o.search.checkpoint, "checkpoint file (default: OUT/checkpoint.json)");
  c->add_flag("--resume", o.search.resume, "continue a stopped search from its checkpoint");
  c->add_option("--screen-samples", o.search.screen_samples, "output entries sampled by each screen test (default 2)");
  // The pruning rules' switches, described by the rule table (search/options.h).
  auto rule_reason = [](const char* flag) {
    for (const search::PruneRuleInfo& r : search::kPruneRules)
      if (std::string(r.flag) == flag) return std::string(r.reason);
    return std::string();
  };
  c->add_flag("--no-prune", o.no_prune,
              "do not prune where " + rule_reason("--no-prune") + " (Table 5 baseline)");
  c->add_flag("!--no-steps-bound", o.search.prune_by_steps,
              "do not prune where " + rule_reason("--no-steps-bound") +
                  " (same candidates, more prefixes)");
  c->add_flag("!--no-split-tasks", o.search.split_block_tasks,
              "one task per graph-defined first op, not per first block op (same candidates)");
  c->add_option("--z3-fallback", o.search.oracle.z3_fallback_budget_s,
                 "seconds of Z3 for prefixes an unsaturated e-graph cannot place (default 0: prune them)");
  c->add_option("--unsaturated-rounds", o.search.oracle.unsaturated_rounds,
                 "rewrite rounds of the e-graph used when saturation stops on a limit (default 3)");
  c->add_flag("--accept-unproved", o.accept_unproved,
              "hand out a best uGraph that certify accepts without proof (PASSED, UNPROVED)");
  c->add_flag("--quiet", o.quiet, "no progress line (shown on a terminal only: elapsed, prefixes/s, tasks done, candidates)");
  c->add_option("--rank-timeout", o.rank_timeout,
                "under mpirun: seconds a rank may be silent before its tasks run elsewhere "
                "(default 10)");
  c->add_option("--seed", o.seed, "verifier seed (default 0)");
  c->add_option("--target", o.target, targets);
  add_input_scale_flag(c, o);
  add_memory_budget_flag(c, o);
}

}  // namespace

// Under `mpirun -np N` (N > 1): ranks other than 0 serve rank 0's search tasks
// (search/distributed.h) for `search` and `optimize`, and do nothing for the other commands;
// rank 0 runs the command. Each rank's threads default to its share of its machine's cores.
int run_mpi_rank(Transport& mpi, CLI::App* se, CLI::App* op, Options& o) {
  if (o.search.threads == 0) {
    // Its share of the machine's cores, and no more than the cores mpirun bound it to (Open
    // MPI binds each of 2 ranks to one core unless told --bind-to none).
    cpu_set_t set;
    const int bound = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1 << 20;
    const int share = static_cast<int>(std::thread::hardware_concurrency()) / mpi.local_size();
    o.search.threads = std::max(1, std::min(share, bound));
    if (bound < share && mpi.rank() == 0)
      std::cerr << "note: mpirun bound each rank to " << bound << " core(s) of its share of "
                << share << "; mpirun --bind-to none lets each use its share\n";
  }
  if (mpi.rank() == 0) return -1;  // rank 0: go on with the command
  if (!*se && !*op) return 0;
  catch_stop_signals(true);
  return search::serve_tasks(mpi, o.search.threads, &g_interrupted, o.rank_timeout);
}

int main(int argc, char** argv) {
  // Before any thread starts: libgomp's wait policy comes from the environment it loads with.
  mugraph::runtime::init_openmp();
  // First, before anything reads argv: MPI may take its own arguments out of it.
  auto joined = join_mpi(&argc, &argv);
  if (!joined.ok()) {
    std::cerr << "error: " << joined.status().message() << "\n";
    return kUserError;
  }
  const std::unique_ptr<Transport> mpi = std::move(joined).value();
  std::unique_ptr<search::Ranks> ranks;  // rank 0's view of the others (destroyed first: QUIT)
  CLI::App app{"mugraph: a multi-level superoptimizer for tensor programs.\n"
               "Exit codes: 0 ok, 1 user error, 2 internal error, 3 compare found a difference,\n"
               "verify rejected the candidate, or search found no uGraph that certify accepts,\n"
               "4 verify could neither prove nor refute (a screen PASSED too), 5 search stopped\n"
               "early before finding "
               "a uGraph, 6 search found a uGraph that is not VERIFIED (--accept-unproved)."};
  app.require_subcommand(1);
  app.set_version_flag("--version", driver::version());
  Options o;
  o.started_s = tools::now_s();
  const std::string targets = "target whose limits validate the graph: a100, h100, h200, cpu";
  auto* check = app.add_subcommand("check", "parse and validate a uGraph, print it");
  check->add_option("FILE", o.file, "uGraph (text or JSON)")->required();
  check->add_option("--target", o.target, targets);
  check->add_flag("--json", o.json, "print as JSON instead of text");
  auto* run = app.add_subcommand("run", "interpret a uGraph on seeded random inputs");
  run->add_option("FILE", o.file, "uGraph (text or JSON)")->required();
  auto* cmp = app.add_subcommand("compare", "interpret two uGraphs on the same random inputs");
  cmp->add_option("A", o.file, "reference uGraph")->required();
  cmp->add_option("B", o.file_b, "candidate uGraph")->required();
  cmp->add_option("--tol", o.tol, "max relative error to call the outputs equal (default 1e-9)");
  for (auto* c : {run, cmp}) {
    c->add_option("--seed", o.seed, "random input seed (default 0)");
    c->add_option("--precision", o.precision, "double (default) or float");
    c->add_option("--target", o.target, targets);
    add_input_scale_flag(c, o);
  }
  auto* ver = app.add_subcommand("verify", "prove (probabilistically) that CAND computes what REF does");
  ver->add_option("REF", o.file, "reference uGraph (the program)")->required();
  ver->add_option("CAND", o.file_b, "candidate uGraph")->required();
  ver->add_option("--delta", o.delta, "certify: bound on wrongly accepting (default 1e-9)");
  ver->add_option("--seed", o.seed, "random seed (default 0)");
  ver->add_flag("--screen", o.screen, "one cheap test on sampled output entries (what the search uses)");
  ver->add_option("--samples", o.samples, "screen: output entries sampled per output (default 4)");
  ver->add_option("--target", o.target, targets);
  add_input_scale_flag(ver, o);
  add_memory_budget_flag(ver, o);
  auto* ex = app.add_subcommand("expr", "print abstract expressions; ask the pruning oracle about prefixes");
  ex->add_option("FILE", o.file, "the program (uGraph, text or JSON)")->required();
  ex->add_option("--prefix", o.prefixes, "an abstract expression, e.g. 'sum(64, mul(X, W))' (repeatable)");
  ex->add_flag("--z3", o.z3, "decide with Z3 only (default: the saturated e-graph)");
  ex->add_option("--target", o.target, targets);
  auto* se = app.add_subcommand("search", "superoptimize a program: find verified uGraphs (Mirage Alg. 1)");
  se->add_option("PROGRAM", o.file, "the program (uGraph of predefined ops)")->required();
  add_search_flags(se, o, targets);
  se->add_option("--out", o.out_dir, "write candidates (text + JSON), best.mu and summary.txt here");
  auto* op = app.add_subcommand("optimize", "search, certify, rank by the cost model, generate and measure: the best kernel graph");
  op->add_option("PROGRAM", o.file, "the program (uGraph of predefined ops)")->required();
  add_search_flags(op, o, targets);
  op->add_option("--out", o.out_dir, "write best.mu/.json, best_cpu.cc, report.txt and search/ here (a cut search leaves search/checkpoint.json*: --resume continues it)");
  op->add_option("--top", o.top_n, "variants measured (default 8)");
  op->add_flag("--no-cache", o.no_cache, "neither look the program up in the result cache nor store the result (also MUGRAPH_NO_CACHE=1; the cache is $MUGRAPH_CACHE_DIR/results.sqlite, default ~/.cache/mugraph)");
  op->add_option("--runs", o.runs, "timing rounds per batch: program and variants interleaved, median and spread reported, more batches while the spread is above 10% (default 10)");
  auto* tu = app.add_subcommand("tune", "MCFuser's tiling search for a chain of two matmuls (GEMM chain, attention): tile sizes tuned by the cost model and measured, the best certified");
  tu->add_option("PROGRAM", o.file, "the program: C = A B, element-wise ops and row sums of C, E = C' D")->required();
  tu->add_option("--target", o.target, "cpu (default: measured here) or a100, h100, h200 (ranked by the cost model alone)");
  tu->add_option("--out", o.out_dir, "write best.mu, report.txt and tune.json here");
  tu->add_option("--top", o.top_n, "tilings measured per generation (MCFuser's n, default 8)");
  tu->add_option("--population", o.population, "tilings per generation (MCFuser's N, default 64)");
  tu->add_option("--seed", o.seed, "random seed of the search and the inputs (default 0)");
  tu->add_option("--time-budget", o.search.time_budget_s, "seconds the tiling search may take (default 60; certify and the final timing come after)");
  tu->add_flag("--accept-unproved", o.accept_unproved, "hand out a tiling certify PASSED or UNPROVED (no bound: relu, sqrt) instead of exiting 6");
  add_input_scale_flag(tu, o);
  tools::ModelCli mo;
  auto* md = tools::add_model_command(app, mo);
  auto* ca = app.add_subcommand("cache", "the result cache of optimize: ls, show KEY, rm KEY, clear");
  ca->add_option("ACTION", o.cache_action, "ls, show, rm or clear")
      ->required()
      ->check(CLI::IsMember({"ls", "show", "rm", "clear"}));
  ca->add_option("KEY", o.cache_key, "show, rm: the entry's key (a prefix of 4+ hex digits)");
  auto* cg = app.add_subcommand("codegen", "print the generated source of a uGraph: C++ for cpu, CUDA for a GPU target");
  cg->add_option("FILE", o.file, "uGraph (text or JSON)")->required();
  cg->add_option("--target", o.target, "cpu (default; C++) or a100, h100, h200 (CUDA)");
  cg->add_option("-o,--out", o.out, "write to this file instead of stdout");
  auto* hlo = app.add_subcommand("hlo", "import an XLA HLO text module (as JAX prints it) as a mugraph program");
  hlo->add_option("FILE", o.file, "HLO text (jax.jit(f).lower(...).compiler_ir('hlo').as_hlo_text())")->required();
  hlo->add_option("-o,--out", o.out, "write the program to this file instead of stdout");
  auto* dot = app.add_subcommand("dot", "print the uGraph as Graphviz DOT");
  dot->add_option("FILE", o.file, "uGraph (text or JSON)")->required();
  dot->add_option("-o,--out", o.out, "write to this file instead of stdout");
  dot->add_option("--target", o.target, targets);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (mpi && mpi->rank() != 0) return e.get_exit_code() == 0 ? 0 : kUserError;  // rank 0 says it
    return app.exit(e) == 0 ? 0 : kUserError;
  }
  if (o.memory_budget_given) {
    const int64_t b = parse_bytes(o.memory_budget);
    if (b <= 0) {
      std::cerr << "error: --memory-budget '" << o.memory_budget
                << "': expected a size such as 8G, 512M or 100000000 (bytes)\n";
      return kUserError;
    }
    set_memory_budget(b);
  }
  if (!(o.rank_timeout > 0)) {  // rank 0 says it (every rank would, at once)
    if (!mpi || mpi->rank() == 0)
      std::cerr << "error: --rank-timeout must be > 0, got " << o.rank_timeout << "\n";
    return kUserError;
  }
  // The ranks on one machine share its memory: each gets its share of the budget.
  if (mpi && mpi->local_size() > 1) set_memory_budget(memory_budget() / mpi->local_size());
  if (mpi) {
    if (const int code = run_mpi_rank(*mpi, se, op, o); code >= 0) {
      if (code != 0) mpi->end_job(code);  // rank 0 went silent: finalize would wait for it
      return code;
    }
    ranks = std::make_unique<search::Ranks>(*mpi, o.rank_timeout, [](const std::string& line) {
      std::cerr << line << "\n";
    });
    o.search.ranks = ranks.get();
  }
  auto command = [&]() -> int {
    try {
      if (*check) return cmd_check(o);
      if (*run) return cmd_run(o);
      if (*cmp) return cmd_compare(o);
      if (*ver) return cmd_verify(o);
      if (*ex) return cmd_expr(o);
      if (*dot) return cmd_dot(o);
      if (*hlo) return cmd_hlo(o);
      if (*se) {
        plan_unless_space_given(se, o);
        o.min_blocks_given = se->count("--min-blocks") > 0;
        return cmd_search(o);
      }
      if (*op) {
        plan_unless_space_given(op, o);
        o.min_blocks_given = op->count("--min-blocks") > 0;
        if (op->count("--target") == 0) o.target = "cpu";  // the target this machine can measure
        return cmd_optimize(o);
      }
      if (*tu) {
        if (tu->count("--target") == 0) o.target = "cpu";
        o.time_budget_given = tu->count("--time-budget") > 0;
        return cmd_tune(o);
      }
      if (*md) return tools::cmd_model(mo);
      if (*ca) {
        if ((o.cache_action == "show" || o.cache_action == "rm") && o.cache_key.empty()) {
          std::cerr << "error: mugraph cache " << o.cache_action << " needs a KEY (see mugraph cache ls)\n";
          return kUserError;
        }
        return tools::cmd_cache(o.cache_action, o.cache_key);
      }
      if (*cg) {
        if (cg->count("--target") == 0) o.target = "cpu";
        return cmd_codegen(o);
      }
    } catch (const std::exception& e) {
      std::cerr << "mugraph: " << e.what() << "\n";
      return kInternalError;
    }
    return kInternalError;
  };
  const int code = command();
  if (ranks && ranks->lost() > 0) {  // MPI_Finalize would wait for the dead rank(s) forever
    std::cout << std::flush;
    std::cerr << "mugraph: " << ranks->lost() << " rank(s) lost; ending the MPI job (exit "
              << code << ")\n";
    ranks.reset();
    mpi->end_job(code);
  }
  return code;
}
