// The options of the discovery searches at reduced shapes (tests/data/search/*.mu), shared by
// the discovery tests and the code generators' every-candidate tests.
#pragma once

#include <string>

#include "search/options.h"

namespace mugraph::testing {

inline search::SearchOptions single_kernel(int block_ops) {
  search::SearchOptions o;
  o.max_kernel_ops = 1;
  o.threads = 2;
  o.grid_sizes = {1, 2};
  o.min_blocks = 1;
  o.forloop_ranges = {1, 4};
  o.max_block_ops = block_ops;
  return o;
}

// The program a discovery space searches: tests/data/search/<program>.mu. Every space is named
// after its program except lora_single_kernel (LoRA as one graph-defined kernel).
inline std::string discovery_program(const std::string& name) {
  return name == "lora_single_kernel" ? "lora" : name;
}

// The options of the discovery search for `name` (gated_mlp, attention, lora, rms_norm_matmul,
// ntrans, gqa_decode, qknorm, lora_single_kernel).
inline search::SearchOptions discovery_options(const std::string& name) {
  if (name == "gated_mlp") return single_kernel(6);
  // LoRA in one graph-defined kernel: (X A) B chains two block matmuls (65 candidates; 6 block
  // ops hold all of them, more find no other).
  if (name == "lora_single_kernel") return single_kernel(6);
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
  if (name == "ntrans") {  // one row per block, as at paper shapes (8 blocks over 8 rows)
    o = single_kernel(13);
    o.grid_sizes = {4};
    o.min_blocks = 4;
    o.forloop_ranges = {1};
    return o;
  }
  if (name == "qknorm") {  // both norms and FlashAttention: 17 block ops with the accumulators
    o = single_kernel(17);
    o.grid_sizes = {2};
    o.min_blocks = 2;
    o.max_grid_dims = 1;
    o.forloop_ranges = {4};
    return o;
  }
  if (name == "lora") {
    o.threads = 2;
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
