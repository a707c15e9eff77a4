// The discovery programs' search candidates, shared by the code generator tests: the options of
// tests/search/discovery_test.cc at reduced shapes.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "driver/driver.h"

namespace mugraph::testing {

inline ir::KernelGraph search_data(const std::string& name) {
  return driver::load_graph_file(std::string(MUGRAPH_TEST_DATA_DIR) + "/search/" + name + ".mu")
      .value();
}

// The program followed by every verified candidate the search finds for it on target `t`.
inline std::vector<ir::KernelGraph> program_and_candidates(const std::string& name,
                                                           search::SearchOptions o,
                                                           const target::Target& t) {
  const ir::KernelGraph program = search_data(name);
  o.threads = 2;
  o.target = t;
  auto r = driver::superoptimize(program, o);
  EXPECT_TRUE(r.ok()) << r.status().message();
  std::vector<ir::KernelGraph> graphs{program};
  if (!r.ok()) return graphs;
  for (const search::Candidate& c : r->parts[0].candidates) graphs.push_back(c.graph);
  return graphs;
}

inline search::SearchOptions single_kernel(int block_ops) {
  search::SearchOptions o;
  o.max_kernel_ops = 1;
  o.grid_sizes = {1, 2};
  o.min_blocks = 1;
  o.forloop_ranges = {1, 4};
  o.max_block_ops = block_ops;
  return o;
}

// The options of the discovery search for `name` (gated_mlp, attention, lora, rms_norm_matmul,
// ntrans, gqa_decode).
inline search::SearchOptions discovery_options(const std::string& name) {
  if (name == "gated_mlp") return single_kernel(6);
  if (name == "attention") return single_kernel(8);
  search::SearchOptions o;
  if (name == "gqa_decode") {  // split-KV: two graph-defined kernels
    o = single_kernel(7);
    o.max_kernel_ops = 2;
    o.max_graph_defined_ops = 2;
    o.max_kernel_op_inputs = 3;
    o.min_blocks = 4;
    o.max_blocks = 4;
    o.forloop_ranges = {2};
    return o;
  }
  if (name == "ntrans") {
    o = single_kernel(13);
    o.grid_sizes = {2};
    o.min_blocks = 2;
    o.forloop_ranges = {1};
    return o;
  }
  if (name == "lora") {
    o.max_kernel_ops = 2;
    o.max_graph_defined_ops = 0;
    return o;
  }
  o = single_kernel(9);
  o.grid_sizes = {2};
  o.min_blocks = 2;
  o.forloop_ranges = {4};
  return o;
}

}  // namespace mugraph::testing
