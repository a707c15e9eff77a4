// Helpers of the CUDA tests: a private kernel cache, the examples and the discovery candidates
// as named graphs for one module.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "codegen/candidates.h"
#include "driver/cuda_backend.h"
#include "test_util.h"

namespace mugraph::testing {

inline runtime::CudaJitOptions test_cuda_jit() {
  runtime::CudaJitOptions o = driver::default_cuda_jit_options();
  o.cache_dir = (std::filesystem::temp_directory_path() / "mugraph-test-cache" / "cuda").string();
  return o;
}

struct Named {
  std::vector<ir::KernelGraph> graphs;
  std::vector<codegen::NamedGraph> named() const {
    std::vector<codegen::NamedGraph> v;
    for (size_t i = 0; i < graphs.size(); ++i) v.push_back({names[i], &graphs[i]});
    return v;
  }
  std::vector<std::string> names;
};

inline Named examples() {
  Named n;
  for (const std::string& e : example_names()) {
    n.graphs.push_back(load_example(e));
    n.names.push_back(e);
  }
  return n;
}

inline Named candidates(const std::string& program) {
  Named n;
  n.graphs = program_and_candidates(program, discovery_options(program), target::h100());
  for (size_t i = 0; i < n.graphs.size(); ++i) n.names.push_back("c" + std::to_string(i));
  return n;
}

}  // namespace mugraph::testing
