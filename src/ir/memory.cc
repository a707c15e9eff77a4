#include "ir/memory.h"

namespace mugraph::ir {

int64_t shared_bytes(const BlockGraph& g) {
  int64_t total = 0;
  for (const Tensor& t : g.tensors) total += t.type.bytes();
  return total;
}

int64_t thread_registers(const ThreadGraph& g) { return static_cast<int64_t>(g.tensors.size()); }

Status check_memory(const KernelGraph& g, const MemoryLimits& limits) {
  int64_t device = 0;
  for (const Tensor& t : g.tensors) device += t.type.bytes();
  if (device > limits.device_bytes)
    return error("kernel graph tensors need ", device, " bytes of device memory, target has ",
                 limits.device_bytes);
  for (const KernelOp& op : g.ops) {
    if (!op.graph_defined) continue;
    const std::string where = "graph_defined op producing '" + g.tensor(op.outputs[0]).name + "'";
    const int64_t smem = shared_bytes(*op.block);
    if (smem > limits.shared_bytes_per_block)
      return error(where, ": block graph tensors need ", smem,
                   " bytes of shared memory per block, target allows ",
                   limits.shared_bytes_per_block);
    for (const BlockNode& n : op.block->nodes) {
      if (n.kind != BlockNodeKind::kThreadGraph) continue;
      const int64_t regs = thread_registers(*n.thread);
      if (regs > limits.registers_per_thread)
        return error(where, ": thread graph producing '",
                     op.block->tensors[static_cast<size_t>(n.outputs[0])].name, "' needs ", regs,
                     " registers per thread, target allows ", limits.registers_per_thread);
    }
  }
  return ok_status();
}

}  // namespace mugraph::ir
