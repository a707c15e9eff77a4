// The analytical cost model (MCFuser, Zhang et al. SC'24, eq. 2-5), used to rank verified
// candidates so that only the best few are generated and measured.
//
// Per graph-defined kernel with N_block blocks on a target with N_SM SMs (cores on a CPU):
//   bytes     = sum over iterators of (the block's chunk of the input) * N_block   (eq. 2)
//               + sum over savers of (the block's output tile) * N_block
//             A replicated imap (phi) makes every block load the whole extent: that is where
//             re-loads come from. A tile with fmap = phi is loop-invariant: both code
//             generators load it once per block, so it is counted once, not R times; a tile
//             with fmap = d is 1/R of the chunk, loaded R times, so the chunk is counted once.
//   T_mem     = bytes / memory_bandwidth                                            (eq. 3)
//   T_comp    = matmul FLOPs / peak(dtype of the matmul's inputs)
//               + other FLOPs / peak_f32                                            (eq. 4)
//   T         = (T_mem + T_comp) * (N_block + N_SM) / N_block                       (eq. 5)
//             the occupancy slowdown: a grid of few blocks leaves SMs idle and a partial last
//             wave; many blocks amortize it (factor -> 1). On a CPU target, whose cores take
//             equal static shares of the blocks: ceil(N_block / cores) * cores / N_block.
// Predefined kernels read their inputs and write their outputs once (vendor kernels reach full
// occupancy, factor 1). FLOPs: 2 m n k per matmul (both terms of concat_matmul), one per
// element of an element-wise op (exp and sqrt included: the model ranks, it does not predict
// transcendental throughput), one per summed element, one per element per iteration of a
// summing (phi) accumulator; data movement ops are free. A thread
// graph is a fused loop per output over the output's shape, so each node is counted once per
// element of every output that needs it (what both generators execute).
// Every kernel, predefined or graph-defined, also costs the target's kernel_launch_s (launch
// and the wait for the kernel before it): without it a chain of small vendor kernels would
// rank level with one fused kernel.
// On a CPU target an iterator's bytes cost more when its tile reads short runs: a run of r
// contiguous bytes (the tile's trailing dims as far as they span the device tensor's) moves at
// r / (r + 256) of the bandwidth, the prefetchers' ramp measured on this project's machine
// (reading 32 MiB in tiles 64 B / 512 B / 2 KiB / 8 KiB wide ran at 0.35 / 0.67 / 0.81 / 1.0 of
// the contiguous rate). T_mem counts these slower bytes (`memory_s`), `bytes` the real ones.
// Two more CPU rules, fitted to MCFuser's chains tuned on this project's machine (issue 23:
// over every tiling of six Table II/III chains, the model's rank correlation with the measured
// times rose from 0.77-0.91 to 0.93-0.98):
//   - blocks that replicate a chunk (grid dims its imap leaves unmapped) re-read it from the
//     caches when it fits a core's L2 (shared_memory_per_block): each re-read counts a quarter
//     of its bytes in T_mem (`slow_bytes`; `bytes` still counts them all);
//   - a block matmul C[m, n] (+)= A[m, k] B[k, n] runs at the share of the f32 peak the device
//     library's micro-kernel reaches: m and n round up to its block of C (the target's
//     cpu_matmul_rows x cols: 8 x 32 with AVX-512, 4 x 16 otherwise), and per 256-step of k it
//     loads and stores that block: (m / m8) (n / n32) / (1 + 8 / min(k, 256)) with AVX-512.
// The graph's time is the sum of its kernels' (kernels run one after another).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "target/target.h"

namespace mugraph::opt {

struct KernelCost {
  int op = 0;  // index in KernelGraph::ops
  bool graph_defined = false;
  int64_t blocks = 1;
  int64_t bytes = 0;        // device <-> shared memory traffic
  double slow_bytes = 0;    // bytes weighted by their runs' bandwidth (CPU), else = bytes
  double matmul_flops = 0;  // at the tensor-core / dtype peak
  double other_flops = 0;   // at the f32 peak
  double memory_s = 0, compute_s = 0;
  double occupancy = 1;     // (N_block + N_SM) / N_block, 1 for predefined kernels
  double total_s = 0;
};

struct Cost {
  std::vector<KernelCost> kernels;
  int64_t bytes = 0;
  double flops = 0;
  double total_s = 0;
};

// Precondition: `g` is a valid uGraph; `t` has positive bandwidth, peaks and SM count.
Cost estimate(const ir::KernelGraph& g, const target::Target& t);

// Whether the CUDA generator's block matmul C[m, n] (+)= A[m, k] B[k, n] of a tile runs on
// tensor cores (WMMA), as mg::matmul_tile decides (runtime/device/mg_fragment.cuh plan_wmma) for
// row-major tiles at 32-byte aligned offsets: A and B of one 16-bit type (f16, bf16), k a
// multiple of 16, and a fragment shape that tiles m x n with every fragment 32-byte aligned
// (16x16; 8x32; 32x8 only when n is 8). Anything else runs on the CUDA cores in f32 (SIMT) and
// is priced at the f32 peak (so is a block matmul reading another's bf16 or concat_matmul
// result: the generator keeps those f32); so is a kernel-level matmul of mixed operand types
// (not cuBLAS: the generator's one-thread-per-output loop).
bool tile_matmul_uses_tensor_cores(int64_t m, int64_t n, int64_t k, ir::DType a, ir::DType b);

// Whether the CUDA generator keeps the result of block node `n` (declared `declared`) as an f32
// tile even where a matmul reads it: a concat_matmul's (its second term adds into the first's
// f32) and a matmul's that is not f16 (WMMA has no bf16 accumulator fragment). Otherwise a
// 16-bit result a matmul reads is stored in its declared type. The generator and the model
// both read this rule.
bool block_result_kept_f32(const ir::BlockNode& n, ir::DType declared);

// FLOPs of one application of `k` with the given input shapes and output shape (the counting
// rules above). Returns {matmul FLOPs, other FLOPs}.
std::pair<double, double> op_flops(ir::OpKind k, const std::vector<ir::Shape>& in,
                                   const ir::Shape& out);

// Spearman's rank correlation of two equally long samples (ties get their mean rank); 0 for
// fewer than 2 points or a constant sample.
double spearman(const std::vector<double>& a, const std::vector<double>& b);

// Rank agreement of a model with measurements, over the pairs the measurements tell apart:
// pair (i, j) counts when the ranges [lo, hi] of the two measurements (e.g. p10 and p90) do
// not overlap. Kendall's tau over those pairs: (ordered alike - ordered opposite) / pairs; a
// pair the model ties counts in neither. `pairs` gets the number of such pairs (tau is 0 when
// there are none), `alike` the number ordered alike.
struct PairAgreement {
  double tau = 0;
  int pairs = 0, alike = 0;
};
PairAgreement agreement_beyond_noise(const std::vector<double>& model, const std::vector<double>& lo,
                                     const std::vector<double>& hi);

}  // namespace mugraph::opt
