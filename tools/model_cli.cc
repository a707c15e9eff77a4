#include "model_cli.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "driver/driver.h"
#include "driver/model.h"
#include "driver/optimize.h"
#include "ir/hlo_import.h"
#include "ir/text.h"
#include "search/enumerate.h"

namespace mugraph::tools {
namespace {

Result<ir::KernelGraph> load_model(const std::string& path) {
  if (!std::filesystem::exists(path)) return error("cannot read ", path, ": no such file");
  if (std::filesystem::path(path).extension() != ".hlo") return driver::load_graph_file(path);
  std::ifstream f(path);
  if (!f) return error("cannot read ", path);
  std::stringstream text;
  text << f.rdbuf();
  MG_ASSIGN_OR_RETURN(ir::HloImport h, ir::import_hlo(text.str(), path));
  return std::move(h.graph);
}

int fail(const Status& s) {
  std::cerr << "error: " << s.message() << "\n";
  return 1;
}

}  // namespace

CLI::App* add_model_command(CLI::App& app, ModelCli& m) {
  auto* c = app.add_subcommand("model", "a whole model (HLO text or a program) through the graph-rewrite environment: the superoptimizer's verified fusions as alternatives, chosen by pick-first, greedy, beam search or factorized MCTS, judged by a runtime oracle");
  c->add_option("FILE", m.file, "HLO text (.hlo, as JAX prints it) or a program (.mu, JSON)")->required();
  c->add_option("--strategy", m.strategies, "pick-first, greedy, beam or mcts; repeat for several (default: all four)")
      ->check(CLI::IsMember({"pick-first", "greedy", "beam", "mcts"}));
  c->add_option("--target", m.target, "cpu (default; timed here) or a100, h100, h200 (with --oracle model)");
  c->add_option("--oracle", m.oracle, "runtime (default: min of --runs timed runs on the CPU) or model (the cost model)")
      ->check(CLI::IsMember({"runtime", "model"}));
  c->add_option("--region-budget", m.region_budget_s, "seconds the superoptimizer may search one region (default 20)")
      ->check(CLI::Range(0.1, 86400.0));
  c->add_option("--search-budget", m.search_budget_s, "seconds all region searches may take together (default 600); regions met later get no option")
      ->check(CLI::Range(0.1, 864000.0));
  c->add_option("--options", m.options_per_region, "VERIFIED uGraphs kept per region (default 2)")->check(CLI::Range(1, 16));
  c->add_option("--max-region-ops", m.max_region_ops, "larger Lax parts are cut into overlapping windows of this many ops (default 12)")
      ->check(CLI::Range(2, 1000));
  c->add_option("--runs", m.runs, "runtime oracle: timed samples per state, the minimum taken (default 10)")->check(CLI::Range(1, 1000));
  c->add_option("--beam-width", m.beam_width, "beam search: states kept per level (default 3)")->check(CLI::Range(1, 100));
  c->add_option("--max-evaluations", m.max_evaluations, "beam, mcts: distinct states timed at most (default 64)")->check(CLI::Range(1, 100000));
  c->add_option("--simulations", m.simulations, "mcts: simulations of the first search (default 24)")->check(CLI::Range(1, 100000));
  c->add_option("--seed", m.seed, "random seed (mcts, inputs; default 0)");
  c->add_option("--out", m.out_dir, "write report.txt, report.json, program.mu, best.mu and <strategy>.mu here");
  c->add_flag("--quiet", m.quiet, "no progress lines on stderr");
  c->add_flag("--accept-unproved", m.accept_unproved, "let the fusion pass propose uGraphs certify PASSED or UNPROVED (no bound)");
  return c;
}

int cmd_model(const ModelCli& m) {
  auto program = load_model(m.file);
  if (!program.ok()) return fail(program.status());
  auto t = target::find_target(m.target);
  if (!t.ok()) return fail(t.status());
  if (Status s = driver::validate(*program, *t); !s.ok()) return fail(s.with_context(m.file + ": "));
  driver::ModelOptions o;
  o.search.target = *t;
  o.search.min_blocks = search::default_min_blocks(*t);
  o.search.seed = m.seed;
  o.region_budget_s = m.region_budget_s;
  o.search_budget_s = m.search_budget_s;
  o.options_per_region = m.options_per_region;
  o.fusion.max_ops = m.max_region_ops;
  o.oracle = m.oracle;
  o.runs = m.runs;
  o.strategy.beam_width = m.beam_width;
  o.strategy.max_evaluations = m.max_evaluations;
  o.strategy.simulations = m.simulations;
  o.strategy.seed = m.seed + 1;
  o.certify.seed = m.seed;
  o.seed = m.seed + 1;
  o.accept_unproved = m.accept_unproved;
  if (!m.strategies.empty()) o.strategies = m.strategies;
  if (!m.quiet) o.progress = [](const std::string& line) { std::cerr << "mugraph model: " << line << std::endl; };
  auto r = driver::run_model(*program, o);
  if (!r.ok()) return fail(r.status());
  const std::string report = driver::format_model_report(*r, *program);
  std::cout << report;
  const bool wrong = std::any_of(r->results.begin(), r->results.end(),
                                 [](const driver::ModelResult& x) { return x.rejected; });
  if (!m.out_dir.empty()) {
    std::vector<std::pair<std::string, std::string>> files = {{"report.txt", report},
                                                             {"report.json", driver::model_report_json(*r, *program)},
                                                             {"program.mu", ir::print_graph(*program)}};
    for (const driver::ModelResult& x : r->results)
      files.push_back({x.result.strategy + ".mu",
                       driver::text_with_verdict(x.result.best, std::string(verify::verdict_name(x.whole.kind)) + ": " + x.whole.summary)});
    const ir::KernelGraph& chosen = r->best >= 0 ? r->results[static_cast<size_t>(r->best)].result.best : *program;
    std::string verdict = "the program itself (nothing to prove)";
    if (r->best >= 0) {
      const driver::ModelResult& x = r->results[static_cast<size_t>(r->best)];
      verdict = std::string(verify::verdict_name(x.whole.kind)) + ": " + x.whole.summary;
      if (x.regions_replaced > 0 && x.regions_verified == x.regions_replaced)
        verdict += "; proof: " + std::to_string(x.regions_replaced) + " replaced region(s), each VERIFIED";
    }
    files.push_back({"best.mu", driver::text_with_verdict(chosen, verdict)});
    if (Status s = driver::write_files(files, m.out_dir); !s.ok()) return fail(s);
    std::cout << "written to " << m.out_dir << "\n";
  }
  return wrong ? 3 : 0;
}

}  // namespace mugraph::tools
