// The CPU backend as the driver uses it: generate one module for several uGraphs, JIT it
// (runtime/cpu_jit.h), run an entry on seeded random inputs, compare with the interpreter, time.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codegen/cpu/generate_cpu.h"
#include "driver/driver.h"
#include "runtime/buffer.h"
#include "runtime/cpu_jit.h"

namespace mugraph::driver {

// Where compiled kernels are cached: <root>/<backend> ("cpu", "cuda") with root
// $MUGRAPH_CACHE_DIR, else $XDG_CACHE_HOME/mugraph, else $HOME/.cache/mugraph, else
// /tmp/mugraph-cache. (Read here, in the driver, and passed down as data.)
std::string default_cache_dir(const std::string& backend = "cpu");
runtime::JitOptions default_jit_options();

// Validates every graph against the CPU target, generates one module and loads it.
Result<std::unique_ptr<runtime::CpuModule>> compile_cpu(
    const std::vector<codegen::NamedGraph>& graphs, const runtime::JitOptions& jit);

// A graph's device buffers: inputs random from `seed` as `mugraph run` draws them (uniform,
// scaled by role: verify/random_inputs.h), rounded to their storage types; outputs poisoned
// with NaN. With `inputs_as` (a variant's program), the inputs are drawn with that graph's
// scales, so that a variant runs on exactly the program's inputs (the roles read from a
// rewritten graph, and a scale the program sets, may differ from the program's).
struct CpuBuffers {
  std::vector<runtime::Buffer> inputs, outputs;
  // Set by make_buffers_like: the inputs are another entry's (`inputs` is empty), which must
  // outlive these buffers. Kernels only read their inputs.
  const std::vector<runtime::Buffer>* shared_inputs = nullptr;
  std::vector<const void*> in() const;
  std::vector<void*> out();
};
CpuBuffers make_buffers(const ir::KernelGraph& g, uint64_t seed,
                        const ir::KernelGraph* inputs_as = nullptr);
// make_buffers(g, seed, inputs_as) where `drawn` already holds those inputs: drawn must be
// make_buffers(h, seed, inputs_as) for a graph h with inputs_as's inputs (the inputs depend only
// on their types, inputs_as's scales and the seed; inputs_as must not be null). When g's input
// types are drawn's, the result reads drawn's input buffers themselves (shared_inputs; drawn
// must outlive it) instead of drawing them again (a weight matrix's draw takes a large part of
// a second): optimize runs every variant on the program's inputs, and its interleaved timing
// rounds then read one copy of a weight, warm in the cache as a caller's repeated calls find
// it (with a copy per entry, 4 entries of RMSNorm+MatMul held 128 MiB of W and each round read
// W from memory, while PyTorch's calls, timed back to back, read it from the L3 cache).
CpuBuffers make_buffers_like(const ir::KernelGraph& g, const CpuBuffers& drawn, uint64_t seed,
                             const ir::KernelGraph* inputs_as);
// Whether a and b have the same input types, in order (dtype, shape, layout).
bool same_input_types(const ir::KernelGraph& a, const ir::KernelGraph& b);

// What optimize checks a variant's run against. `program_run`: the outputs of the program's own
// run on make_buffers(program, seed). Normally that run itself; when it has a non-finite entry
// (the program itself overflows in its precision), the float64 interpreter's run of the program
// on the same inputs instead, and `note` says that the program overflows and names the first
// tensor that is not finite (verify/overflow.h), so that no variant is blamed for it. When the
// float64 run is not finite either, `checkable` is false: no variant can be checked.
struct RunReference {
  std::vector<std::vector<double>> outputs;
  std::string note;  // empty unless the program overflows
  bool checkable = true;
  // Why variant `label` (normwise error `rel` against these outputs, over `tolerance`) is not
  // taken: "cand3: generated code differs from the program's run (rel 0.5 > 0.01)"; where the
  // program overflows and the variant's run is not finite either, that it overflows like the
  // program (no blame on its code).
  std::string differs(const std::string& label, double rel, double tolerance) const;
};
Result<RunReference> run_reference(const ir::KernelGraph& program, uint64_t seed,
                                   const std::vector<std::vector<float>>& program_run);

// The normwise relative error a CPU run of `g` may show against the float64 interpreter: set by
// the narrowest storage type among g's device and block tensors (a few roundings of that type,
// plus f32 summation order): f32 1e-4, f16 1e-2, bf16 5e-2.
double cpu_tolerance(const ir::KernelGraph& g);

// The largest normwise relative error of a run's outputs against the reference outputs (NaN
// when any is NaN: a run that does not finish in range shows, not dropped by the max).
double max_rel_error(const std::vector<std::vector<double>>& want,
                     const std::vector<std::vector<float>>& got);

// Calls per timing sample so that a sample lasts about `sample_s` given one call's `call_s`
// (a timer tick or a scheduler hiccup is then a small share of it): 1 to 1000.
int calls_per_sample(double call_s, double sample_s);

// The OpenMP team size of the CPU modules while it lives (runtime::set_cpu_threads), then the
// default again.
struct CpuThreadScope {
  explicit CpuThreadScope(int n) { runtime::set_cpu_threads(n); }
  ~CpuThreadScope() { runtime::set_cpu_threads(0); }
  CpuThreadScope(const CpuThreadScope&) = delete;
  CpuThreadScope& operator=(const CpuThreadScope&) = delete;
};

// Compares every output of a run of `g` on `inputs` with the float64 interpreter run on the same
// (rounded) inputs.
Result<std::vector<OutputDiff>> diff_against_interpreter(const ir::KernelGraph& g,
                                                         const std::vector<runtime::Buffer>& inputs,
                                                         const std::vector<runtime::Buffer>& outputs);

// Runs entry `index` (which computes `g`) on make_buffers(g, seed) and compares every output
// with the float64 interpreter (diff_against_interpreter).
Result<std::vector<OutputDiff>> check_cpu(runtime::CpuModule& m, size_t index,
                                          const ir::KernelGraph& g, uint64_t seed);

}  // namespace mugraph::driver
