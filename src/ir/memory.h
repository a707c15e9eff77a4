// Memory validity of a uGraph (Mirage Def. 2.1 (2)): kernel tensors fit in device memory, each
// block graph's tensors fit in one block's shared memory, each thread graph fits the per-thread
// register budget. The limits are plain numbers so that ir/ does not depend on target/; the
// driver fills them from a target description.
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace mugraph::ir {

struct MemoryLimits {
  int64_t device_bytes = 0;
  int64_t shared_bytes_per_block = 0;
  int64_t registers_per_thread = 0;  // 32-bit registers
};

// Bytes of shared memory a block graph needs: the sum over all its tensors, with no reuse
// between dead and live tensors (a conservative bound; the memory planner may fit more).
int64_t shared_bytes(const BlockGraph& g);

// 32-bit registers per thread a thread graph needs: one per thread tensor (each thread holds one
// element of every thread tensor at a time; f16/bf16 values are computed in f32 registers).
int64_t thread_registers(const ThreadGraph& g);

// Ok iff every level fits; the error names the graph-defined op (by its first output) and the
// number of bytes needed vs available.
Status check_memory(const KernelGraph& g, const MemoryLimits& limits);

}  // namespace mugraph::ir
