// `mugraph model FILE`: a whole model through the graph-rewrite environment (driver/model.h).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace mugraph::tools {

struct ModelCli {
  std::string file, target = "cpu", oracle = "runtime", out_dir;
  std::vector<std::string> strategies;  // empty: all four
  double region_budget_s = 20, search_budget_s = 600;
  int options_per_region = 2, max_region_ops = 12, runs = 10, beam_width = 3;
  int max_evaluations = 64, simulations = 24;
  uint64_t seed = 0;
  bool accept_unproved = false;
  bool quiet = false;
};

// Declares the subcommand and its flags on `app`.
CLI::App* add_model_command(CLI::App& app, ModelCli& m);

// Exit: 0 the report was written and what it hands out (best.mu: the chosen state, or the
// program itself) is proven (or taken with --accept-unproved); 1 bad input; 3 a strategy's best
// state was refuted by the whole-model check or its CPU run (a wrong rewrite: never handed
// out).
int cmd_model(const ModelCli& m);

}  // namespace mugraph::tools
