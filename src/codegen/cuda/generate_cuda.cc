#include "codegen/cuda/generate_cuda.h"

#include <algorithm>
#include <optional>
#include <set>

#include "codegen/cuda/emit_ops.h"
#include "codegen/cuda/tiles.h"
#include "opt/cost_model.h"
#include "opt/plan_memory.h"
#include "opt/schedule.h"
#include "opt/select_layout.h"

namespace mugraph::codegen::cuda {
namespace {

using ir::BlockNodeKind;

std::string dev(const ir::Tensor& t) { return device_name(t); }
std::string shm(const ir::Tensor& t) { return shared_name(t); }

constexpr int kGridThreads = 256;  // threads per block of the small kernel-level kernels

std::string params(const ir::KernelGraph& g, const ir::KernelOp& op) {
  return op_params(g, op, "__restrict__");
}

std::string args(const ir::KernelGraph& g, const ir::KernelOp& op) { return op_args(g, op); }

std::string grid_blocks(int64_t work) {
  return std::to_string(std::clamp<int64_t>((work + kGridThreads - 1) / kGridThreads, 1, 65536));
}

// ---- graph-defined kernels ------------------------------------------------------------------

class BlockKernel {
 public:
  BlockKernel(const ir::KernelGraph& g, const ir::KernelOp& op, const CudaOptions& o)
      : g_(g), op_(op), bg_(*op.block), opt_(o) {}

  Status plan(const std::string& where) {
    schedule_ = opt::schedule_block(bg_);
    layouts_ = opt::select_layouts(bg_);
    dtype_.assign(bg_.tensors.size(), ir::DType::kF32);
    streaming_.assign(bg_.tensors.size(), false);
    for (const ir::BlockNode& n : bg_.nodes)
      if (n.kind == BlockNodeKind::kInputIterator) {
        const auto t = static_cast<size_t>(n.outputs[0]);
        dtype_[t] = bg_.input_types[static_cast<size_t>(n.input_index)].dtype;
        streaming_[t] = n.fmap != ir::kReplica;
      }
    // Who reads each tensor (node indices).
    std::vector<std::vector<size_t>> readers(bg_.tensors.size());
    for (size_t i = 0; i < bg_.nodes.size(); ++i)
      for (ir::TensorId in : bg_.nodes[i].inputs) readers[static_cast<size_t>(in)].push_back(i);
    // Operands computed for tensor cores: an intermediate read only by matmuls is stored in the
    // kernel's 16-bit input type (when all inputs share one), as the unfused program would
    // store it in device memory, so that mg::matmul_tile can use tensor cores (matmul results:
    // below).
    std::optional<ir::DType> half;
    for (const ir::TensorType& t : bg_.input_types) {
      if (t.dtype == ir::DType::kF32 || (half && *half != t.dtype)) {
        half.reset();
        break;
      }
      half = t.dtype;
    }
    if (half)
      for (const ir::BlockNode& n : bg_.nodes) {
        if (n.kind != BlockNodeKind::kCompute && n.kind != BlockNodeKind::kThreadGraph) continue;
        if (is_matmul(n)) continue;
        for (ir::TensorId t : n.outputs) {
          const auto& r = readers[static_cast<size_t>(t)];
          if (!r.empty() && std::all_of(r.begin(), r.end(), [&](size_t i) { return is_matmul(node(i)); }))
            dtype_[static_cast<size_t>(t)] = *half;
        }
      }
    // Also stored in its declared type: a 16-bit tensor that any matmul reads (attention's
    // exp(S), read by the row sum too) and an f16 matmul result that a matmul reads (the GEMM
    // chain's (A B) D, LoRA's (X A) B). The float check verified the uGraph with every block
    // tensor rounded to its declared type (verify/interpret.h, eval_block_op), as the unfused
    // program stores it in device memory, so this is the verified arithmetic, and tensor cores
    // then take the chained matmul instead of an f32 x f16 SIMT loop. A matmul result only as
    // f16 (WMMA rounds its f32 accumulator into an f16 fragment; there is no bf16 one) and only
    // from one product written once (concat_matmul's second term adds into the first's f32).
    for (const ir::BlockNode& n : bg_.nodes) {
      if (n.kind != BlockNodeKind::kCompute && n.kind != BlockNodeKind::kThreadGraph) continue;
      for (ir::TensorId t : n.outputs) {
        const ir::DType declared = bg_.tensors[static_cast<size_t>(t)].type.dtype;
        if (declared != ir::DType::kF16 && declared != ir::DType::kBF16) continue;
        if (opt::block_result_kept_f32(n, declared)) continue;
        const auto& r = readers[static_cast<size_t>(t)];
        if (std::any_of(r.begin(), r.end(), [&](size_t i) { return is_matmul(node(i)); }))
          dtype_[static_cast<size_t>(t)] = declared;
      }
    }
    // A matmul whose result only feeds a summing accumulator accumulates straight into it
    // (tensor-core fragments load the accumulator, add, store back): no temporary tile, no
    // separate accumulation pass.
    into_.assign(bg_.nodes.size(), -1);
    in_registers_.assign(bg_.nodes.size(), false);
    fused_away_.assign(bg_.tensors.size(), false);
    fused_acc_.assign(bg_.nodes.size(), false);
    for (size_t p = 0; p < bg_.nodes.size(); ++p) {
      if (!is_matmul(bg_.nodes[p])) continue;
      const ir::TensorId t = bg_.nodes[p].outputs[0];
      const auto& r = readers[static_cast<size_t>(t)];
      if (r.size() != 1) continue;
      const ir::BlockNode& acc = bg_.nodes[r[0]];
      if (acc.kind != BlockNodeKind::kAccumulator || acc.fmap != ir::kReplica) continue;
      into_[p] = static_cast<int>(r[0]);
      fused_away_[static_cast<size_t>(t)] = true;
      fused_acc_[r[0]] = true;
    }
    threads_ = opt_.threads > 0 ? opt_.threads : block_threads(bg_);
    // Over a loop, such a product keeps its accumulator in registers (tensor-core fragments,
    // mg::RegisterAccumulator) and writes the tile once after the loop: one f32 matmul (not
    // concat_matmul) of 16-bit operands of one type, without batch dims other than 1s, whose
    // 16x16 fragments (k a multiple of 16) give each warp at most 8 of them, all such
    // accumulators of the kernel together (64 registers a thread; the fragments stay live
    // through the whole loop body).
    int fragments_left = 8;
    for (size_t p = 0; p < bg_.nodes.size(); ++p) {
      if (into_[p] < 0 || bg_.forloop <= 1 || bg_.nodes[p].inputs.size() != 2) continue;
      const ir::TensorId c_id = node(into_[p]).outputs[0];
      const ir::Shape& c = tensor(c_id).type.shape;
      const ir::Shape& a = tensor(bg_.nodes[p].inputs[0]).type.shape;
      const ir::DType ta = dtype_[static_cast<size_t>(bg_.nodes[p].inputs[0])];
      const ir::DType tb = dtype_[static_cast<size_t>(bg_.nodes[p].inputs[1])];
      const int64_t m = c[c.rank - 2], n = c[c.rank - 1], k = a[a.rank - 1];
      if (dtype_[static_cast<size_t>(c_id)] != ir::DType::kF32 || c.numel() != m * n ||
          ta != tb || ta == ir::DType::kF32 || m % 16 != 0 || n % 16 != 0 || k % 16 != 0 ||
          schedule_.stages[static_cast<size_t>(schedule_.stage_of[p])].region != opt::Region::kLoop)
        continue;
      const int frags = wmma_fragments_per_warp(static_cast<int>(m / 16), static_cast<int>(n / 16),
                                                threads_ / 32);
      if (frags > fragments_left) continue;
      fragments_left -= frags;
      in_registers_[p] = true;
    }
    // Tiles tensor-core fragments load or store (matmul operands and results, the accumulator
    // a matmul adds into) get rows padded against bank conflicts (pad_rows).
    std::vector<bool> fragment_tile(bg_.tensors.size(), false);
    for (size_t i = 0; i < bg_.nodes.size(); ++i) {
      const ir::BlockNode& n = bg_.nodes[i];
      if (is_matmul(n)) {
        for (ir::TensorId t : n.inputs) fragment_tile[static_cast<size_t>(t)] = true;
        fragment_tile[static_cast<size_t>(n.outputs[0])] = true;
      }
      if (fused_acc_[i]) fragment_tile[static_cast<size_t>(n.outputs[0])] = true;
    }
    const opt::LayoutPlan dense = layouts_;
    // Largest first: padded and double-buffered, then unpadded, then single buffers.
    const bool can_double = opt_.double_buffer && bg_.forloop > 1;
    constexpr std::pair<bool, bool> kTries[] = {
        {true, true}, {true, false}, {false, true}, {false, false}};  // {double-buffered, padded}
    for (const auto& [twice, pad] : kTries) {
      if (twice && !can_double) continue;
      double_buffer_ = twice;
      std::vector<opt::TensorStorage> storage;
      for (size_t t = 0; t < bg_.tensors.size(); ++t) {
        const ir::Shape& shape = bg_.tensors[t].type.shape;
        const int64_t eb = ir::dtype_bytes(dtype_[t]);
        layouts_.layout[t] = pad && fragment_tile[t] ? pad_rows(shape, dense.layout[t], eb)
                                                     : dense.layout[t];
        storage.push_back({fused_away_[t] ? 0 : extent(shape, layouts_.layout[t]) * eb,
                           double_buffer_ && streaming_[t] ? 2 : 1});
      }
      memory_ = opt::plan_memory(bg_, schedule_, storage, 128);
      if (memory_.total_bytes <= opt_.shared_limit) return ok_status();
    }
    return error(where, ": the block graph needs ", memory_.total_bytes,
                 " bytes of shared memory per block (planned; intermediates no matmul reads in 16 "
                 "bits are f32), the target "
                 "allows ",
                 opt_.shared_limit);
  }

  // The device tensors this kernel reads or writes in 16-byte chunks (cp.async, store_rows):
  // they must start 16-byte aligned.
  const std::set<ir::TensorId>& wide() const { return wide_; }

  void emit(Writer& w, const std::string& fn) {
    const ir::Dim3& grid = bg_.grid;
    w.line("// graph_defined grid=[" + std::to_string(grid[0]) + ", " + std::to_string(grid[1]) +
           ", " + std::to_string(grid[2]) + "] forloop=" + std::to_string(bg_.forloop) +
           " threads=" + std::to_string(threads_) + " shared=" +
           std::to_string(memory_.total_bytes) + " bytes" +
           (memory_.optimal ? " (optimal plan)" : "") +
           (double_buffer_ ? ", streaming tiles double-buffered" : ""));
    w.open("__global__ void __launch_bounds__(" + std::to_string(threads_) + ") " + fn +
           "_kernel(" + params(g_, op_) + ")");
    w.line("extern __shared__ __align__(128) unsigned char smem[];");
    w.line("const int64_t bx = blockIdx.x, by = blockIdx.y, bz = blockIdx.z;");
    w.line("(void)bx; (void)by; (void)bz;");
    for (size_t t = 0; t < bg_.tensors.size(); ++t) {
      if (memory_.live[t].first < 0 || fused_away_[t]) continue;
      const std::string ty = storage_type(dtype_[t]);
      w.line(ty + "* const " + buffer_name(t) + " = reinterpret_cast<" + ty + "*>(smem + " +
             std::to_string(memory_.offset[t]) + ");  // " + bg_.tensors[t].type.shape.to_string() +
             (layouts_.transposed[t] ? " column-major" : "") +
             (is_double(t) ? ", 2 buffers" : ""));
    }
    // Prologue: loop-invariant tiles, fetched once.
    for (const Stage& st : stages(opt::Region::kPrologue))
      for (int i : st) emit_iterator(w, node(i), "0", shm(tensor(node(i).outputs[0])));
    w.line("mg::cp_async_commit();");
    if (double_buffer_) {
      w.line("// first tiles of the loop, into buffer 0");
      for (const ir::BlockNode& n : streaming_iterators()) emit_iterator(w, n, "0", buffer_name(n.outputs[0]));
      w.line("mg::cp_async_commit();");
    }
    for (size_t p = 0; p < bg_.nodes.size(); ++p)
      if (in_registers_[p]) {
        const ir::Shape& c = tensor(node(into_[p]).outputs[0]).type.shape;
        w.line("mg::RegisterAccumulator<" + std::to_string(c[c.rank - 2]) + ", " +
               std::to_string(c[c.rank - 1]) + ", " + std::to_string(threads_) + "> " +
               register_accumulator(p) + ";  // " + tensor(node(into_[p]).outputs[0]).name +
               "'s sum, in registers across the loop");
      }
    w.open("for (int it = 0; it < " + std::to_string(bg_.forloop) + "; ++it)");
    const std::vector<Stage> loop = stages(opt::Region::kLoop);
    if (double_buffer_) {
      for (const ir::BlockNode& n : streaming_iterators()) {
        const auto t = static_cast<size_t>(n.outputs[0]);
        w.line(storage_type(dtype_[t]) + "* const " + shm(bg_.tensors[t]) + " = " + buffer_name(t) +
               " + (it & 1) * " + std::to_string(copy_elems(t)) + ";");
      }
      w.open("if (it + 1 < " + std::to_string(bg_.forloop) + ")");
      w.line("// prefetch the next iteration's tiles into the other buffer");
      for (const ir::BlockNode& n : streaming_iterators()) {
        const auto t = static_cast<size_t>(n.outputs[0]);
        emit_iterator(w, n, "(it + 1)",
                      "(" + buffer_name(t) + " + ((it + 1) & 1) * " + std::to_string(copy_elems(t)) + ")");
      }
      w.close();
      w.line("mg::cp_async_commit();");
      w.line("mg::cp_async_wait<1>();");
    } else {
      for (const ir::BlockNode& n : streaming_iterators())
        emit_iterator(w, n, "it", shm(tensor(n.outputs[0])));
      w.line("mg::cp_async_commit();");
      w.line("mg::cp_async_wait<0>();");
    }
    // The wait covers only this thread's copies: the barrier ending loop stage 0 (the loads)
    // makes every thread's tiles, the prologue's included, visible to the block. It is there
    // even when no streaming iterator exists (forloop = 1), and it ends the iteration when the
    // loop holds no op.
    w.line("__syncthreads();");
    for (const Stage& st : loop) {
      bool any = false;  // a stage that ran code ends with a barrier
      for (int i : st)
        if (node(i).kind != BlockNodeKind::kInputIterator) {
          emit_node(w, node(i));
          any = any || !fused_acc_[static_cast<size_t>(i)];  // fused: the matmul did it
        }
      if (any) w.line("__syncthreads();");
    }
    w.close();
    bool stored = false;
    for (size_t p = 0; p < bg_.nodes.size(); ++p)
      if (in_registers_[p]) {
        const Operand c = local(node(into_[p]).outputs[0]);
        const int r = c.shape.rank;
        w.line(register_accumulator(p) + ".store(mg::Mat<float>{" + c.ptr + " + " + c.base + ", " +
               std::to_string(c.strides[static_cast<size_t>(r - 2)]) + ", " +
               std::to_string(c.strides[static_cast<size_t>(r - 1)]) + "});");
        stored = true;
      }
    if (stored) w.line("__syncthreads();");
    const std::vector<Stage> epi = stages(opt::Region::kEpilogue);
    for (size_t k = 0; k < epi.size(); ++k) {
      if (k > 0) w.line("__syncthreads();");
      for (int i : epi[k]) emit_node(w, node(i));
    }
    w.close();
    w.blank();
    // Host launcher.
    w.open("static int " + fn + "(cudaStream_t stream, " + params(g_, op_) + ")");
    if (memory_.total_bytes > 48 * 1024) {
      w.line("static const cudaError_t attr = cudaFuncSetAttribute(" + fn +
             "_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, " +
             std::to_string(memory_.total_bytes) + ");");
      w.line("if (attr != cudaSuccess) return static_cast<int>(attr);");
    }
    w.line(fn + "_kernel<<<dim3(" + std::to_string(grid[0]) + ", " + std::to_string(grid[1]) +
           ", " + std::to_string(grid[2]) + "), " + std::to_string(threads_) + ", " +
           std::to_string(memory_.total_bytes) + ", stream>>>(" + args(g_, op_) + ");");
    w.line("return static_cast<int>(cudaGetLastError());");
    w.close();
  }

 private:
  using Stage = std::vector<int>;

  const ir::BlockNode& node(int i) const { return bg_.nodes[static_cast<size_t>(i)]; }
  const ir::Tensor& tensor(ir::TensorId t) const { return bg_.tensors[static_cast<size_t>(t)]; }
  static bool is_matmul(const ir::BlockNode& n) {
    return n.kind == BlockNodeKind::kCompute && (ir::op_info(n.op).cls == ir::OpClass::kMatmul ||
                                                 ir::op_info(n.op).cls == ir::OpClass::kConcatMatmul);
  }
  bool is_double(size_t t) const { return double_buffer_ && streaming_[t]; }
  std::string buffer_name(size_t t) const {
    return shm(bg_.tensors[t]) + (is_double(t) ? "_buf" : "");
  }
  std::string buffer_name(ir::TensorId t) const { return buffer_name(static_cast<size_t>(t)); }
  // Elements between the two buffers of a double-buffered tile (one aligned copy).
  int64_t copy_elems(size_t t) const {
    return memory_.size[t] / 2 / ir::dtype_bytes(dtype_[t]);
  }

  std::vector<Stage> stages(opt::Region r) const {
    std::vector<Stage> v;
    for (const opt::Stage& s : schedule_.stages)
      if (s.region == r) v.push_back(s.nodes);
    return v;
  }
  std::vector<ir::BlockNode> streaming_iterators() const {
    std::vector<ir::BlockNode> v;
    for (const ir::BlockNode& n : bg_.nodes)
      if (n.kind == BlockNodeKind::kInputIterator && n.fmap != ir::kReplica) v.push_back(n);
    return v;
  }

  Operand local(ir::TensorId t, const std::string& ptr) const {
    Operand o;
    o.ptr = ptr;
    o.dtype = dtype_[static_cast<size_t>(t)];
    o.shape = tensor(t).type.shape;
    o.strides = layouts_.layout[static_cast<size_t>(t)].strides;
    return o;
  }
  Operand local(ir::TensorId t) const { return local(t, shm(tensor(t))); }
  static std::string register_accumulator(size_t matmul) { return "acc" + std::to_string(matmul); }

  // Loads iteration `it`'s tile of an input into `dst`: 16-byte cp.async rows when both sides
  // share a contiguous innermost dim with 16-byte aligned rows, else a converting element copy.
  void emit_iterator(Writer& w, const ir::BlockNode& n, const std::string& it,
                     const std::string& dst) {
    const ir::TensorId src = op_.inputs[static_cast<size_t>(n.input_index)];
    const Operand d = device_operand(dev(g_.tensor(src)), g_.tensor(src).type);
    const ir::Shape& tile = tensor(n.outputs[0]).type.shape;
    std::vector<std::string> off = block_offsets(n.imap, d.shape, bg_.grid);
    if (n.fmap != ir::kReplica)
      off[static_cast<size_t>(n.fmap)] =
          add_expr(off[static_cast<size_t>(n.fmap)], mul_expr(it, tile[n.fmap]));
    const Operand from = sub_view(d, tile, off);
    const Operand to = local(n.outputs[0], dst);
    w.line("// " + tensor(n.outputs[0]).name + " = input_iterator(" + g_.tensor(src).name +
           ", imap=" + n.imap.to_string() + ", fmap=" + ir::map_target_name(n.fmap) + ")");
    const std::optional<Rows> r =
        rows_of(tile, from, to, 16 / ir::dtype_bytes(to.dtype), /*both_aligned=*/true);
    if (!r) {
      emit_copy(w, from, to, Loop::kBlock);
      return;
    }
    wide_.insert(src);
    w.line("mg::copy_rows_async(" + to.ptr + ", " + from.ptr + ", " + std::to_string(r->rows) +
           ", " + std::to_string(tile[r->inner]) + ", [&](int r) -> int64_t { return " +
           element(from, r->idx) + "; }, [&](int r) -> int { return " + element(to, r->idx) +
           "; });");
  }

  void emit_node(Writer& w, const ir::BlockNode& n) {
    switch (n.kind) {
      case BlockNodeKind::kInputIterator: return;  // emitted with the loop's loads
      case BlockNodeKind::kAccumulator:
        if (fused_acc_[static_cast<size_t>(&n - bg_.nodes.data())])
          w.line("// " + tensor(n.outputs[0]).name + " = accumulator(" + tensor(n.inputs[0]).name +
                 ", fmap=phi): accumulated by the matmul above");
        else
          emit_accumulator(w, n);
        return;
      case BlockNodeKind::kOutputSaver: emit_saver(w, n); return;
      case BlockNodeKind::kThreadGraph: {
        const ir::ThreadGraph& tg = *n.thread;
        for (size_t o = 0; o < tg.outputs.size(); ++o) {
          const ThreadOutput chain = thread_output(tg, o, scalar_expr);
          std::vector<Operand> in;
          for (size_t i : chain.inputs) in.push_back(local(n.inputs[i]));
          w.line("// " + tensor(n.outputs[o]).name + " = thread graph (fused in registers)");
          emit_map(w, local(n.outputs[o]), in, Loop::kBlock, chain.value);
        }
        return;
      }
      case BlockNodeKind::kCompute: {
        std::vector<Operand> in;
        std::string names;
        for (ir::TensorId t : n.inputs) {
          in.push_back(local(t));
          names += (names.empty() ? "" : ", ") + tensor(t).name;
        }
        const auto p = static_cast<size_t>(&n - bg_.nodes.data());
        if (into_[p] >= 0) {
          const ir::TensorId acc = node(into_[p]).outputs[0];
          w.line("// " + tensor(acc).name + " (+)= " + std::string(ir::op_name(n.op)) + "(" +
                 names + "), accumulated in place of " + tensor(n.outputs[0]).name);
          emit_matmul_tile(w, in, local(acc), "it > 0", threads_,
                           in_registers_[p] ? register_accumulator(p) : "");
          return;
        }
        w.line("// " + tensor(n.outputs[0]).name + " = " + std::string(ir::op_name(n.op)) + "(" +
               names + ")");
        emit_op(w, n.op, n.attrs, in, local(n.outputs[0]), Loop::kBlock, threads_);
        return;
      }
    }
  }

  void emit_accumulator(Writer& w, const ir::BlockNode& n) {
    const Operand x = local(n.inputs[0]), acc = local(n.outputs[0]);
    w.line("// " + tensor(n.outputs[0]).name + " = accumulator(" + tensor(n.inputs[0]).name +
           ", fmap=" + ir::map_target_name(n.fmap) + ")");
    if (n.fmap == ir::kReplica) {
      // The same thread owns the same elements in every iteration: no barrier between the
      // first write and the later additions.
      w.open("if (it == 0)");
      emit_copy(w, x, acc, Loop::kBlock);
      w.close();
      w.open("else");
      emit_map(w, acc, {acc, x}, Loop::kBlock,
               [](const std::vector<std::string>& v) { return v[0] + " + " + v[1]; });
      w.close();
      return;
    }
    std::vector<std::string> off(static_cast<size_t>(x.shape.rank), "0");
    off[static_cast<size_t>(n.fmap)] = mul_expr("it", x.shape[n.fmap]);
    emit_copy(w, x, sub_view(acc, x.shape, off), Loop::kBlock);
  }

  void emit_saver(Writer& w, const ir::BlockNode& n) {
    int index = 0;
    while (&bg_.nodes[static_cast<size_t>(bg_.savers[static_cast<size_t>(index)])] != &n) ++index;
    const ir::TensorId dst = op_.outputs[static_cast<size_t>(index)];
    const Operand d = device_operand(dev(g_.tensor(dst)), g_.tensor(dst).type);
    const ir::Shape& tile = tensor(n.inputs[0]).type.shape;
    w.line("// output_saver(" + tensor(n.inputs[0]).name + ", omap=" + n.omap.to_string() +
           ") -> " + g_.tensor(dst).name);
    const Operand from = local(n.inputs[0]);
    const Operand to = sub_view(d, tile, block_offsets(n.omap, d.shape, bg_.grid));
    // 16-byte stores of whole chunks when the device rows allow them (mg::store_rows).
    const std::optional<Rows> r =
        rows_of(tile, to, from, 16 / ir::dtype_bytes(to.dtype), /*both_aligned=*/false);
    if (!r) {
      emit_copy(w, from, to, Loop::kBlock);
      return;
    }
    wide_.insert(dst);
    w.line("mg::store_rows(" + to.ptr + ", " + from.ptr + ", " + std::to_string(r->rows) + ", " +
           std::to_string(tile[r->inner]) + ", [&](int r) -> int64_t { return " +
           element(to, r->idx) + "; }, [&](int r) -> int { return " + element(from, r->idx) +
           "; });");
  }

  const ir::KernelGraph& g_;
  const ir::KernelOp& op_;
  const ir::BlockGraph& bg_;
  const CudaOptions& opt_;
  int threads_ = 128;
  opt::BlockSchedule schedule_;
  opt::LayoutPlan layouts_;
  opt::MemoryPlan memory_;
  std::vector<ir::DType> dtype_;
  std::vector<bool> streaming_;
  std::vector<int> into_;  // per node: the accumulator node a matmul accumulates into, or -1
  std::vector<bool> fused_away_;  // per tensor: a matmul result that is never materialized
  std::vector<bool> fused_acc_;   // per node: an accumulator its matmul fills directly
  std::vector<bool> in_registers_;  // per node: a matmul whose accumulator stays in registers
  bool double_buffer_ = false;
  std::set<ir::TensorId> wide_;
};

// ---- predefined kernels ---------------------------------------------------------------------

// A matmul operand as cuBLAS sees it: op N/T, leading dim, stride between batch elements.
struct Gemm {
  bool transpose = false;
  int64_t ld = 0, batch_stride = 0;
};

// `o` (rank >= 2) as a strided batch of matrices over `batch` (the output's leading dims), or
// nothing when its layout does not fit (then the generator's own kernel runs it).
std::optional<Gemm> gemm_operand(const Operand& o, const ir::Shape& batch) {
  const int r = o.shape.rank;
  const int64_t rows = o.shape[r - 2], cols = o.shape[r - 1];
  const int64_t s0 = o.strides[static_cast<size_t>(r - 2)], s1 = o.strides[static_cast<size_t>(r - 1)];
  Gemm gm;
  if (s1 == 1 && s0 >= std::max<int64_t>(1, cols)) {
    gm.ld = s0;
  } else if (s0 == 1 && s1 >= std::max<int64_t>(1, rows)) {
    gm.transpose = true;
    gm.ld = s1;
  } else {
    return std::nullopt;
  }
  // Batch dims: all broadcast (stride 0), or all present and flattening to one stride.
  const int lead = r - 2;
  bool all_one = true;
  for (int d = 0; d < lead; ++d) all_one = all_one && o.shape[d] == 1;
  if (all_one) return gm;
  if (lead != batch.rank) return std::nullopt;
  for (int d = 0; d < lead; ++d)
    if (o.shape[d] != batch[d]) return std::nullopt;
  gm.batch_stride = o.strides[static_cast<size_t>(lead - 1)];
  for (int d = 0; d + 1 < lead; ++d)
    if (o.strides[static_cast<size_t>(d)] != o.strides[static_cast<size_t>(d + 1)] * o.shape[d + 1])
      return std::nullopt;
  return gm;
}

std::string cuda_type(ir::DType t) {
  switch (t) {
    case ir::DType::kF16: return "CUDA_R_16F";
    case ir::DType::kBF16: return "CUDA_R_16BF";
    case ir::DType::kF32: return "CUDA_R_32F";
  }
  return "CUDA_R_32F";
}

// Emits the cuBLAS calls of a kernel-level matmul / concat_matmul; false if cuBLAS cannot take
// it (mixed operand types, a layout that is not a strided batch of matrices).
bool emit_cublas(Writer& w, const std::vector<Operand>& in, const Operand& out) {
  const int r = out.shape.rank;
  ir::Shape batch;
  batch.rank = r - 2;
  int64_t count = 1;
  for (int d = 0; d < batch.rank; ++d) count *= (batch[d] = out.shape[d]);
  const std::optional<Gemm> c = gemm_operand(out, batch);
  if (!c || c->transpose) return false;
  const bool concat = in.size() == 4;
  struct Term {
    const Operand* a;
    const Operand* b;
    Gemm ga, gb;
  };
  std::vector<Term> terms;
  for (int t = 0; t < (concat ? 2 : 1); ++t) {
    const Operand& a = in[static_cast<size_t>(concat ? t : 0)];
    const Operand& b = in[static_cast<size_t>(concat ? t + 2 : 1)];
    if (a.dtype != b.dtype || (out.dtype != a.dtype && out.dtype != ir::DType::kF32)) return false;
    const std::optional<Gemm> ga = gemm_operand(a, batch), gb = gemm_operand(b, batch);
    if (!ga || !gb) return false;
    terms.push_back({&a, &b, *ga, *gb});
  }
  const int64_t m = out.shape[r - 2], n = out.shape[r - 1];
  w.line("cublasHandle_t h = mg_cublas(stream);");
  w.line("if (h == nullptr) return 1000 + static_cast<int>(CUBLAS_STATUS_NOT_INITIALIZED);");
  w.line("const float one = 1.f, zero = 0.f;");
  w.line("cublasStatus_t st;");
  for (size_t t = 0; t < terms.size(); ++t) {
    const Term& tm = terms[t];
    const int64_t k = tm.a->shape[tm.a->shape.rank - 1];
    // Row-major C = A B is column-major C^T = B^T A^T: B comes first.
    w.line("st = cublasGemmStridedBatchedEx(h, " + std::string(tm.gb.transpose ? "CUBLAS_OP_T" : "CUBLAS_OP_N") +
           ", " + (tm.ga.transpose ? "CUBLAS_OP_T" : "CUBLAS_OP_N") + ", " + std::to_string(n) + ", " +
           std::to_string(m) + ", " + std::to_string(k) + ", &one, " + tm.b->ptr + ", " +
           cuda_type(tm.b->dtype) + ", " + std::to_string(tm.gb.ld) + ", " +
           std::to_string(tm.gb.batch_stride) + ", " + tm.a->ptr + ", " + cuda_type(tm.a->dtype) +
           ", " + std::to_string(tm.ga.ld) + ", " + std::to_string(tm.ga.batch_stride) + ", " +
           (t == 0 ? "&zero" : "&one") + ", " + out.ptr + ", " + cuda_type(out.dtype) + ", " +
           std::to_string(c->ld) + ", " + std::to_string(c->batch_stride) + ", " +
           std::to_string(count) + ", CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);");
    w.line("if (st != CUBLAS_STATUS_SUCCESS) return 1000 + static_cast<int>(st);");
  }
  w.line("return 0;");
  return true;
}

void emit_predefined(Writer& w, const ir::KernelGraph& g, const ir::KernelOp& op,
                     const std::string& fn) {
  std::vector<Operand> in;
  std::string names;
  for (ir::TensorId id : op.inputs) {
    in.push_back(device_operand(dev(g.tensor(id)), g.tensor(id).type));
    names += (names.empty() ? "" : ", ") + g.tensor(id).name;
  }
  const ir::Tensor& out_t = g.tensor(op.outputs[0]);
  const Operand out = device_operand(dev(out_t), out_t.type);
  const std::string what = out_t.name + " = " + std::string(ir::op_name(op.op)) + "(" + names + ")";
  const ir::OpClass cls = ir::op_info(op.op).cls;
  if (cls == ir::OpClass::kMatmul || cls == ir::OpClass::kConcatMatmul) {
    Writer body;
    if (emit_cublas(body, in, out)) {
      w.line("// " + what + " through cuBLAS");
      w.open("static int " + fn + "(cudaStream_t stream, " + params(g, op) + ")");
      w.text(body.str());
      w.close();
      return;
    }
  }
  w.line("// " + what);
  w.open("__global__ void __launch_bounds__(" + std::to_string(kGridThreads) + ") " + fn +
         "_kernel(" + params(g, op) + ")");
  emit_op(w, op.op, op.attrs, in, out, Loop::kGrid);
  w.close();
  const GridWork work = grid_work(op.op, op.attrs, in, kGridThreads);
  w.open("static int " + fn + "(cudaStream_t stream, " + params(g, op) + ")");
  w.line(fn + "_kernel<<<" + grid_blocks(out_t.type.shape.numel() * work.per_output) + ", " +
         std::to_string(kGridThreads) + ", " + std::to_string(work.smem_bytes) + ", stream>>>(" +
         args(g, op) + ");");
  w.line("return static_cast<int>(cudaGetLastError());");
  w.close();
}

// ---- entry ------------------------------------------------------------------------------------

Module::Entry emit_entry(Writer& w, const ir::KernelGraph& g, const std::string& name,
                         const std::set<ir::TensorId>& wide) {
  const EntryBinding b = bind_entry(g);
  Module::Entry e{"mg_entry_" + name, b.workspace_bytes, static_cast<int>(g.inputs.size()),
                  static_cast<int>(g.outputs.size())};
  // Copies of outputs that are inputs or repeated: one small kernel each.
  for (size_t i : b.copied_outputs) {
    const ir::Tensor& t = g.tensor(g.outputs[i]);
    const std::string ty = storage_type(t.type.dtype);
    w.open("__global__ void " + name + "_copy" + std::to_string(i) + "(const " + ty +
           "* __restrict__ from, " + ty + "* __restrict__ to)");
    Operand to = device_operand("to", t.type);
    to.strides = ir::row_major(t.type.shape).strides;
    emit_copy(w, device_operand("from", t.type), to, Loop::kGrid);
    w.close();
    w.blank();
  }
  w.open("extern \"C\" int " + e.symbol + "(void* const* in, void* const* out, void* ws_, void* stream_)");
  w.line("cudaStream_t stream = static_cast<cudaStream_t>(stream_);");
  w.line("char* const ws = static_cast<char*>(ws_);");
  w.line("(void)ws;");
  // Graph-defined kernels load tiles with 16-byte cp.async and store 16-byte chunks at tensor
  // addresses plus multiples of 16 bytes: a tensor they access so that is not 16-byte aligned
  // (a view into the middle of a buffer) is refused before any launch, with a clean error code.
  std::set<std::string> checks;
  for (ir::TensorId id : wide) {
    const EntryBinding::Source& src = b.tensors[static_cast<size_t>(id)];
    const std::string slot = "[" + std::to_string(src.index) + "]";
    checks.insert(src.from == EntryBinding::From::kInput    ? "in" + slot
                  : src.from == EntryBinding::From::kOutput ? "out" + slot
                                                            : std::string("ws_"));
  }
  for (const std::string& p : checks)
    w.line("if (reinterpret_cast<uintptr_t>(" + p +
           ") % 16 != 0) return static_cast<int>(cudaErrorMisalignedAddress);");
  emit_bindings(w, g, b);
  w.line("int e = 0;");
  for (size_t k = 0; k < g.ops.size(); ++k)
    w.line("if ((e = " + name + "_op" + std::to_string(k) + "(stream, " + args(g, g.ops[k]) +
           ")) != 0) return e;");
  for (size_t i : b.copied_outputs) {
    const ir::Tensor& t = g.tensor(g.outputs[i]);
    const std::string ty = storage_type(t.type.dtype) + "*";
    w.line(name + "_copy" + std::to_string(i) + "<<<" + grid_blocks(t.type.shape.numel()) + ", " +
           std::to_string(kGridThreads) + ", 0, stream>>>(" + dev(t) + ", static_cast<" + ty +
           ">(out[" + std::to_string(i) + "]));");
  }
  w.line("return static_cast<int>(cudaGetLastError());");
  w.close();
  return e;
}

const char* kPreamble = R"(#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

)";

// One cuBLAS handle per module, created on first use and bound to the caller's stream; the
// loader destroys it (mg_release) before unloading the module. The module's state (this handle,
// the shared-memory attributes set once) belongs to one device: the loaders use one.
const char* kHelpers = R"(namespace {

cublasHandle_t mg_handle = nullptr;

[[maybe_unused]] cublasHandle_t mg_cublas(cudaStream_t stream) {
  if (mg_handle == nullptr && cublasCreate(&mg_handle) != CUBLAS_STATUS_SUCCESS) return nullptr;
  cublasSetStream(mg_handle, stream);
  return mg_handle;
}

}  // namespace

// Frees what the module allocated for itself (the cuBLAS handle and its workspace).
extern "C" void mg_release() {
  if (mg_handle != nullptr) cublasDestroy(mg_handle);
  mg_handle = nullptr;
}

// Makes a device current for this module's CUDA runtime (a caller with its own runtime, such as
// PyTorch, says which device its pointers and stream belong to).
extern "C" int mg_set_device(int ordinal) { return static_cast<int>(cudaSetDevice(ordinal)); }

// What an entry's non-zero return code means.
extern "C" const char* mg_error_string(int code) {
  if (code >= 1000) return cublasGetStatusString(static_cast<cublasStatus_t>(code - 1000));
  return cudaGetErrorString(static_cast<cudaError_t>(code));
}
)";

}  // namespace

CudaOptions options_for(const target::Target& t) {
  CudaOptions o;
  o.shared_limit = t.shared_memory_per_block;
  return o;
}

Result<Module> generate_cuda(const std::vector<NamedGraph>& graphs, const CudaOptions& options) {
  Module m;
  Writer w;
  w.line("// Generated by mugraph (codegen/cuda). One entry per uGraph; see generate_cuda.h.");
  w.text(kPreamble);
  w.line(std::string("#include \"") + kDeviceLibraryHeader + "\"");
  w.blank();
  w.text(kHelpers);
  std::set<ir::TensorId> wide;  // per graph: the device tensors accessed in 16-byte chunks
  MG_RETURN_IF_ERROR(emit_graphs(
      w, m, graphs, "cuda",
      [&](Writer& w, const ir::KernelGraph& g, size_t k, const std::string& fn) -> Status {
        if (!g.ops[k].graph_defined) {
          emit_predefined(w, g, g.ops[k], fn);
          return {};
        }
        BlockKernel bk(g, g.ops[k], options);
        MG_RETURN_IF_ERROR(bk.plan("codegen/cuda: graph_defined op " + std::to_string(k) +
                                   " producing '" + g.tensor(g.ops[k].outputs[0]).name + "'"));
        bk.emit(w, fn);
        wide.insert(bk.wide().begin(), bk.wide().end());
        return {};
      },
      [&](Writer& w, const ir::KernelGraph& g, const std::string& name) {
        Module::Entry e = emit_entry(w, g, name, wide);
        wide.clear();  // the next graph's
        return e;
      }));
  return m;
}

}  // namespace mugraph::codegen::cuda
