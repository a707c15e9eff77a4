// The discovery programs' search candidates, shared by the code generator tests (options:
// search/discovery_options.h, the discovery tests' own).
#pragma once

#include <cstdlib>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "driver/driver.h"
#include "search/discovery_options.h"

namespace mugraph::testing {

inline ir::KernelGraph search_data(const std::string& name) {
  return driver::load_graph_file(std::string(MUGRAPH_TEST_DATA_DIR) + "/search/" + name + ".mu")
      .value();
}

// The program of discovery space `name` (discovery_program) followed by the verified candidates
// the search finds for it on target `t`: all of
// them, up to the best kMaxCandidates by the cost model (the ranking optimize measures from).
// Only GQA decode's two-kernel space exceeds it (~2300 candidates at the discovery options, whose
// single nvcc module would take the better part of an hour in CI).
inline constexpr size_t kMaxCandidates = 128;
inline std::vector<ir::KernelGraph> program_and_candidates(const std::string& name,
                                                           search::SearchOptions o,
                                                           const target::Target& t) {
  const ir::KernelGraph program = search_data(discovery_program(name));
  // 2 threads (CI's cores) unless MUGRAPH_TEST_THREADS says otherwise (the GPU machine has 16);
  // the candidates do not depend on it: tasks merge in task order.
  const char* threads = std::getenv("MUGRAPH_TEST_THREADS");
  o.threads = threads != nullptr && std::atoi(threads) > 0 ? std::atoi(threads) : 2;
  o.target = t;
  auto r = driver::superoptimize(program, o);
  EXPECT_TRUE(r.ok()) << r.status().message();
  std::vector<ir::KernelGraph> graphs{program};
  if (!r.ok()) return graphs;
  for (const search::Candidate& c : r->parts[0].candidates)
    if (graphs.size() <= kMaxCandidates) graphs.push_back(c.graph);
  return graphs;
}

}  // namespace mugraph::testing
