// `mugraph tune`: MCFuser's tiling search (search/tune_chain.h) for a two-matmul chain, alone,
// as a readable list of steps:
//   1. tune      the evolutionary search over the chain's uGraph tilings, each generation's
//                top n measured on the backend at hand: the CPU for target cpu (one JIT module
//                per generation: make_buffers' seeded inputs, CpuModule::time's median), the
//                GPU for a GPU target when one is present (a module per tiling, nvcc in
//                parallel, CUDA-event timed as CUDA graphs); without a GPU, ranked by the cost
//                model alone (the report says so)
//   2. check     the best tilings (certify_tries), fastest first, run on the same backend
//                against the program's run (cpu_tolerance / gpu_tolerance) and certified against the program (verify, certify mode)
//                until one is VERIFIED (at most certify_tries): only a VERIFIED kernel is
//                handed out (a PASSED/UNPROVED one only with accept_unproved)
//   3. compare   the handed-out kernel and the program (the unfused chain) timed in
//                interleaved rounds (time_rounds.h) in one module: the speedup
// `optimize` runs step 1 too when its program is such a chain, and its best tilings join the
// variants it measures and certifies (optimize.h).
#pragma once

#include <optional>
#include <string>

#include "driver/cpu_backend.h"
#include "driver/cuda_backend.h"
#include "driver/time_rounds.h"
#include "search/tune_chain.h"
#include "verify/verifier.h"

namespace mugraph::driver {

struct TuneOptions {
  target::Target target;
  search::TuneOptions search;
  uint64_t seed = 1;             // inputs of the measured runs
  int runs = 5;                  // CpuModule::time calls per tiling while tuning
  int cpu_threads = 0;           // 0: the idle cores (runtime::idle_cores)
  int certify_tries = 3;
  bool accept_unproved = false;  // may hand out a PASSED/UNPROVED tiling (--accept-unproved)
  RoundOptions compare;          // the final program-vs-kernel timing
  runtime::JitOptions jit = default_jit_options();
  runtime::CudaJitOptions cuda_jit = default_cuda_jit_options();
  verify::VerifyOptions certify;
};

struct TuneReport {
  search::TuneResult search;
  bool measured = false;         // step 1 timed on the backend at hand (else the model alone)
  std::string device;            // "cpu" or the GPU's name; empty when nothing ran
  int chosen = -1;               // index into search.measured (or -1: the model's best, below)
  std::optional<ir::KernelGraph> best;  // the handed-out kernel (VERIFIED unless accept_unproved)
  std::string not_verified;      // an unproven tiling was not handed out, and why
  verify::Verdict certified;
  double max_rel = 0;            // its CPU run against the program's
  TimingStats program_timing, best_timing;
  double speedup = 0;            // over the program, median of per-round ratios (0: not timed)
  std::string slower_note;       // when the kernel does not beat the program beyond the noise
  std::vector<std::string> notes;
};

// Errors: not a chain, a backend failure. A run whose tilings all fail certify returns a
// report without `best` (the notes say why).
Result<TuneReport> tune(const ir::KernelGraph& program, const TuneOptions& o);

// Measures graphs on the CPU for search::tune_chain with `threads` OpenMP threads: one module,
// seconds per call each (CpuModule::time's median of o.runs calls or more: about 10 ms).
search::MeasureBatch cpu_measure_batch(const ir::KernelGraph& program, const TuneOptions& o,
                                       int threads);
// The same on a GPU: a module per graph (load_cuda_each), CudaModule::time as CUDA graphs.
search::MeasureBatch gpu_measure_batch(const ir::KernelGraph& program, const TuneOptions& o,
                                       std::shared_ptr<runtime::CudaDevice> dev);

std::string format_tune_report(const TuneReport& r);
// The report as JSON (tune.json of `mugraph tune --out`): chain dims, space counts, every
// measured tiling, the stop, seconds, rank correlation, the chosen tiling, its verdict, timings.
std::string tune_report_json(const TuneReport& r);

}  // namespace mugraph::driver
