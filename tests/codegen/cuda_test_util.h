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

// The CUDA toolkit is not a Debian package (it is at /usr/local/cuda on this project's machines,
// CI included): on a machine without nvcc the tests that compile CUDA skip and say why.
inline std::string nvcc_missing() {
  const std::string nvcc = driver::default_cuda_jit_options().nvcc;
  if (std::filesystem::exists(nvcc)) return "";
  return "nvcc not found (looked at " + nvcc +
         ", $CUDA_HOME/bin and $PATH): install the CUDA toolkit to run the CUDA compile tests";
}
#define MG_SKIP_WITHOUT_NVCC()                                               \
  do {                                                                        \
    if (const std::string why = ::mugraph::testing::nvcc_missing(); !why.empty()) \
      GTEST_SKIP() << why;                                                    \
  } while (0)

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
