// The search's checkpoint: the wire format of finished tasks (their screened graphs, verdicts
// and counters) and of the tasks a stopped run cut short, for --resume (and, later, for task
// results sent between MPI ranks). JSON, format "mugraph.search-checkpoint", version 4.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "search/options.h"
#include "support/status.h"

namespace mugraph::search {

// One task's result: the graphs that passed the screen (thread graphs fused, outputs in program
// order: exactly what was screened), their screen verdicts, and counters.
struct TaskResult {
  bool done = false;
  bool retry = false;  // cut short in an earlier run: runs first (free of the state limit)
  std::vector<ir::KernelGraph> graphs;
  std::vector<std::string> verdicts;  // one per graph (the text starts with the verdict's name)
  SearchStats stats;
};

// Everything a checkpoint must agree on: the program and every option that changes the tasks
// or their results.
std::string fingerprint(const ir::KernelGraph& program, const SearchOptions& o);

// Writes the done tasks and the cut ones (retry, not done) to `path` (through a temporary file).
Status write_checkpoint(const std::string& path, const std::string& fp,
                        const std::vector<TaskResult>& tasks);
// Fills `tasks` (sized to the task count) from `path`; refuses another program's or options'.
Status read_checkpoint(const std::string& path, const std::string& fp,
                       std::vector<TaskResult>& tasks);

}  // namespace mugraph::search
