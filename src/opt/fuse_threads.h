// Thread-graph construction (Mirage §4.2, Algorithm 1 lines 38-42): element-wise block ops
// are fused into thread graphs by rule, so their intermediates stay in registers.
//
// Rules, applied to every block graph in node order:
//   R1 (fusible)  a compute node whose op is allowed in thread graphs (level T in the op table,
//                 i.e. element-wise) may be fused; others (matmul, sum, iterators, accumulators,
//                 savers) never are.
//   R2 (chain)    a fusible node joins the group of a fusible producer of one of its inputs
//                 (the latest such group); groups are placed at their last member.
//   R3 (order)    a node may join only if no node outside the group that reads a member's
//                 output comes before it, so placing the group at its end keeps the graph
//                 topologically ordered.
//   R4 (registers) a group may not need more than max_registers thread tensors, counted as
//                 each member's output plus its inputs (an upper bound of ir::thread_registers).
//   R5 (size)     groups of one op stay plain block ops (a thread graph would gain nothing).
// A group's outputs are the members read outside it (by later nodes or savers). Its inputs are
// the other block tensors its members read, in order of first use.
//
// Postcondition: the result is a valid uGraph that computes exactly what `g` computes (the
// thread graph's value is by definition the composition of its ops); tests check it with the
// verifier on every example and every search result.
#pragma once

#include "ir/graph.h"

namespace mugraph::opt {

inline constexpr int kDefaultThreadRegisters = 32;

ir::KernelGraph fuse_thread_graphs(const ir::KernelGraph& g,
                                   int max_registers = kDefaultThreadRegisters);

// The same pass on one block graph.
std::shared_ptr<const ir::BlockGraph> fuse_block(const ir::BlockGraph& bg, int max_registers);

}  // namespace mugraph::opt
