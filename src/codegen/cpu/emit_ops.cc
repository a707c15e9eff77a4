#include "codegen/cpu/emit_ops.h"

namespace mugraph::codegen::cpu {
namespace {

// Below this many elements a kernel-level loop stays serial: an OpenMP fork/join costs a few
// microseconds, about what 2^14 simple element operations take on one core.
constexpr int64_t kParallelMin = int64_t{1} << 14;

std::vector<std::string> loop_vars(int rank, const std::string& prefix = "i") {
  std::vector<std::string> v;
  for (int d = 0; d < rank; ++d) v.push_back(prefix + std::to_string(d));
  return v;
}

std::string load(const Operand& o, const std::vector<std::string>& idx) {
  return "mg::ld(" + o.ptr + "[" + element(o, idx) + "])";
}

std::string store(const Operand& o, const std::vector<std::string>& idx, const std::string& v) {
  return o.ptr + "[" + element(o, idx) + "] = mg::st<" + storage_type(o.dtype) + ">(" + v + ");";
}

// Opens one loop per trip count. With `parallel`, the first `collapse` loops are shared over
// the cores; with `simd`, the innermost loop (when not collapsed) is marked vectorizable.
// Returns how many loops it opened (close them with close_loops).
int open_loops(Writer& w, const std::vector<int64_t>& trips, const std::vector<std::string>& vars,
               bool parallel, int collapse, bool simd) {
  const int n = static_cast<int>(trips.size());
  for (int d = 0; d < n; ++d) {
    if (d == 0 && parallel && collapse > 0)
      w.line("#pragma omp parallel for collapse(" + std::to_string(collapse) +
             ") schedule(static)");
    if (d == n - 1 && simd && !(parallel && collapse >= n)) w.line("#pragma omp simd");
    const std::string& v = vars[static_cast<size_t>(d)];
    w.open("for (int64_t " + v + " = 0; " + v + " < " + std::to_string(trips[static_cast<size_t>(d)]) +
           "; ++" + v + ")");
  }
  return n;
}

void close_loops(Writer& w, int n) {
  for (int i = 0; i < n; ++i) w.close();
}

std::vector<int64_t> trips_of(const ir::Shape& s) {
  return std::vector<int64_t>(s.dims.begin(), s.dims.begin() + s.rank);
}

bool should_parallelize(bool parallel, const ir::Shape& s) {
  return parallel && s.numel() >= kParallelMin;
}

// sum(dim, group): out[.., o, ..] = sum_{g < group} in[.., o*group + g, ..].
void emit_sum(Writer& w, const ir::OpAttrs& a, const Operand& in, const Operand& out,
              bool parallel) {
  const int r = out.shape.rank;
  const std::string grp = std::to_string(a.group);
  const bool par = should_parallelize(parallel, in.shape);
  const auto vars = loop_vars(r);
  std::vector<std::string> src = vars;
  src[static_cast<size_t>(a.dim)] = add_expr(mul_expr(vars[static_cast<size_t>(a.dim)], a.group), "g");
  if (a.dim == r - 1 || out.dtype != ir::DType::kF32) {
    // A register accumulator per output element; the group loop is a vector reduction.
    const int n = open_loops(w, trips_of(out.shape), vars, par, std::max(1, r - 1), false);
    w.line("float acc = 0.f;");
    w.line("#pragma omp simd reduction(+ : acc)");
    w.open("for (int64_t g = 0; g < " + grp + "; ++g)");
    w.line("acc += " + load(in, src) + ";");
    w.close();
    w.line(store(out, vars, "acc"));
    close_loops(w, n);
    return;
  }
  // A reduction over a non-innermost dim of an f32 buffer: accumulate whole inner rows into the
  // output so the innermost loop stays contiguous.
  emit_map(w, out, {}, parallel, [](const std::vector<std::string>&) { return "0.f"; });
  std::vector<int64_t> trips = trips_of(out.shape);
  std::vector<std::string> order = vars;
  trips.insert(trips.begin() + a.dim + 1, a.group);
  order.insert(order.begin() + a.dim + 1, "g");
  const int n = open_loops(w, trips, order, par, a.dim + 1, true);
  const std::string dst = out.ptr + "[" + element(out, vars) + "]";
  w.line(dst + " += " + load(in, src) + ";");
  close_loops(w, n);
}

}  // namespace

// Batched matmul (and concat_matmul's two terms) through the device library's tiled matmul.
void emit_matmul(Writer& w, const std::vector<Operand>& in, const Operand& out, bool parallel,
                 const std::string& accumulate) {
  MG_CHECK(!parallel || accumulate.empty(), "an accumulating matmul runs inside a block (serial)");
  const bool concat = in.size() == 4;
  const Operand& a = in[0];
  const Operand& b = concat ? in[2] : in[1];
  const int r = out.shape.rank;
  const int64_t m = out.shape[r - 2], n = out.shape[r - 1];
  ir::Shape batch;
  batch.rank = r - 2;
  for (int d = 0; d < batch.rank; ++d) batch[d] = out.shape[d];
  const auto vars = loop_vars(batch.rank, "b");
  const int loops = open_loops(w, trips_of(batch), vars, false, 0, false);
  // The batch offset of an operand: its leading dims broadcast against the output's batch.
  auto base = [&](const Operand& o) {
    Operand lead = o;
    lead.shape.rank = o.shape.rank - 2;
    std::vector<std::string> idx =
        batch.rank == 0 ? std::vector<std::string>{} : broadcast_index(lead, batch, vars);
    idx.push_back("0");
    idx.push_back("0");
    return o.ptr + " + " + element(o, idx);
  };
  auto term = [&](const Operand& x, const Operand& y) {
    const int xr = x.shape.rank, yr = y.shape.rank;
    return "mg::Term<" + storage_type(x.dtype) + ", " + storage_type(y.dtype) + ">{" + base(x) +
           ", " + std::to_string(x.strides[xr - 2]) + ", " + std::to_string(x.strides[xr - 1]) +
           ", " + base(y) + ", " + std::to_string(y.strides[yr - 2]) + ", " +
           std::to_string(y.strides[yr - 1]) + ", " + std::to_string(x.shape[xr - 1]) + "}";
  };
  const std::string fn = parallel            ? "mg::matmul_parallel("
                         : accumulate.empty() ? "mg::matmul("
                                              : "mg::matmul_into(" + accumulate + ", ";
  std::string call = fn + std::to_string(m) +
                     ", " + std::to_string(n) + ", " + base(out) + ", " +
                     std::to_string(out.strides[r - 2]) + ", " + std::to_string(out.strides[r - 1]) +
                     ", " + term(a, b);
  if (concat) call += ", " + term(in[1], in[3]);
  w.line(call + ");");
  close_loops(w, loops);
}

namespace {

// reshape: the same elements in row-major order. Contiguous operands copy flat; otherwise
// each output element's row-major position is decomposed into the input's index.
void emit_reshape(Writer& w, const Operand& in, const Operand& out, bool parallel) {
  const bool dense = in.strides == ir::row_major(in.shape).strides &&
                     out.strides == ir::row_major(out.shape).strides;
  if (dense) {
    Operand fi = in, fo = out;
    fi.shape = fo.shape = ir::Shape{in.shape.numel()};
    fi.strides = fo.strides = {1, 0, 0, 0};
    emit_copy(w, fi, fo, parallel);
    return;
  }
  const auto vars = loop_vars(out.shape.rank);
  const auto rm_out = ir::row_major(out.shape).strides, rm_in = ir::row_major(in.shape).strides;
  std::string flat = "0";
  for (int d = 0; d < out.shape.rank; ++d)
    flat = add_expr(flat, mul_expr(vars[static_cast<size_t>(d)], rm_out[static_cast<size_t>(d)]));
  std::vector<std::string> idx;
  for (int d = 0; d < in.shape.rank; ++d)
    idx.push_back("((f / " + std::to_string(rm_in[static_cast<size_t>(d)]) + ") % " +
                  std::to_string(in.shape[d]) + ")");
  const int n = open_loops(w, trips_of(out.shape), vars, should_parallelize(parallel, out.shape),
                           std::max(1, out.shape.rank - 1), false);
  w.line("const int64_t f = " + flat + ";");
  w.line(store(out, vars, load(in, idx)));
  close_loops(w, n);
}

}  // namespace

std::string scalar_expr(ir::OpKind k, const ir::OpAttrs& a, const std::vector<std::string>& x) {
  // mg::exp: the device library's vectorizable exp (runtime/cpu/mugraph_cpu.h).
  static const MathNames math{"mg::exp", "std::sqrt", "std::erf", "std::max"};
  return codegen::scalar_expr(k, a, x, math);
}

namespace {

// The loop nest of emit_map / emit_fused over `shape`; body(loads, vars) writes one element.
void emit_elementwise(Writer& w, const ir::Shape& shape, const std::vector<Operand>& in,
                      bool parallel,
                      const std::function<void(const std::vector<std::string>&,
                                               const std::vector<std::string>&)>& body) {
  const int r = shape.rank;
  const auto vars = loop_vars(r);
  w.open("");  // a scope of its own, so loop variables never clash with the enclosing code
  const int n = open_loops(w, trips_of(shape), vars, should_parallelize(parallel, shape),
                           std::max(1, r - 1), true);
  std::vector<std::string> loads;
  for (const Operand& o : in) loads.push_back(load(o, broadcast_index(o, shape, vars)));
  body(loads, vars);
  close_loops(w, n);
  w.close();
}

}  // namespace

void emit_map(Writer& w, const Operand& out, const std::vector<Operand>& in, bool parallel,
              const std::function<std::string(const std::vector<std::string>&)>& value) {
  emit_elementwise(w, out.shape, in, parallel,
                   [&](const std::vector<std::string>& loads, const std::vector<std::string>& vars) {
                     w.line(store(out, vars, value(loads)));
                   });
}

void emit_fused(Writer& w, const std::vector<Operand>& outs, const std::vector<Operand>& in,
                const std::function<ThreadBody(const std::vector<std::string>&)>& body) {
  emit_elementwise(w, outs.at(0).shape, in, false,
                   [&](const std::vector<std::string>& loads, const std::vector<std::string>& vars) {
                     const ThreadBody b = body(loads);
                     for (const std::string& l : b.lines) w.line(l);
                     for (size_t o = 0; o < outs.size(); ++o) w.line(store(outs[o], vars, b.outputs[o]));
                   });
}

void emit_copy(Writer& w, const Operand& in, const Operand& out, bool parallel) {
  emit_map(w, out, {in}, parallel, [](const std::vector<std::string>& x) { return x[0]; });
}

void emit_op(Writer& w, ir::OpKind k, const ir::OpAttrs& a, const std::vector<Operand>& in,
             const Operand& out, bool parallel) {
  switch (ir::op_info(k).cls) {
    case ir::OpClass::kUnary:
    case ir::OpClass::kBinary:
      emit_map(w, out, in, parallel,
               [&](const std::vector<std::string>& x) { return scalar_expr(k, a, x); });
      return;
    case ir::OpClass::kMatmul:
    case ir::OpClass::kConcatMatmul: emit_matmul(w, in, out, parallel); return;
    case ir::OpClass::kSum:
      w.open("");
      emit_sum(w, a, in[0], out, parallel);
      w.close();
      return;
    case ir::OpClass::kRepeat: {
      const auto vars = loop_vars(out.shape.rank);
      std::vector<std::string> src = vars;
      src[static_cast<size_t>(a.dim)] = "(" + vars[static_cast<size_t>(a.dim)] + " % " +
                                        std::to_string(in[0].shape[a.dim]) + ")";
      w.open("");
      const int n = open_loops(w, trips_of(out.shape), vars,
                               should_parallelize(parallel, out.shape),
                               std::max(1, out.shape.rank - 1), false);
      w.line(store(out, vars, load(in[0], src)));
      close_loops(w, n);
      w.close();
      return;
    }
    case ir::OpClass::kReshape:
      w.open("");
      emit_reshape(w, in[0], out, parallel);
      w.close();
      return;
    case ir::OpClass::kTranspose:
      emit_copy(w, permuted_view(in[0], a.perm), out, parallel);
      return;
    case ir::OpClass::kConcat: {
      std::vector<std::string> off(static_cast<size_t>(out.shape.rank), "0");
      emit_copy(w, in[0], sub_view(out, in[0].shape, off), parallel);
      off[static_cast<size_t>(a.dim)] = std::to_string(in[0].shape[a.dim]);
      emit_copy(w, in[1], sub_view(out, in[1].shape, off), parallel);
      return;
    }
  }
  MG_CHECK(false, "bad op class");
}

}  // namespace mugraph::codegen::cpu
