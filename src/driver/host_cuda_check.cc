#include "driver/host_cuda_check.h"

#include <cmath>
#include <sstream>

#include "driver/cuda_backend.h"

namespace mugraph::driver {

Result<std::unique_ptr<runtime::HostCudaModule>>
compile_host_cuda(const std::vector<codegen::NamedGraph>& graphs, const target::Target& t,
                  runtime::HostCudaOptions o) {
  MG_ASSIGN_OR_RETURN(const codegen::Module m, generate_cuda(graphs, t));
  o.arch = t.sm_arch >= 90 ? 90 : 80;
  return runtime::compile_host_cuda(m, o);
}

bool HostCudaCheck::ok() const {
  if (run.entry_rc != 0 || !run.findings.empty())
    return false;
  for (const OutputDiff& d : diffs)
    if (!(d.max_rel <= tolerance))
      return false;
  return true;
}

std::string HostCudaCheck::summary() const {
  std::ostringstream s;
  if (run.entry_rc != 0)
    s << "entry returned " << run.entry_rc << "\n";
  s << run.report();
  for (const OutputDiff& d : diffs)
    if (!(d.max_rel <= tolerance))
      s << "output " << d.name << ": max relative error " << d.max_rel << " (max abs " << d.max_abs
        << ") above " << tolerance << "\n";
  return s.str();
}

Result<HostCudaCheck> check_host_cuda(const runtime::HostCudaModule& m, size_t index,
                                      const ir::KernelGraph& g, uint64_t seed) {
  MG_RETURN_IF_ERROR(check_interpretable(g));
  CpuBuffers b = make_buffers(g, seed);
  HostCudaCheck c;
  MG_ASSIGN_OR_RETURN(c.run, m.run(index, g, b.inputs, b.outputs));
  MG_ASSIGN_OR_RETURN(c.diffs, diff_against_interpreter(g, b.inputs, b.outputs));
  c.tolerance = gpu_tolerance(g);
  return c;
}

}  // namespace mugraph::driver
