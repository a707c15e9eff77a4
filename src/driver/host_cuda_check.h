// Generated CUDA executed on the CPU (runtime/host_cuda) and checked against the float64
// interpreter: what CI runs in place of a GPU. generate_cuda for a GPU target, compile for the
// host harness, run an entry on make_buffers(g, seed), compare every output with the
// interpreter, and keep the race and barrier checker's findings.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "driver/cpu_backend.h"
#include "runtime/host_cuda/host_cuda.h"

namespace mugraph::driver {

// Validates the graphs for `t` (a GPU target), generates one CUDA module and compiles it for
// the host harness, emulating t's architecture (sm_80 or sm_90).
Result<std::unique_ptr<runtime::HostCudaModule>>
compile_host_cuda(const std::vector<codegen::NamedGraph>& graphs, const target::Target& t,
                  runtime::HostCudaOptions o = {});

struct HostCudaCheck {
  runtime::HostCudaRun run;       // entry return code and the checker's findings
  std::vector<OutputDiff> diffs;  // per output, against the float64 interpreter
  double tolerance = 0;           // gpu_tolerance(g)
  // True when the entry returned 0, the checker found nothing and every output is within
  // tolerance.
  bool ok() const;
  std::string summary() const;  // what failed, one line each
};

// Runs entry `index` (which computes `g`) on make_buffers(g, seed).
Result<HostCudaCheck> check_host_cuda(const runtime::HostCudaModule& m, size_t index,
                                      const ir::KernelGraph& g, uint64_t seed);

}  // namespace mugraph::driver
