#include "codegen/cpu/generate_cpu.h"

#include <algorithm>
#include <map>
#include <set>

#include "codegen/cpu/emit_ops.h"

namespace mugraph::codegen::cpu {
namespace {

using ir::BlockNodeKind;

std::string dev(const ir::Tensor& t) { return device_name(t); }
std::string shm(const ir::Tensor& t) { return shared_name(t); }

std::string params(const ir::KernelGraph& g, const ir::KernelOp& op) {
  return op_params(g, op, "__restrict");
}

std::string args(const ir::KernelGraph& g, const ir::KernelOp& op) { return op_args(g, op); }

// Emits one block graph: the buffers, the for-loop, the post-loop ops and the savers.
class BlockEmitter {
 public:
  BlockEmitter(const ir::KernelGraph& g, const ir::KernelOp& op, Writer& w)
      : g_(g), op_(op), bg_(*op.block), w_(w) {
    plan_in_place();
  }

  // Declares the buffers; returns the arena size in floats.
  int64_t declare_buffers() {
    int64_t offset = 0;
    for (size_t i = 0; i < bg_.tensors.size(); ++i) {
      const ir::Tensor& t = bg_.tensors[i];
      const auto id = static_cast<ir::TensorId>(i);
      if (direct_.count(id) > 0 || accumulate_into_.count(id) > 0) continue;  // never stored
      w_.line("float* const " + shm(t) + " = smem + " + std::to_string(offset) + ";  // " +
              t.type.shape.to_string());
      offset += (t.type.shape.numel() + 15) / 16 * 16;  // 64-byte aligned tiles
    }
    return offset;
  }

  // The iterations [it_begin, it_end) of the block's for-loop: the loop-invariant loads before
  // the first, the post-loop ops and savers after the last (the caller interleaves blocks).
  void body() {
    // Loop-invariant tiles (fmap = phi) are the same in every iteration: load them once.
    w_.open("if (it_begin == 0)");
    for (const ir::BlockNode& n : bg_.nodes)
      if (n.kind == BlockNodeKind::kInputIterator && n.fmap == ir::kReplica && !direct(n))
        emit_iterator(n);
    w_.close();
    w_.open("for (int64_t it = it_begin; it < it_end; ++it)");
    for (const ir::BlockNode& n : bg_.nodes)
      if (bg_.forloop > 1 && n.kind == BlockNodeKind::kInputIterator && n.fmap != ir::kReplica)
        emit_prefetch_next(n);
    for (const ir::BlockNode& n : bg_.nodes) {
      if (n.kind == BlockNodeKind::kInputIterator && n.fmap != ir::kReplica && !direct(n))
        emit_iterator(n);
      if (n.kind == BlockNodeKind::kAccumulator && fed_in_place_.count(n.outputs[0]) == 0)
        emit_accumulator(n);
      if (is_op(n) && phase(n.outputs[0]) == ir::Phase::kInLoop) emit_node(n);
    }
    w_.close();
    w_.open("if (it_end == " + std::to_string(bg_.forloop) + ")");
    for (const ir::BlockNode& n : bg_.nodes)
      if (is_op(n) && phase(n.outputs[0]) == ir::Phase::kPostLoop) emit_node(n);
    int saver = 0;
    for (const ir::BlockNode& n : bg_.nodes)
      if (n.kind == BlockNodeKind::kOutputSaver) emit_saver(n, saver++);
    w_.close();
  }

 private:
  static bool is_op(const ir::BlockNode& n) {
    return n.kind == BlockNodeKind::kCompute || n.kind == BlockNodeKind::kThreadGraph;
  }
  static bool is_matmul(const ir::BlockNode& n) {
    if (n.kind != BlockNodeKind::kCompute) return false;
    const ir::OpClass c = ir::op_info(n.op).cls;
    return c == ir::OpClass::kMatmul || c == ir::OpClass::kConcatMatmul;
  }

  // Two copies the CPU does not need: an input iterator whose tile only matmuls read is read
  // in place from device memory (the matmul packs and converts it anyway), and a matmul whose
  // result only a sum-over-iterations accumulator (fmap = phi) reads adds into the accumulator.
  void plan_in_place() {
    std::vector<std::vector<const ir::BlockNode*>> users(bg_.tensors.size());
    for (const ir::BlockNode& n : bg_.nodes)
      for (ir::TensorId t : n.inputs) users[static_cast<size_t>(t)].push_back(&n);
    for (const ir::BlockNode& n : bg_.nodes) {
      if (n.kind == BlockNodeKind::kInputIterator) {
        const auto& u = users[static_cast<size_t>(n.outputs[0])];
        if (!u.empty() && std::all_of(u.begin(), u.end(), [](const ir::BlockNode* x) { return is_matmul(*x); }))
          direct_.emplace(n.outputs[0], iterator_view(n));
      }
      if (is_matmul(n) && phase(n.outputs[0]) == ir::Phase::kInLoop) {
        const auto& u = users[static_cast<size_t>(n.outputs[0])];
        if (u.size() == 1 && u[0]->kind == BlockNodeKind::kAccumulator && u[0]->fmap == ir::kReplica) {
          accumulate_into_.emplace(n.outputs[0], u[0]->outputs[0]);
          fed_in_place_.insert(u[0]->outputs[0]);
        }
      }
    }
  }
  bool direct(const ir::BlockNode& iterator) const { return direct_.count(iterator.outputs[0]) > 0; }

  // A tensor as an operand: its device view when read in place, else its buffer.
  Operand operand(ir::TensorId t) const {
    const auto d = direct_.find(t);
    return d != direct_.end() ? d->second : local(t);
  }

  ir::Phase phase(ir::TensorId t) const { return bg_.phases[static_cast<size_t>(t)]; }
  const ir::Tensor& tensor(ir::TensorId t) const { return bg_.tensors[static_cast<size_t>(t)]; }
  Operand local(ir::TensorId t) const { return local_operand(shm(tensor(t)), tensor(t).type.shape); }

  std::vector<std::string> block_offsets(const ir::DimMap& map, const ir::Shape& s) const {
    return codegen::block_offsets(map, s, bg_.grid);
  }

  // The tile an input iterator reads in iteration `it` (an expression), as a view of the device
  // tensor.
  Operand iterator_view(const ir::BlockNode& n, const std::string& it = "it") const {
    const ir::TensorId src = op_.inputs[static_cast<size_t>(n.input_index)];
    const Operand d = device_operand(dev(g_.tensor(src)), g_.tensor(src).type);
    const ir::Shape& tile = tensor(n.outputs[0]).type.shape;
    std::vector<std::string> off = block_offsets(n.imap, d.shape);
    if (n.fmap != ir::kReplica)
      off[static_cast<size_t>(n.fmap)] =
          add_expr(off[static_cast<size_t>(n.fmap)], mul_expr(it, tile[n.fmap]));
    return sub_view(d, tile, off);
  }

  // The tile an input iterator reads in the next iteration, prefetched now: its rows are
  // strided in device memory (a column tile of a weight: one short run per row), which the
  // hardware prefetcher does not follow, and a block computes a whole iteration before it reads
  // them. Views of rank <= 3 with contiguous rows, up to 64 KiB; others are left to the
  // hardware. (RMSNorm+MatMul's fused kernel: W's 64 x 32 f16 tile per block and iteration.)
  void emit_prefetch_next(const ir::BlockNode& n) {
    const Operand v = iterator_view(n, "(it + 1)");
    const int r = v.shape.rank;
    if (r < 1 || r > 3 || v.strides[static_cast<size_t>(r - 1)] != 1) return;
    const int64_t run = v.shape[r - 1], bytes = run * ir::dtype_bytes(v.dtype);
    const int64_t n1 = r >= 2 ? v.shape[r - 2] : 1, s1 = r >= 2 ? v.strides[static_cast<size_t>(r - 2)] : 0;
    const int64_t n0 = r >= 3 ? v.shape[0] : 1, s0 = r >= 3 ? v.strides[0] : 0;
    if (n0 * n1 * ((bytes + 63) / 64) > 1024) return;
    w_.line("if (it + 1 < " + std::to_string(bg_.forloop) + ") mg::prefetch_tile(" + v.ptr + " + " +
            v.base + ", " + std::to_string(n0) + ", " + std::to_string(s0) + ", " +
            std::to_string(n1) + ", " + std::to_string(s1) + ", " + std::to_string(run) + ");  // " +
            tensor(n.outputs[0]).name + ", next iteration");
  }

  void emit_iterator(const ir::BlockNode& n) {
    const ir::TensorId src = op_.inputs[static_cast<size_t>(n.input_index)];
    w_.line("// " + tensor(n.outputs[0]).name + " = input_iterator(" + g_.tensor(src).name +
            ", imap=" + n.imap.to_string() + ", fmap=" + ir::map_target_name(n.fmap) + ")");
    emit_copy(w_, iterator_view(n), local(n.outputs[0]), false);
  }

  void emit_accumulator(const ir::BlockNode& n) {
    const Operand x = local(n.inputs[0]), acc = local(n.outputs[0]);
    w_.line("// " + tensor(n.outputs[0]).name + " = accumulator(" + tensor(n.inputs[0]).name +
            ", fmap=" + ir::map_target_name(n.fmap) + ")");
    if (n.fmap == ir::kReplica) {
      w_.open("if (it == 0)");
      emit_copy(w_, x, acc, false);
      w_.close();
      w_.open("else");
      emit_map(w_, acc, {acc, x}, false,
               [](const std::vector<std::string>& v) { return v[0] + " + " + v[1]; });
      w_.close();
      return;
    }
    std::vector<std::string> off(static_cast<size_t>(x.shape.rank), "0");
    off[static_cast<size_t>(n.fmap)] = mul_expr("it", x.shape[n.fmap]);
    emit_copy(w_, x, sub_view(acc, x.shape, off), false);
  }

  void emit_node(const ir::BlockNode& n) {
    if (n.kind == BlockNodeKind::kThreadGraph) {
      emit_thread_graph(n);
      return;
    }
    std::vector<Operand> in;
    std::string names;
    for (ir::TensorId t : n.inputs) {
      in.push_back(operand(t));
      names += (names.empty() ? "" : ", ") + tensor(t).name +
               (direct_.count(t) > 0 ? " (read in place)" : "");
    }
    w_.line("// " + tensor(n.outputs[0]).name + " = " + std::string(ir::op_name(n.op)) + "(" +
            names + ")");
    if (const auto acc = accumulate_into_.find(n.outputs[0]); acc != accumulate_into_.end()) {
      w_.line("// ... added into " + tensor(acc->second).name + " = accumulator(" +
              tensor(n.outputs[0]).name + ", fmap=phi)");
      emit_matmul(w_, in, local(acc->second), false, "it > 0");
      return;
    }
    emit_op(w_, n.op, n.attrs, in, local(n.outputs[0]), false);
  }

  // One fused loop per output over the output's shape: every ancestor's shape broadcasts into
  // it (element-wise ops broadcast), so computing the chain at the output's index is exact.
  // Outputs that all have one shape share one loop, each node computed once per element.
  void emit_thread_graph(const ir::BlockNode& n) {
    const ir::ThreadGraph& tg = *n.thread;
    bool one_shape = tg.outputs.size() > 1;
    for (ir::TensorId t : n.outputs) one_shape &= tensor(t).type.shape == tensor(n.outputs[0]).type.shape;
    if (one_shape) {
      std::vector<Operand> in, outs;
      std::string names;
      for (ir::TensorId t : n.inputs) in.push_back(local(t));
      for (ir::TensorId t : n.outputs) {
        outs.push_back(local(t));
        names += (names.empty() ? "" : ", ") + tensor(t).name;
      }
      w_.line("// " + names + " = thread graph (fused in registers, one loop)");
      emit_fused(w_, outs, in, [&](const std::vector<std::string>& x) {
        return thread_body(tg, scalar_expr, x);
      });
      return;
    }
    for (size_t o = 0; o < tg.outputs.size(); ++o) {
      const ThreadOutput chain = thread_output(tg, o, scalar_expr);
      std::vector<Operand> in;
      for (size_t i : chain.inputs) in.push_back(local(n.inputs[i]));
      w_.line("// " + tensor(n.outputs[o]).name + " = thread graph (fused in registers)");
      emit_map(w_, local(n.outputs[o]), in, false, chain.value);
    }
  }

  void emit_saver(const ir::BlockNode& n, int index) {
    const ir::TensorId dst = op_.outputs[static_cast<size_t>(index)];
    const Operand d = device_operand(dev(g_.tensor(dst)), g_.tensor(dst).type);
    const ir::Shape& tile = tensor(n.inputs[0]).type.shape;
    const std::vector<std::string> off = block_offsets(n.omap, d.shape);
    w_.line("// output_saver(" + tensor(n.inputs[0]).name + ", omap=" + n.omap.to_string() +
            ") -> " + g_.tensor(dst).name);
    emit_copy(w_, local(n.inputs[0]), sub_view(d, tile, off), false);
  }

  const ir::KernelGraph& g_;
  const ir::KernelOp& op_;
  const ir::BlockGraph& bg_;
  Writer& w_;
  std::map<ir::TensorId, Operand> direct_;                  // iterator tiles read in place
  std::map<ir::TensorId, ir::TensorId> accumulate_into_;    // matmul result -> its accumulator
  std::set<ir::TensorId> fed_in_place_;                     // accumulators matmuls add into
};

void emit_graph_defined(Writer& w, const ir::KernelGraph& g, const ir::KernelOp& op,
                        const std::string& fn) {
  const ir::BlockGraph& bg = *op.block;
  const ir::Dim3& grid = bg.grid;
  w.line("// graph_defined grid=[" + std::to_string(grid[0]) + ", " + std::to_string(grid[1]) +
         ", " + std::to_string(grid[2]) + "] forloop=" + std::to_string(bg.forloop));
  w.open("static void " + fn + "_block(int64_t bx, int64_t by, int64_t bz, " + params(g, op) +
         ", float* smem, int64_t it_begin, int64_t it_end)");
  w.line("(void)bx; (void)by; (void)bz;");
  BlockEmitter be(g, op, w);
  const int64_t floats = be.declare_buffers();
  be.body();
  w.close();
  w.blank();
  // Blocks run in groups of adjacent blocks, one iteration of each in turn (mg::block_group):
  // their tiles of an iteration usually lie side by side in memory, so the group reads longer
  // runs of each row than one block's tile (the CPU's prefetchers follow runs, not tiles).
  const std::string count = std::to_string(grid.count()), fl = std::to_string(bg.forloop);
  w.open("static void " + fn + "(" + params(g, op) + ")");
  w.line("const int64_t group = mg::block_group(" + count + ", " + std::to_string(floats) + ", " +
         fl + ");");
  w.line("#pragma omp parallel");
  w.open("");
  w.line("float* const smem = mg::arena(group * " + std::to_string(floats) + ");");
  w.line("#pragma omp for schedule(static)");
  w.open("for (int64_t b0 = 0; b0 < " + count + "; b0 += group)");
  w.open("for (int64_t it = 0; it < " + fl + "; ++it)");
  w.open("for (int64_t b = b0; b < b0 + group && b < " + count + "; ++b)");
  w.line(fn + "_block(b % " + std::to_string(grid[0]) + ", (b / " + std::to_string(grid[0]) +
         ") % " + std::to_string(grid[1]) + ", b / " + std::to_string(grid[0] * grid[1]) + ", " +
         args(g, op) + ", smem + (b - b0) * " + std::to_string(floats) + ", it, it + 1);");
  w.close();
  w.close();
  w.close();
  w.close();
  w.close();
}

void emit_predefined(Writer& w, const ir::KernelGraph& g, const ir::KernelOp& op,
                     const std::string& fn) {
  std::vector<Operand> in;
  std::string names;
  for (ir::TensorId id : op.inputs) {
    in.push_back(device_operand(dev(g.tensor(id)), g.tensor(id).type));
    names += (names.empty() ? "" : ", ") + g.tensor(id).name;
  }
  const ir::Tensor& out = g.tensor(op.outputs[0]);
  w.line("// " + out.name + " = " + std::string(ir::op_name(op.op)) + "(" + names + ")");
  w.open("static void " + fn + "(" + params(g, op) + ")");
  emit_op(w, op.op, op.attrs, in, device_operand(dev(out), out.type), true);
  w.close();
}

// The entry: binds inputs, outputs and workspace tensors to pointers, calls the ops in order,
// copies outputs that are inputs or repeated.
Module::Entry emit_entry(Writer& w, const ir::KernelGraph& g, const std::string& name) {
  const EntryBinding b = bind_entry(g);
  Module::Entry e{"mg_entry_" + name, b.workspace_bytes, static_cast<int>(g.inputs.size()),
                  static_cast<int>(g.outputs.size())};
  w.open("extern \"C\" void " + e.symbol + "(void* const* in, void* const* out, char* ws)");
  w.line("(void)ws;");
  emit_bindings(w, g, b);
  for (size_t k = 0; k < g.ops.size(); ++k)
    w.line(name + "_op" + std::to_string(k) + "(" + args(g, g.ops[k]) + ");");
  for (size_t i : b.copied_outputs) {
    const ir::Tensor& t = g.tensor(g.outputs[i]);
    const std::string ty = storage_type(t.type.dtype) + "*";
    w.line(ty + " const out" + std::to_string(i) + " = static_cast<" + ty + ">(out[" +
           std::to_string(i) + "]);");
    Operand to = device_operand("out" + std::to_string(i), t.type);
    to.strides = ir::row_major(t.type.shape).strides;
    emit_copy(w, device_operand(dev(t), t.type), to, true);
  }
  w.close();
  return e;
}

}  // namespace

Result<Module> generate_cpu(const std::vector<NamedGraph>& graphs) {
  Module m;
  Writer w;
  w.line("// Generated by mugraph (codegen/cpu). One entry per uGraph; see generate_cpu.h.");
  w.line("#include <cmath>");
  w.line("#include <cstdint>");
  w.line(std::string("#include \"") + kCpuLibraryHeader + "\"");
  MG_RETURN_IF_ERROR(emit_graphs(
      w, m, graphs, "cpu",
      [](Writer& w, const ir::KernelGraph& g, size_t k, const std::string& fn) -> Status {
        if (g.ops[k].graph_defined)
          emit_graph_defined(w, g, g.ops[k], fn);
        else
          emit_predefined(w, g, g.ops[k], fn);
        return {};
      },
      emit_entry));
  return m;
}

}  // namespace mugraph::codegen::cpu
