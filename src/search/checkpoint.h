// The search's wire formats: the checkpoint (finished tasks with their screened graphs,
// verdicts and counters, and the tasks a stopped run cut short, for --resume; JSON, format
// "mugraph.search-checkpoint", version 5), and what rank 0 and the other ranks of a
// distributed search send each other (search/distributed.h): the space, one task's result.
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

// The space a search runs, as JSON text: the program and every option that changes its tasks
// or their results (sizes, op kinds, grids, loops, the target's numbers, pruning, the oracle's
// options, screens, seed). Execution options (threads, budgets, checkpoint, callbacks) are not
// part of it.
std::string space_text(const ir::KernelGraph& program, const SearchOptions& o);
// The options part of space_text alone (JSON text).
std::string space_options_text(const SearchOptions& o);
// Reads space_text back into `program` and the options it holds, in `o` (the others are kept).
Status read_space(const std::string& text, ir::KernelGraph& program, SearchOptions& o);

// Everything a checkpoint must agree on: a hash of space_text.
std::string fingerprint(const ir::KernelGraph& program, const SearchOptions& o);

// One task's result as text (everything in TaskResult, times included) and back.
std::string task_result_text(const TaskResult& t);
Result<TaskResult> read_task_result(const std::string& text);

// Writes the done tasks and the cut ones (retry, not done) to `path` (through a temporary file).
Status write_checkpoint(const std::string& path, const std::string& fp,
                        const std::vector<TaskResult>& tasks);
// Fills `tasks` (sized to the task count) from `path`; refuses another program's or options'.
Status read_checkpoint(const std::string& path, const std::string& fp,
                       std::vector<TaskResult>& tasks);

}  // namespace mugraph::search
