// The CPU code generator (Mirage's block/thread hierarchy mapped onto cores and caches):
//
//   kernel graph     one C++ function per kernel op, called in order by an extern "C" entry
//   predefined op    a loop nest shared over all cores (OpenMP), matmul through the device
//                    library's tiled matmul
//   graph-defined    the grid blocks are the parallel loop (all cores, static schedule); each
//                    block runs the block graph serially: its shared-memory tensors are f32
//                    buffers in a per-thread arena (cache-sized by the target's shared memory),
//                    the for-loop streams tiles (loop-invariant tiles, fmap = phi, are loaded
//                    once), accumulators add or concatenate, post-loop ops run once, savers write
//                    the block's tile of each output
//   thread graph     one fused, vectorizable loop per output keeping every value in registers
//
// Every device tensor keeps its storage type (f16/bf16/f32) and layout; values are f32 in
// registers and block buffers. Intermediate device tensors live in a caller-provided workspace.
#pragma once

#include <string>
#include <vector>

#include "codegen/emitter.h"

namespace mugraph::codegen::cpu {

// One module with an entry per graph, each
//   extern "C" void mg_entry_<name>(void* const* inputs, void* const* outputs, char* workspace)
// Precondition: every graph is valid (ir validator); the
// error cases are names that collide after identifier() and graphs without outputs.
Result<Module> generate_cpu(const std::vector<NamedGraph>& graphs);

// The header the generated source includes (runtime/cpu/mugraph_cpu.h), by its include name.
inline constexpr const char* kCpuLibraryHeader = "mugraph_cpu.h";

}  // namespace mugraph::codegen::cpu
