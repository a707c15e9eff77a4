#include "opt/cost_model.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

namespace mugraph::opt {
namespace {

double peak_for(ir::DType dt, const target::Target& t) {
  switch (dt) {
    case ir::DType::kF16: return t.peak_flops_f16;
    case ir::DType::kBF16: return t.peak_flops_bf16;
    case ir::DType::kF32: return t.peak_flops_f32;
  }
  return t.peak_flops_f32;
}

// FLOPs of a thread graph run as one fused loop per output (see the header).
std::pair<double, double> thread_flops(const ir::ThreadGraph& tg) {
  double other = 0;
  for (ir::TensorId out : tg.outputs) {
    std::set<ir::TensorId> need{out};
    int nodes = 0;
    for (auto it = tg.nodes.rbegin(); it != tg.nodes.rend(); ++it)
      if (need.count(it->output) != 0) {
        need.insert(it->inputs.begin(), it->inputs.end());
        ++nodes;
      }
    other += static_cast<double>(nodes) *
             static_cast<double>(tg.tensors[static_cast<size_t>(out)].type.shape.numel());
  }
  return {0.0, other};
}

// The share of the bandwidth a tile's reads get on a CPU: its contiguous run in the device
// tensor (see the header), for row-major layouts; a strided layout runs one element at a time
// except along its unit-stride dim.
double cpu_run_share(const ir::TensorType& dev, const ir::Shape& tile) {
  int64_t run = 1;
  if (dev.is_row_major()) {
    for (int d = tile.rank - 1; d >= 0; --d) {
      run *= tile[d];
      if (tile[d] != dev.shape[d]) break;
    }
  } else {
    for (int d = 0; d < tile.rank; ++d)
      if (dev.layout.strides[static_cast<size_t>(d)] == 1) run = tile[d];
  }
  const double bytes = static_cast<double>(run * dtype_bytes(dev.dtype));
  return bytes / (bytes + 256.0);
}

// The share of the f32 peak a block matmul C[m, n] (+)= A[m, k] B[k, n] reaches on a CPU: the
// device library's micro-kernel (runtime/cpu/mugraph_cpu.h) computes blocks of C of the
// target's cpu_matmul_rows x cpu_matmul_cols (8 x 32 with AVX-512; 8 x 32 when unset), so m and
// n round up to them, and per step of k (all of k up to 256, else 128) it loads and stores its
// block of C, about 8 FMA rows' worth: 1 / (1 + 8 / step).
double cpu_matmul_share(int64_t m, int64_t n, int64_t k, const target::Target& t) {
  const int64_t kMR = t.cpu_matmul_rows > 0 ? t.cpu_matmul_rows : 8;
  const int64_t kNR = t.cpu_matmul_cols > 0 ? t.cpu_matmul_cols : 32;
  const int64_t kKC = k <= 256 ? 256 : 128;
  const double rows = static_cast<double>(m) / static_cast<double>((m + kMR - 1) / kMR * kMR);
  const double cols = static_cast<double>(n) / static_cast<double>((n + kNR - 1) / kNR * kNR);
  return rows * cols / (1.0 + 8.0 / static_cast<double>(std::min(k, kKC)));
}

// Bytes, FLOPs and blocks of one graph-defined kernel.
void block_cost(const ir::KernelGraph& g, const ir::KernelOp& op, const target::Target& t,
                KernelCost& c) {
  const ir::BlockGraph& bg = *op.block;
  c.blocks = bg.grid.count();
  const double blocks = static_cast<double>(c.blocks);
  int saver = 0;
  // The type the CUDA generator stores a block tensor in, as a matmul reading it sees it: the
  // declared type, except a matmul's own result that is not f16 or is concat_matmul's (WMMA
  // has no bf16 accumulator fragment; the second term adds into the first's f32), kept in f32.
  std::vector<ir::DType> stored(bg.tensors.size());
  for (size_t i = 0; i < bg.tensors.size(); ++i) stored[i] = bg.tensors[i].type.dtype;
  for (const ir::BlockNode& n : bg.nodes)
    for (ir::TensorId o : n.outputs)
      if (block_result_kept_f32(n, stored[static_cast<size_t>(o)]))
        stored[static_cast<size_t>(o)] = ir::DType::kF32;
  for (const ir::BlockNode& n : bg.nodes) {
    const auto out0 = n.outputs.empty() ? -1 : n.outputs[0];
    const double times =
        out0 >= 0 && bg.phases[static_cast<size_t>(out0)] == ir::Phase::kInLoop
            ? static_cast<double>(bg.forloop) * blocks
            : blocks;
    switch (n.kind) {
      case ir::BlockNodeKind::kInputIterator: {
        const ir::TensorType& dev = g.tensor(op.inputs[static_cast<size_t>(n.input_index)]).type;
        int64_t chunk = dev.shape.numel();
        for (int gd = 0; gd < 3; ++gd)
          if (n.imap[gd] != ir::kReplica) chunk /= bg.grid[gd];
        const int64_t b = chunk * dtype_bytes(dev.dtype) * c.blocks;
        c.bytes += b;
        if (t.kind != target::Kind::kCpu) {
          c.slow_bytes += static_cast<double>(b);
          break;
        }
        // On a CPU the blocks that replicate a chunk (grid dims the imap leaves unmapped) read
        // it again from the caches when it fits a core's L2 (shared_memory_per_block): those
        // re-reads cost a quarter of a DRAM read.
        int64_t copies = 1;
        for (int gd = 0; gd < 3; ++gd)
          if (n.imap[gd] == ir::kReplica) copies *= bg.grid[gd];
        const int64_t chunk_bytes = chunk * dtype_bytes(dev.dtype);
        const double reread = chunk_bytes <= t.shared_memory_per_block
                                  ? static_cast<double>(b) * (1.0 - 1.0 / static_cast<double>(copies))
                                  : 0.0;
        c.slow_bytes += (static_cast<double>(b) - 0.75 * reread) /
                        cpu_run_share(dev, bg.tensors[static_cast<size_t>(out0)].type.shape);
        break;
      }
      case ir::BlockNodeKind::kOutputSaver: {
        const ir::TensorType& dev = g.tensor(op.outputs[static_cast<size_t>(saver++)]).type;
        const int64_t tile = bg.tensors[static_cast<size_t>(n.inputs[0])].type.shape.numel();
        c.bytes += tile * dtype_bytes(dev.dtype) * c.blocks;
        c.slow_bytes += static_cast<double>(tile * dtype_bytes(dev.dtype) * c.blocks);
        break;
      }
      case ir::BlockNodeKind::kAccumulator: {
        // One add (phi) or copy (concat) per element per iteration.
        const double e = static_cast<double>(
            bg.tensors[static_cast<size_t>(n.inputs[0])].type.shape.numel());
        if (n.fmap == ir::kReplica) c.other_flops += e * static_cast<double>(bg.forloop) * blocks;
        break;
      }
      case ir::BlockNodeKind::kCompute: {
        std::vector<ir::Shape> in;
        for (ir::TensorId id : n.inputs) in.push_back(bg.tensors[static_cast<size_t>(id)].type.shape);
        const auto [mm, other] =
            op_flops(n.op, in, bg.tensors[static_cast<size_t>(out0)].type.shape);
        const ir::TensorType& ta = bg.tensors[static_cast<size_t>(n.inputs[0])].type;
        double peak = peak_for(ta.dtype, t);
        if (mm > 0) {  // what the generator's tile matmul runs on (both terms of concat_matmul)
          const bool concat = n.inputs.size() == 4;
          for (int term = 0; term < (concat ? 2 : 1); ++term) {
            const ir::TensorType& a = bg.tensors[static_cast<size_t>(n.inputs[static_cast<size_t>(term)])].type;
            const ir::TensorType& b =
                bg.tensors[static_cast<size_t>(n.inputs[static_cast<size_t>(concat ? term + 2 : 1)])].type;
            const int ra = a.shape.rank, rb = b.shape.rank;
            if (t.kind == target::Kind::kCpu)
              peak = t.peak_flops_f32 * cpu_matmul_share(a.shape[ra - 2], b.shape[rb - 1], a.shape[ra - 1], t);
            else if (!tile_matmul_uses_tensor_cores(
                         a.shape[ra - 2], b.shape[rb - 1], a.shape[ra - 1],
                         stored[static_cast<size_t>(n.inputs[static_cast<size_t>(term)])],
                         stored[static_cast<size_t>(n.inputs[static_cast<size_t>(concat ? term + 2 : 1)])]))
              peak = t.peak_flops_f32;
          }
        }
        c.compute_s += mm * times / peak;
        c.matmul_flops += mm * times;
        c.other_flops += other * times;
        break;
      }
      case ir::BlockNodeKind::kThreadGraph: c.other_flops += thread_flops(*n.thread).second * times; break;
    }
  }
  const double n_sm = static_cast<double>(t.sm_count);
  // A GPU overlaps waves of blocks (eq. 5's smooth factor); a CPU's cores take the blocks in
  // equal static shares, so only a partial last round costs: ceil(blocks / cores) rounds.
  c.occupancy = t.kind == target::Kind::kCpu
                    ? std::ceil(blocks / n_sm) * n_sm / blocks
                    : (blocks + n_sm) / blocks;
}

}  // namespace

bool block_result_kept_f32(const ir::BlockNode& n, ir::DType declared) {
  if (n.kind != ir::BlockNodeKind::kCompute) return false;
  const ir::OpClass cls = ir::op_info(n.op).cls;
  return cls == ir::OpClass::kConcatMatmul || (cls == ir::OpClass::kMatmul && declared != ir::DType::kF16);
}

bool tile_matmul_uses_tensor_cores(int64_t m, int64_t n, int64_t k, ir::DType a, ir::DType b) {
  const bool types = a == b && (a == ir::DType::kF16 || a == ir::DType::kBF16);
  if (!types || k % 16 != 0) return false;
  return (m % 16 == 0 && n % 16 == 0) || (m % 8 == 0 && n % 32 == 0) || (m % 32 == 0 && n == 8);
}

std::pair<double, double> op_flops(ir::OpKind k, const std::vector<ir::Shape>& in,
                                   const ir::Shape& out) {
  const double n_out = static_cast<double>(out.numel());
  switch (ir::op_info(k).cls) {
    case ir::OpClass::kUnary:
    case ir::OpClass::kBinary: return {0.0, n_out};
    case ir::OpClass::kMatmul: {
      const ir::Shape& a = in[0];
      return {2.0 * n_out * static_cast<double>(a[a.rank - 1]), 0.0};
    }
    case ir::OpClass::kConcatMatmul: {
      const ir::Shape &w = in[0], &x = in[1];
      return {2.0 * n_out * static_cast<double>(w[w.rank - 1] + x[x.rank - 1]), 0.0};
    }
    case ir::OpClass::kSum: return {0.0, static_cast<double>(in[0].numel())};
    case ir::OpClass::kRepeat:
    case ir::OpClass::kReshape:
    case ir::OpClass::kTranspose:
    case ir::OpClass::kConcat: return {0.0, 0.0};
  }
  return {0.0, 0.0};
}

Cost estimate(const ir::KernelGraph& g, const target::Target& t) {
  MG_CHECK(t.memory_bandwidth > 0 && t.peak_flops_f32 > 0 && t.sm_count > 0,
           "target '" << t.name << "' has no bandwidth, peak or SM count");
  Cost cost;
  for (size_t k = 0; k < g.ops.size(); ++k) {
    const ir::KernelOp& op = g.ops[k];
    KernelCost c;
    c.op = static_cast<int>(k);
    c.graph_defined = op.graph_defined;
    if (op.graph_defined) {
      block_cost(g, op, t, c);
      c.compute_s += c.other_flops / t.peak_flops_f32;  // matmul time added per node
    } else {
      std::vector<ir::Shape> in;
      for (ir::TensorId id : op.inputs) {
        in.push_back(g.tensor(id).type.shape);
        c.bytes += g.tensor(id).type.bytes();
      }
      for (ir::TensorId id : op.outputs) c.bytes += g.tensor(id).type.bytes();
      c.slow_bytes = static_cast<double>(c.bytes);
      const auto [mm, other] = op_flops(op.op, in, g.tensor(op.outputs[0]).type.shape);
      c.matmul_flops = mm;
      c.other_flops = other;
      // cuBLAS takes operands of one type; mixed ones run the generator's f32 loop.
      bool same = true;
      for (ir::TensorId id : op.inputs) same = same && g.tensor(id).type.dtype == g.tensor(op.inputs[0]).type.dtype;
      c.compute_s = mm / (same ? peak_for(g.tensor(op.inputs[0]).type.dtype, t) : t.peak_flops_f32) +
                    other / t.peak_flops_f32;
    }
    c.memory_s = c.slow_bytes / t.memory_bandwidth;
    c.total_s = (c.memory_s + c.compute_s) * c.occupancy + t.kernel_launch_s;
    cost.bytes += c.bytes;
    cost.flops += c.matmul_flops + c.other_flops;
    cost.total_s += c.total_s;
    cost.kernels.push_back(c);
  }
  return cost;
}

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  MG_CHECK(a.size() == b.size(), "spearman: samples of different sizes");
  const size_t n = a.size();
  if (n < 2) return 0;
  auto ranks = [n](const std::vector<double>& v) {
    std::vector<size_t> idx(n);
    std::iota(idx.begin(), idx.end(), 0);
    std::sort(idx.begin(), idx.end(), [&](size_t i, size_t j) { return v[i] < v[j]; });
    std::vector<double> r(n);
    for (size_t i = 0; i < n;) {
      size_t j = i;
      while (j + 1 < n && v[idx[j + 1]] == v[idx[i]]) ++j;
      for (size_t q = i; q <= j; ++q) r[idx[q]] = (static_cast<double>(i + j) / 2.0) + 1.0;
      i = j + 1;
    }
    return r;
  };
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double mean = (static_cast<double>(n) + 1.0) / 2.0;
  double cov = 0, va = 0, vb = 0;
  for (size_t i = 0; i < n; ++i) {
    cov += (ra[i] - mean) * (rb[i] - mean);
    va += (ra[i] - mean) * (ra[i] - mean);
    vb += (rb[i] - mean) * (rb[i] - mean);
  }
  return va == 0 || vb == 0 ? 0 : cov / std::sqrt(va * vb);
}

PairAgreement agreement_beyond_noise(const std::vector<double>& model, const std::vector<double>& lo,
                                     const std::vector<double>& hi) {
  MG_CHECK(model.size() == lo.size() && lo.size() == hi.size(),
           "agreement_beyond_noise: samples of different sizes");
  PairAgreement a;
  int opposite = 0;
  for (size_t i = 0; i < model.size(); ++i)
    for (size_t j = i + 1; j < model.size(); ++j) {
      const bool i_faster = hi[i] < lo[j], j_faster = hi[j] < lo[i];
      if (!i_faster && !j_faster) continue;  // the ranges overlap: within the noise
      ++a.pairs;
      if (model[i] == model[j]) continue;
      ((model[i] < model[j]) == i_faster ? a.alike : opposite) += 1;
    }
  a.tau = a.pairs > 0 ? static_cast<double>(a.alike - opposite) / a.pairs : 0;
  return a;
}

}  // namespace mugraph::opt
