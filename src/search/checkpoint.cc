#include "search/checkpoint.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ir/text.h"
#include "support/hash.h"

namespace mugraph::search {

using nlohmann::json;

namespace {

json stats_json(const SearchStats& s) {
  json j = {{"kernel_states", s.kernel_states}, {"block_states", s.block_states},
            {"completed", s.completed},         {"verified", s.verified},
            {"rejected", s.rejected},           {"over_memory", s.over_memory},
            {"deepest", s.deepest},
            {"deepest_prefix", s.deepest_prefix}};
  for (const PruneRuleInfo& r : kPruneRules) j[std::string("pruned_") + r.name] = s.pruned[r.rule];
  return j;
}

SearchStats stats_from_json(const json& j) {
  SearchStats s;
  s.kernel_states = j.at("kernel_states");
  s.block_states = j.at("block_states");
  for (const PruneRuleInfo& r : kPruneRules) s.pruned[r.rule] = j.at(std::string("pruned_") + r.name);
  s.completed = j.at("completed");
  s.verified = j.at("verified");
  s.rejected = j.at("rejected");
  s.over_memory = j.value("over_memory", uint64_t{0});
  s.deepest = j.at("deepest");
  s.deepest_prefix = j.at("deepest_prefix");
  return s;
}

constexpr const char* kCheckpointFormat = "mugraph.search-checkpoint";
constexpr int kCheckpointVersion = 6;  // 3: fused graphs with their screen verdicts;
                                       // 4: the deepest prefix per task; 5: the fingerprint
                                       // hashes space_text (target numbers, oracle options);
                                       // 6: the verdicts are the sampled screen's only (the
                                       // every-entry test runs after the merge, again on resume)

json graphs_json(const std::vector<ir::KernelGraph>& graphs) {
  json a = json::array();
  for (const ir::KernelGraph& g : graphs) a.push_back(ir::print_graph(g));
  return a;
}

Status read_graphs(const json& a, std::vector<ir::KernelGraph>& out) {
  for (const json& text : a) {
    auto g = ir::parse_graph(text.get<std::string>());
    if (!g.ok()) return g.status();
    out.push_back(std::move(*g));
  }
  return ok_status();
}

std::vector<std::string> op_names(const std::vector<ir::OpKind>& ops) {
  std::vector<std::string> names;
  for (ir::OpKind k : ops) names.emplace_back(ir::op_name(k));
  return names;
}

Result<std::vector<ir::OpKind>> op_kinds(const json& names) {
  std::vector<ir::OpKind> ops;
  for (const json& n : names) {
    auto k = ir::parse_op(n.get<std::string>());
    if (!k) return error("unknown op '", n.get<std::string>(), "'");
    ops.push_back(*k);
  }
  return ops;
}

json target_json(const target::Target& t) {
  return {{"name", t.name},
          {"cpu", t.kind == target::Kind::kCpu},
          {"sm_count", t.sm_count},
          {"device_memory_bytes", t.device_memory_bytes},
          {"shared_memory_per_block", t.shared_memory_per_block},
          {"register_file_bytes_per_sm", t.register_file_bytes_per_sm},
          {"max_registers_per_thread", t.max_registers_per_thread},
          {"memory_bandwidth", t.memory_bandwidth},
          {"peak_flops_f16", t.peak_flops_f16},
          {"peak_flops_bf16", t.peak_flops_bf16},
          {"peak_flops_f32", t.peak_flops_f32},
          {"sm_arch", t.sm_arch},
          {"kernel_launch_s", t.kernel_launch_s},
          {"cpu_matmul_rows", t.cpu_matmul_rows},
          {"cpu_matmul_cols", t.cpu_matmul_cols}};
}

target::Target target_from_json(const json& j) {
  target::Target t;
  t.name = j.at("name");
  t.kind = j.at("cpu").get<bool>() ? target::Kind::kCpu : target::Kind::kGpu;
  t.sm_count = j.at("sm_count");
  t.device_memory_bytes = j.at("device_memory_bytes");
  t.shared_memory_per_block = j.at("shared_memory_per_block");
  t.register_file_bytes_per_sm = j.at("register_file_bytes_per_sm");
  t.max_registers_per_thread = j.at("max_registers_per_thread");
  t.memory_bandwidth = j.at("memory_bandwidth");
  t.peak_flops_f16 = j.at("peak_flops_f16");
  t.peak_flops_bf16 = j.at("peak_flops_bf16");
  t.peak_flops_f32 = j.at("peak_flops_f32");
  t.sm_arch = j.at("sm_arch");
  t.kernel_launch_s = j.at("kernel_launch_s");
  t.cpu_matmul_rows = j.value("cpu_matmul_rows", 0);  // absent in checkpoints before 2026-11-26
  t.cpu_matmul_cols = j.value("cpu_matmul_cols", 0);
  return t;
}

// JSON has no infinity: an unbounded Z3 fallback budget is written as null.
json seconds_json(double s) { return std::isfinite(s) ? json(s) : json(nullptr); }
double seconds_from_json(const json& j) {
  return j.is_null() ? std::numeric_limits<double>::infinity() : j.get<double>();
}

json space_json(const SearchOptions& o) {
  return {{"max_kernel_ops", o.max_kernel_ops},
          {"max_block_ops", o.max_block_ops},
          {"max_graph_defined_ops", o.max_graph_defined_ops},
          {"max_block_outputs", o.max_block_outputs},
          {"max_kernel_op_inputs", o.max_kernel_op_inputs},
          {"max_open_tensors", o.max_open_tensors},
          {"kernel_ops", op_names(o.kernel_ops)},
          {"block_ops", op_names(o.block_ops)},
          {"grid_sizes", o.grid_sizes},
          {"min_blocks", o.min_blocks},
          {"max_blocks", o.max_blocks},
          {"max_grid_dims", o.max_grid_dims},
          {"forloop_ranges", o.forloop_ranges},
          {"target", target_json(o.target)},
          {"prune", o.prune},
          {"prune_by_steps", o.prune_by_steps},
          {"oracle",
           {{"mode", static_cast<int>(o.oracle.mode)},
            {"max_nodes", o.oracle.limits.max_nodes},
            {"max_iterations", o.oracle.limits.max_iterations},
            {"max_seconds", o.oracle.limits.max_seconds},
            {"z3_timeout_ms", o.oracle.z3_timeout_ms},
            {"z3_fallback_budget_s", seconds_json(o.oracle.z3_fallback_budget_s)},
            {"unsaturated_rounds", o.oracle.unsaturated_rounds}}},
          {"screen_samples", o.screen_samples},
          {"seed", o.seed},
          {"split_block_tasks", o.split_block_tasks},
          {"coarse_grids_first", o.coarse_grids_first}};
}

Status read_space_json(const json& j, SearchOptions& o) {
  o.max_kernel_ops = j.at("max_kernel_ops");
  o.max_block_ops = j.at("max_block_ops");
  o.max_graph_defined_ops = j.at("max_graph_defined_ops");
  o.max_block_outputs = j.at("max_block_outputs");
  o.max_kernel_op_inputs = j.at("max_kernel_op_inputs");
  o.max_open_tensors = j.at("max_open_tensors");
  MG_ASSIGN_OR_RETURN(o.kernel_ops, op_kinds(j.at("kernel_ops")));
  MG_ASSIGN_OR_RETURN(o.block_ops, op_kinds(j.at("block_ops")));
  o.grid_sizes = j.at("grid_sizes").get<std::vector<int64_t>>();
  o.min_blocks = j.at("min_blocks");
  o.max_blocks = j.at("max_blocks");
  o.max_grid_dims = j.at("max_grid_dims");
  o.forloop_ranges = j.at("forloop_ranges").get<std::vector<int64_t>>();
  o.target = target_from_json(j.at("target"));
  o.prune = j.at("prune");
  o.prune_by_steps = j.at("prune_by_steps");
  const json& x = j.at("oracle");
  const int mode = x.at("mode");
  if (mode < 0 || mode > static_cast<int>(expr::OracleMode::kCrossCheck))
    return error("oracle mode ", mode, " unknown");
  o.oracle.mode = static_cast<expr::OracleMode>(mode);
  o.oracle.limits.max_nodes = x.at("max_nodes");
  o.oracle.limits.max_iterations = x.at("max_iterations");
  o.oracle.limits.max_seconds = x.at("max_seconds");
  o.oracle.z3_timeout_ms = x.at("z3_timeout_ms");
  o.oracle.z3_fallback_budget_s = seconds_from_json(x.at("z3_fallback_budget_s"));
  o.oracle.unsaturated_rounds = x.at("unsaturated_rounds");
  o.screen_samples = j.at("screen_samples");
  o.seed = j.at("seed");
  o.split_block_tasks = j.at("split_block_tasks");
  o.coarse_grids_first = j.at("coarse_grids_first");
  return ok_status();
}

json task_json(const TaskResult& t) {
  return {{"stats", stats_json(t.stats)}, {"graphs", graphs_json(t.graphs)},
          {"verdicts", t.verdicts}};
}

// Fills t's stats, graphs and verdicts from task_json; `where` prefixes errors.
Status read_task_json(const json& d, TaskResult& t) {
  t.stats = stats_from_json(d.at("stats"));
  MG_RETURN_IF_ERROR(read_graphs(d.at("graphs"), t.graphs));
  t.verdicts = d.at("verdicts").get<std::vector<std::string>>();
  if (t.verdicts.size() != t.graphs.size()) return error("one verdict per graph expected");
  return ok_status();
}

}  // namespace

std::string space_text(const ir::KernelGraph& program, const SearchOptions& o) {
  return json{{"program", ir::print_graph(program)}, {"options", space_json(o)}}.dump();
}

Status read_space(const std::string& text, ir::KernelGraph& program, SearchOptions& o) {
  try {
    const json j = json::parse(text);
    auto g = ir::parse_graph(j.at("program").get<std::string>());
    if (!g.ok()) return error("search space: ", g.status().message());
    program = std::move(*g);
    if (Status s = read_space_json(j.at("options"), o); !s.ok())
      return error("search space: ", s.message());
  } catch (const json::exception& e) {
    return error("search space: ", e.what());
  }
  return ok_status();
}

std::string space_options_text(const SearchOptions& o) { return space_json(o).dump(); }

std::string fingerprint(const ir::KernelGraph& program, const SearchOptions& o) {
  size_t h = 0;
  for (char ch : space_text(program, o)) h = hash_mix(h, static_cast<unsigned char>(ch));
  std::ostringstream hex;
  hex << std::hex << h;
  return hex.str();
}

std::string task_result_text(const TaskResult& t) {
  json j = task_json(t);
  j["done"] = t.done;
  j["enumerate_seconds"] = t.stats.enumerate_seconds;
  j["verify_seconds"] = t.stats.verify_seconds;
  return j.dump();
}

Result<TaskResult> read_task_result(const std::string& text) {
  TaskResult t;
  try {
    const json j = json::parse(text);
    MG_RETURN_IF_ERROR(read_task_json(j, t));
    t.done = j.at("done");
    t.stats.enumerate_seconds = j.at("enumerate_seconds");
    t.stats.verify_seconds = j.at("verify_seconds");
  } catch (const json::exception& e) {
    return error("task result: ", e.what());
  }
  return t;
}

Status write_checkpoint(const std::string& path, const std::string& fp,
                        const std::vector<TaskResult>& tasks) {
  json done = json::array(), interrupted = json::array();
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].retry && !tasks[i].done) interrupted.push_back(i);
    if (!tasks[i].done) continue;
    json d = task_json(tasks[i]);
    d["task"] = i;
    done.push_back(std::move(d));
  }
  json j = {{"format", kCheckpointFormat}, {"version", kCheckpointVersion},
            {"fingerprint", fp},           {"tasks", tasks.size()},
            {"done", done},                {"interrupted", interrupted}};
  const std::string tmp = path + ".tmp";
  std::error_code ec;
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  {
    std::ofstream f(tmp);
    if (!f) return error("cannot write checkpoint '", tmp, "'");
    f << j.dump(1) << "\n";
    if (!f) return error("cannot write checkpoint '", tmp, "'");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return error("cannot move checkpoint into place at '", path, "'");
  return ok_status();
}

Status read_checkpoint(const std::string& path, const std::string& fp,
                       std::vector<TaskResult>& tasks) {
  std::ifstream f(path);
  if (!f) return error("cannot open checkpoint '", path, "'");
  try {
    json j = json::parse(f);
    if (j.at("format") != kCheckpointFormat || j.at("version") != kCheckpointVersion)
      return error("checkpoint '", path, "': not a version ", kCheckpointVersion,
                   " search checkpoint");
    if (j.at("fingerprint") != fp)
      return error("checkpoint '", path,
                   "' was written for another program or other search options");
    if (j.at("tasks").get<size_t>() != tasks.size())
      return error("checkpoint '", path, "': task count differs");
    for (const json& i : j.at("interrupted")) {
      if (i.get<size_t>() >= tasks.size()) return error("checkpoint '", path, "': bad task");
      tasks[i.get<size_t>()].retry = true;
    }
    for (const json& d : j.at("done")) {
      const size_t i = d.at("task");
      if (i >= tasks.size()) return error("checkpoint '", path, "': task ", i, " out of range");
      TaskResult& t = tasks[i];
      t.done = true;
      if (Status s = read_task_json(d, t); !s.ok())
        return error("checkpoint '", path, "', task ", i, ": ", s.message());
    }
  } catch (const json::exception& e) {
    return error("checkpoint '", path, "': ", e.what());
  }
  return ok_status();
}

}  // namespace mugraph::search
