#include "codegen/cuda/emit_ops.h"

namespace mugraph::codegen::cuda {
namespace {

std::string load(const Operand& o, const std::vector<std::string>& idx) {
  return "mg::ld(" + o.ptr + "[" + element(o, idx) + "])";
}

std::string store(const Operand& o, const std::vector<std::string>& idx, const std::string& v) {
  return o.ptr + "[" + element(o, idx) + "] = mg::st<" + storage_type(o.dtype) + ">(" + v + ");";
}

// Declares per-dim indices <prefix>0..<prefix>{r-1} of the row-major linear index `var` over
// `shape` (of C++ type `ty`; a size-1 dim's index is the constant 0, divisions by 1 and
// remainders that cannot wrap are left out); returns their names.
std::vector<std::string> index_vars(Writer& w, const ir::Shape& shape, const std::string& var,
                                    const std::string& prefix, const std::string& ty) {
  std::vector<std::string> idx;
  int64_t inner = 1;
  std::vector<int64_t> stride(static_cast<size_t>(shape.rank));
  for (int d = shape.rank - 1; d >= 0; --d) {
    stride[static_cast<size_t>(d)] = inner;
    inner *= shape[d];
  }
  for (int d = 0; d < shape.rank; ++d) {
    if (shape[d] == 1) {
      idx.push_back("0");
      continue;
    }
    const std::string v = prefix + std::to_string(d);
    const int64_t st = stride[static_cast<size_t>(d)];
    std::string e = var;
    if (st != 1) e = "(" + e + " / " + std::to_string(st) + ")";
    if (inner / st != shape[d]) e = "(" + e + " % " + std::to_string(shape[d]) + ")";
    w.line("const " + ty + " " + v + " = " + e + ";");
    idx.push_back(v);
  }
  return idx;
}

// Opens a loop over the `count` elements of `shape` distributed per `loop`, and declares the
// per-dim indices i0..i{r-1} (row-major decomposition of the linear index e, constants folded
// by the compiler). Returns the index names; close with w.close().
std::vector<std::string> open_elements(Writer& w, const ir::Shape& shape, Loop loop) {
  const int64_t n = shape.numel();
  if (loop == Loop::kBlock) {
    w.open("for (int e = threadIdx.x; e < " + std::to_string(n) + "; e += blockDim.x)");
  } else {
    w.open("for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < " +
           std::to_string(n) + "; e += int64_t(gridDim.x) * blockDim.x)");
  }
  return index_vars(w, shape, "e", "i", loop == Loop::kBlock ? "int" : "int64_t");
}

// How a sum is spread: a warp per output for a reduction along the input's stride-1 dim of
// 32..255 elements (lanes read consecutive elements, then a shuffle reduction), a whole block
// per output from 256 elements on at the kernel level (a grid of them: one thread per output
// would read a 4096-long row serially), else one thread per output.
enum class SumForm { kThread, kWarp, kBlock };
SumForm sum_form(const ir::OpAttrs& a, const Operand& in, Loop loop) {
  if (in.strides[static_cast<size_t>(a.dim)] != 1 || a.group < 32) return SumForm::kThread;
  return loop == Loop::kGrid && a.group >= 256 ? SumForm::kBlock : SumForm::kWarp;
}

// sum(dim, group): out[.., o, ..] = sum_{g < group} in[.., o*group + g, ..], spread per
// sum_form.
void emit_sum(Writer& w, const ir::OpAttrs& a, const Operand& in, const Operand& out, Loop loop) {
  const size_t dim = static_cast<size_t>(a.dim);
  const std::string grp = std::to_string(a.group);
  const SumForm form = sum_form(a, in, loop);
  if (form != SumForm::kThread) {
    const int64_t n = out.shape.numel();
    const bool grid = loop == Loop::kGrid;
    const std::string ty = grid ? "int64_t" : "int";
    if (form == SumForm::kBlock) {
      w.line("extern __shared__ __align__(128) unsigned char smem[];");
      w.open("for (int64_t o = blockIdx.x; o < " + std::to_string(n) + "; o += gridDim.x)");
    } else if (grid) {
      w.open("for (int64_t o = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; o < " +
             std::to_string(n) + "; o += int64_t(gridDim.x) * blockDim.x / 32)");
    } else {
      w.open("for (int o = threadIdx.x / 32; o < " + std::to_string(n) + "; o += blockDim.x / 32)");
    }
    const std::vector<std::string> idx = index_vars(w, out.shape, "o", "o", ty);
    std::vector<std::string> src = idx;
    src[dim] = add_expr(mul_expr(idx[dim], a.group), "g");
    w.line("float acc = 0.f;");
    if (form == SumForm::kBlock) {
      w.line("for (int g = threadIdx.x; g < " + grp + "; g += blockDim.x) acc += " + load(in, src) + ";");
      w.line("acc = mg::block_sum(acc, reinterpret_cast<float*>(smem));");
      w.line("if (threadIdx.x == 0) " + store(out, idx, "acc"));
    } else {
      w.line("for (int g = threadIdx.x % 32; g < " + grp + "; g += 32) acc += " + load(in, src) + ";");
      w.line("acc = mg::warp_sum(acc);");
      w.line("if (threadIdx.x % 32 == 0) " + store(out, idx, "acc"));
    }
    w.close();
    return;
  }
  const std::vector<std::string> idx = open_elements(w, out.shape, loop);
  std::vector<std::string> src = idx;
  src[dim] = add_expr(mul_expr(idx[dim], a.group), "g");
  w.line("float acc = 0.f;");
  w.line("for (int g = 0; g < " + grp + "; ++g) acc += " + load(in, src) + ";");
  w.line(store(out, idx, "acc"));
  w.close();
}

}  // namespace

void emit_matmul_tile(Writer& w, const std::vector<Operand>& in, const Operand& out,
                      const std::string& accumulate, int block_threads,
                      const std::string& register_accumulator) {
  const bool concat = in.size() == 4;
  MG_CHECK(register_accumulator.empty() ||
               (!concat && out.dtype == ir::DType::kF32 &&
                out.shape.numel() == out.shape[out.shape.rank - 2] * out.shape[out.shape.rank - 1]),
           "a register accumulator takes one f32 matmul without batch dims");
  MG_CHECK(out.dtype == ir::DType::kF32 ||
               (out.dtype == ir::DType::kF16 && !concat && accumulate == "false"),
           "block matmul output must be an f32 tile, or an f16 one written once");
  const int r = out.shape.rank;
  const int64_t m = out.shape[r - 2], n = out.shape[r - 1];
  ir::Shape batch;
  batch.rank = r - 2;
  for (int d = 0; d < batch.rank; ++d) batch[d] = out.shape[d];
  std::vector<std::string> vars;
  for (int d = 0; d < batch.rank; ++d) {
    vars.push_back("b" + std::to_string(d));
    w.open("for (int " + vars.back() + " = 0; " + vars.back() + " < " + std::to_string(batch[d]) +
           "; ++" + vars.back() + ")");
  }
  auto mat = [&](const Operand& o, bool is_const) {
    Operand lead = o;
    lead.shape.rank = o.shape.rank - 2;
    std::vector<std::string> idx =
        batch.rank == 0 ? std::vector<std::string>{} : broadcast_index(lead, batch, vars);
    idx.push_back("0");
    idx.push_back("0");
    const int orank = o.shape.rank;
    const std::string ty = (is_const ? "const " : "") + storage_type(o.dtype);
    return "mg::Mat<" + ty + ">{" + o.ptr + " + " + element(o, idx) + ", " +
           std::to_string(o.strides[static_cast<size_t>(orank - 2)]) + ", " +
           std::to_string(o.strides[static_cast<size_t>(orank - 1)]) + "}";
  };
  auto call = [&](const Operand& x, const Operand& y, const std::string& acc) {
    const int64_t k = x.shape[x.shape.rank - 1];
    if (!register_accumulator.empty()) {
      w.line(register_accumulator + ".add(" + std::to_string(k) + ", " + mat(x, true) + ", " +
             mat(y, true) + ", " + mat(out, false) + ", " + acc + ");");
      return;
    }
    w.line("mg::matmul_tile<" + std::to_string(block_threads) + ">(" + std::to_string(m) + ", " +
           std::to_string(n) + ", " +
           std::to_string(k) + ", " + mat(x, true) + ", " + mat(y, true) + ", " + mat(out, false) +
           ", " + acc + ");");
  };
  call(in[0], concat ? in[2] : in[1], accumulate);
  if (concat) {
    // The two terms may take different forms (tensor cores vs SIMT), which own different
    // output elements per thread: the second must see the first's writes.
    w.line("__syncthreads();");
    call(in[1], in[3], "true");
  }
  for (int d = 0; d < batch.rank; ++d) w.close();
}

namespace {

// A kernel-level matmul without cuBLAS: one thread per output element, an f32 dot product
// (both terms of concat_matmul) over the shared dim; operands broadcast over the batch dims.
void emit_grid_matmul(Writer& w, const std::vector<Operand>& in, const Operand& out) {
  const int r = out.shape.rank;
  const std::vector<std::string> idx = open_elements(w, out.shape, Loop::kGrid);
  auto operand_index = [&](const Operand& o, const std::string& row, const std::string& col) {
    Operand lead = o;
    lead.shape.rank = o.shape.rank - 2;
    ir::Shape batch;
    batch.rank = r - 2;
    for (int d = 0; d < batch.rank; ++d) batch[d] = out.shape[d];
    std::vector<std::string> bidx(idx.begin(), idx.begin() + (r - 2));
    std::vector<std::string> i =
        batch.rank == 0 ? std::vector<std::string>{} : broadcast_index(lead, batch, bidx);
    i.push_back(row);
    i.push_back(col);
    return i;
  };
  const std::string row = idx[static_cast<size_t>(r - 2)], col = idx[static_cast<size_t>(r - 1)];
  w.line("float acc = 0.f;");
  const bool concat = in.size() == 4;
  for (int term = 0; term < (concat ? 2 : 1); ++term) {
    const Operand& x = concat ? in[static_cast<size_t>(term)] : in[0];
    const Operand& y = concat ? in[static_cast<size_t>(term + 2)] : in[1];
    const int64_t k = x.shape[x.shape.rank - 1];
    w.line("for (int64_t q = 0; q < " + std::to_string(k) + "; ++q) acc += " +
           load(x, operand_index(x, row, "q")) + " * " + load(y, operand_index(y, "q", col)) + ";");
  }
  w.line(store(out, idx, "acc"));
  w.close();
}

// reshape: the same elements in row-major order: each output element's row-major position is
// decomposed into the input's index.
void emit_reshape(Writer& w, const Operand& in, const Operand& out, Loop loop) {
  const std::vector<std::string> idx = open_elements(w, out.shape, loop);
  const auto rm_out = ir::row_major(out.shape).strides, rm_in = ir::row_major(in.shape).strides;
  std::string flat = "0";
  for (int d = 0; d < out.shape.rank; ++d)
    flat = add_expr(flat, mul_expr(idx[static_cast<size_t>(d)], rm_out[static_cast<size_t>(d)]));
  w.line(std::string(loop == Loop::kBlock ? "const int" : "const int64_t") + " f = " + flat + ";");
  std::vector<std::string> src;
  for (int d = 0; d < in.shape.rank; ++d)
    src.push_back("((f / " + std::to_string(rm_in[static_cast<size_t>(d)]) + ") % " +
                  std::to_string(in.shape[d]) + ")");
  w.line(store(out, idx, load(in, src)));
  w.close();
}

}  // namespace

GridWork grid_work(ir::OpKind k, const ir::OpAttrs& a, const std::vector<Operand>& in,
                   int block_threads) {
  if (ir::op_info(k).cls != ir::OpClass::kSum) return {};
  switch (sum_form(a, in[0], Loop::kGrid)) {
    case SumForm::kThread: return {};
    case SumForm::kWarp: return {32, 0};
    case SumForm::kBlock: return {block_threads, 32 * 4};
  }
  return {};
}

std::string scalar_expr(ir::OpKind k, const ir::OpAttrs& a, const std::vector<std::string>& x) {
  static const MathNames math{"expf", "sqrtf", "erff", "fmaxf"};
  return codegen::scalar_expr(k, a, x, math);
}

void emit_map(Writer& w, const Operand& out, const std::vector<Operand>& in, Loop loop,
              const std::function<std::string(const std::vector<std::string>&)>& value) {
  const std::vector<std::string> idx = open_elements(w, out.shape, loop);
  std::vector<std::string> loads;
  for (const Operand& o : in) loads.push_back(load(o, broadcast_index(o, out.shape, idx)));
  w.line(store(out, idx, value(loads)));
  w.close();
}

void emit_copy(Writer& w, const Operand& in, const Operand& out, Loop loop) {
  emit_map(w, out, {in}, loop, [](const std::vector<std::string>& x) { return x[0]; });
}

void emit_op(Writer& w, ir::OpKind k, const ir::OpAttrs& a, const std::vector<Operand>& in,
             const Operand& out, Loop loop, int block_threads) {
  switch (ir::op_info(k).cls) {
    case ir::OpClass::kUnary:
    case ir::OpClass::kBinary:
      emit_map(w, out, in, loop,
               [&](const std::vector<std::string>& x) { return scalar_expr(k, a, x); });
      return;
    case ir::OpClass::kMatmul:
    case ir::OpClass::kConcatMatmul:
      if (loop == Loop::kGrid)
        emit_grid_matmul(w, in, out);
      else
        emit_matmul_tile(w, in, out, "false", block_threads);
      return;
    case ir::OpClass::kSum: emit_sum(w, a, in[0], out, loop); return;
    case ir::OpClass::kRepeat: {
      const std::vector<std::string> idx = open_elements(w, out.shape, loop);
      std::vector<std::string> src = idx;
      src[static_cast<size_t>(a.dim)] = "(" + idx[static_cast<size_t>(a.dim)] + " % " +
                                        std::to_string(in[0].shape[a.dim]) + ")";
      w.line(store(out, idx, load(in[0], src)));
      w.close();
      return;
    }
    case ir::OpClass::kReshape: emit_reshape(w, in[0], out, loop); return;
    case ir::OpClass::kTranspose: emit_copy(w, permuted_view(in[0], a.perm), out, loop); return;
    case ir::OpClass::kConcat: {
      std::vector<std::string> off(static_cast<size_t>(out.shape.rank), "0");
      emit_copy(w, in[0], sub_view(out, in[0].shape, off), loop);
      off[static_cast<size_t>(a.dim)] = std::to_string(in[0].shape[a.dim]);
      emit_copy(w, in[1], sub_view(out, in[1].shape, off), loop);
      return;
    }
  }
  MG_CHECK(false, "bad op class");
}

}  // namespace mugraph::codegen::cuda
