#include "search/checkpoint.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ir/text.h"
#include "support/hash.h"

namespace mugraph::search {

using nlohmann::json;

std::string fingerprint(const ir::KernelGraph& program, const SearchOptions& o) {
  std::ostringstream os;
  os << ir::print_graph(program) << "|" << o.max_kernel_ops << "," << o.max_block_ops << ","
     << o.max_graph_defined_ops << "," << o.max_block_outputs << "," << o.max_kernel_op_inputs
     << "," << o.min_blocks << "," << o.max_blocks << "," << o.max_grid_dims << ","
     << o.prune << "," << o.seed << "," << o.target.name << "," << o.max_open_tensors << ","
     << o.screen_samples << "," << o.prune_by_steps << "," << o.split_block_tasks << ","
     << o.coarse_grids_first << "|";
  for (auto k : o.kernel_ops) os << ir::op_name(k) << ",";
  os << "|";
  for (auto k : o.block_ops) os << ir::op_name(k) << ",";
  os << "|";
  for (auto s : o.grid_sizes) os << s << ",";
  os << "|";
  for (auto r : o.forloop_ranges) os << r << ",";
  size_t h = 0;
  for (char ch : os.str()) h = hash_mix(h, static_cast<unsigned char>(ch));
  std::ostringstream hex;
  hex << std::hex << h;
  return hex.str();
}

namespace {

json stats_json(const SearchStats& s) {
  json j = {{"kernel_states", s.kernel_states}, {"block_states", s.block_states},
            {"completed", s.completed},         {"verified", s.verified},
            {"rejected", s.rejected},           {"deepest", s.deepest},
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
  s.deepest = j.at("deepest");
  s.deepest_prefix = j.at("deepest_prefix");
  return s;
}

constexpr const char* kCheckpointFormat = "mugraph.search-checkpoint";
constexpr int kCheckpointVersion = 4;  // 3: fused graphs with their screen verdicts;
                                       // 4: the deepest prefix per task

}  // namespace

Status write_checkpoint(const std::string& path, const std::string& fp,
                        const std::vector<TaskResult>& tasks) {
  json done = json::array(), interrupted = json::array();
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].retry && !tasks[i].done) interrupted.push_back(i);
    if (!tasks[i].done) continue;
    json graphs = json::array();
    for (const ir::KernelGraph& g : tasks[i].graphs) graphs.push_back(ir::print_graph(g));
    done.push_back({{"task", i}, {"stats", stats_json(tasks[i].stats)}, {"graphs", graphs},
                    {"verdicts", tasks[i].verdicts}});
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
      t.stats = stats_from_json(d.at("stats"));
      for (const json& text : d.at("graphs")) {
        auto g = ir::parse_graph(text.get<std::string>());
        if (!g.ok()) return error("checkpoint '", path, "', task ", i, ": ", g.status().message());
        t.graphs.push_back(std::move(*g));
      }
      t.verdicts = d.at("verdicts").get<std::vector<std::string>>();
      if (t.verdicts.size() != t.graphs.size())
        return error("checkpoint '", path, "', task ", i, ": one verdict per graph expected");
    }
  } catch (const json::exception& e) {
    return error("checkpoint '", path, "': ", e.what());
  }
  return ok_status();
}

}  // namespace mugraph::search
