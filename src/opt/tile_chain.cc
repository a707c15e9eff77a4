#include "opt/tile_chain.h"

#include <sstream>

#include "ir/builder.h"

namespace mugraph::opt {

using ir::BlockBuilder;
using ir::DimMap;
using ir::KernelGraph;
using ir::KernelOp;
using ir::kReplica;
using ir::OpClass;
using ir::OpKind;
using ir::TensorId;

std::string ChainDims::to_string() const {
  std::ostringstream s;
  s << "batch " << batch << ", M " << m << ", N " << n << ", K " << k << ", H " << h;
  return s.str();
}

std::string ChainTiles::to_string() const {
  std::ostringstream s;
  s << "tm " << m << ", th " << h << ", tn " << n;
  return s.str();
}

namespace {

// What a program tensor is to the chain (see the header).
enum class Cls { kOther, kInput, kPoint, kRow, kScaled, kOut };

struct Scaled {
  TensorId point = -1, row = -1;
  OpKind op = OpKind::kMul;
};

struct Chain {
  ChainInfo info;
  TensorId a = -1, b = -1, d = -1, c = -1, e = -1;
  int m1 = -1, m2 = -1;
  std::vector<Cls> cls;
  std::vector<Scaled> scaled;  // per tensor, for kScaled
};

const ir::Shape& shape_of(const KernelGraph& g, TensorId t) {
  return g.tensors[static_cast<size_t>(t)].type.shape;
}

const std::string& name_of(const KernelGraph& g, TensorId t) {
  return g.tensors[static_cast<size_t>(t)].name;
}

Result<Chain> analyze(const KernelGraph& g) {
  Chain ch;
  ch.cls.assign(g.tensors.size(), Cls::kOther);
  ch.scaled.assign(g.tensors.size(), Scaled{});
  for (TensorId t : g.inputs) ch.cls[static_cast<size_t>(t)] = Cls::kInput;
  auto cls = [&](TensorId t) { return ch.cls[static_cast<size_t>(t)]; };
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const KernelOp& op = g.ops[i];
    if (op.graph_defined) return error("chain: the program already has a graph-defined kernel");
    const std::string where = "chain: op '" + name_of(g, op.outputs[0]) + "' (" +
                              std::string(ir::op_name(op.op)) + ")";
    Cls out = Cls::kOther;
    for (TensorId t : op.inputs)
      if (cls(t) == Cls::kInput && op.op != OpKind::kMatmul)
        return error(where, ": reads program input '", name_of(g, t),
                     "' other than as a matmul operand");
    const ir::OpClass oc = ir::op_info(op.op).cls;
    if (op.op == OpKind::kMatmul) {
      const TensorId l = op.inputs[0], r = op.inputs[1];
      if (ch.m1 < 0) {
        if (cls(l) != Cls::kInput || cls(r) != Cls::kInput)
          return error(where, ": the first matmul must multiply two program inputs");
        ch.m1 = static_cast<int>(i), ch.a = l, ch.b = r, ch.c = op.outputs[0];
        out = Cls::kPoint;
      } else if (ch.m2 < 0) {
        if (cls(r) != Cls::kInput)
          return error(where, ": the second matmul's right operand must be a program input");
        if (cls(l) != Cls::kPoint && cls(l) != Cls::kScaled)
          return error(where, ": the second matmul's left operand must derive element-wise "
                              "from the first matmul (optionally scaled by row sums)");
        ch.m2 = static_cast<int>(i), ch.d = r, ch.e = op.outputs[0];
        out = Cls::kOut;
      } else {
        return error(where, ": a chain has two matmuls; this is a third");
      }
    } else if (op.op == OpKind::kSum) {
      const TensorId in = op.inputs[0];
      const int rank = static_cast<int>(shape_of(g, in).rank);
      if (cls(in) != Cls::kPoint)
        return error(where, ": a sum must reduce a tensor derived element-wise from the first matmul");
      if (op.attrs.dim != rank - 1 || op.attrs.group != shape_of(g, in)[shape_of(g, in).rank - 1])
        return error(where, ": only a whole-row sum over the last dim (dim=", rank - 1,
                     ", group=", shape_of(g, in)[shape_of(g, in).rank - 1], ") is a row factor");
      out = Cls::kRow;
    } else if (oc == OpClass::kUnary) {
      const Cls c = cls(op.inputs[0]);
      if (c != Cls::kPoint && c != Cls::kRow && c != Cls::kOut)
        return error(where, ": an element-wise op of a row-scaled tensor (apply it before the scaling)");
      out = c;
    } else if (oc == OpClass::kBinary) {
      const Cls l = cls(op.inputs[0]), r = cls(op.inputs[1]);
      const bool mul = op.op == OpKind::kMul, div = op.op == OpKind::kDiv;
      if (l == r && (l == Cls::kPoint || l == Cls::kRow)) {
        out = l;
      } else if ((mul && ((l == Cls::kPoint && r == Cls::kRow) || (l == Cls::kRow && r == Cls::kPoint))) ||
                 (div && l == Cls::kPoint && r == Cls::kRow)) {
        out = Cls::kScaled;
        Scaled s;
        s.point = l == Cls::kPoint ? op.inputs[0] : op.inputs[1];
        s.row = l == Cls::kRow ? op.inputs[0] : op.inputs[1];
        s.op = op.op;
        ch.scaled[static_cast<size_t>(op.outputs[0])] = s;
      } else if ((mul && ((l == Cls::kOut && r == Cls::kRow) || (l == Cls::kRow && r == Cls::kOut))) ||
                 (div && l == Cls::kOut && r == Cls::kRow)) {
        out = Cls::kOut;
      } else {
        return error(where, ": combines tensors the chain cannot tile together (only element-wise "
                            "ops of the first matmul's result, whole-row sums of them, and "
                            "multiplying or dividing by such a row factor)");
      }
    } else {
      return error(where, ": not an op of a matmul chain (matmul, element-wise, whole-row sum)");
    }
    ch.cls[static_cast<size_t>(op.outputs[0])] = out;
  }
  if (ch.m2 < 0) return error("chain: the program needs two matmuls, the second reading the first's result");
  if (g.outputs.size() != 1 || cls(g.outputs[0]) != Cls::kOut)
    return error("chain: the program must have exactly one output, computed from the second matmul");
  for (TensorId t : {ch.a, ch.b, ch.d})
    if (shape_of(g, t).rank < 2 || shape_of(g, t).rank > 3)
      return error("chain: input '", name_of(g, t), "' must have rank 2 or 3");
  const ir::Shape& c = shape_of(g, ch.c);
  const ir::Shape& e = shape_of(g, ch.e);
  if (c.rank > 3) return error("chain: more than one batch dim");
  ChainDims& d = ch.info.dims;
  if (e.rank > 3) return error("chain: more than one batch dim");
  d.batch = e.rank == 3 ? e[0] : 1;  // E's: C may be rank 2 with a batched D
  d.m = c[c.rank - 2], d.n = c[c.rank - 1], d.h = e[e.rank - 1];
  d.k = shape_of(g, ch.a)[shape_of(g, ch.a).rank - 1];
  ch.info.elem_bytes = ir::dtype_bytes(g.tensors[static_cast<size_t>(ch.a)].type.dtype);
  for (size_t t = 0; t < ch.cls.size(); ++t)
    if (ch.cls[t] == Cls::kRow) ch.info.softmax_like = true;
  return ch;
}

// imap / fmap of a chain input: batch on grid x (when the input has the batch), its row dim
// (`row`: dims from the end, 2 = second to last) on grid `row_grid`.
DimMap input_map(const ir::Shape& s, int64_t batch, int row_grid, int row_from_end) {
  DimMap m;
  const int rank = static_cast<int>(s.rank);
  if (rank == 3 && s[0] == batch && batch > 1) m.to[0] = 0;
  if (row_grid >= 0) m.to[static_cast<size_t>(row_grid)] = rank - row_from_end;
  return m;
}

}  // namespace

Result<ChainInfo> find_chain(const KernelGraph& program) {
  MG_ASSIGN_OR_RETURN(Chain ch, analyze(program));
  return ch.info;
}

Result<KernelGraph> tile_chain(const KernelGraph& g, const ChainTiles& t) {
  MG_ASSIGN_OR_RETURN(Chain ch, analyze(g));
  const ChainDims& d = ch.info.dims;
  auto divides = [](int64_t tile, int64_t dim, const char* what) -> Status {
    if (tile < 1 || dim % tile != 0)
      return error("tile_chain: ", what, " tile ", tile, " does not divide ", dim);
    return ok_status();
  };
  MG_RETURN_IF_ERROR(divides(t.m, d.m, "M"));
  MG_RETURN_IF_ERROR(divides(t.h, d.h, "H"));
  MG_RETURN_IF_ERROR(divides(t.n, d.n, "N"));
  ir::Dim3 grid;
  grid.d = {d.batch, d.m / t.m, d.h / t.h};
  std::vector<ir::TensorType> types;
  for (TensorId x : {ch.a, ch.b, ch.d}) types.push_back(g.tensors[static_cast<size_t>(x)].type);
  MG_ASSIGN_OR_RETURN(BlockBuilder b, BlockBuilder::make(types, grid, d.n / t.n));

  std::vector<TensorId> in(g.tensors.size(), -1), post(g.tensors.size(), -1);
  auto at = [](std::vector<TensorId>& v, TensorId x) -> TensorId& { return v[static_cast<size_t>(x)]; };
  const ir::Shape& sa = shape_of(g, ch.a);
  const ir::Shape& sb = shape_of(g, ch.b);
  const ir::Shape& sd = shape_of(g, ch.d);
  // One iterator per role (the program may pass one input as two of A, B, D): the tiles
  // differ. Program inputs are read only by the two matmuls (analyze checks it).
  MG_ASSIGN_OR_RETURN(const TensorId a_tile, b.input_iterator(0, input_map(sa, d.batch, 1, 2), kReplica,
                                                              name_of(g, ch.a) + "_a_tile"));
  MG_ASSIGN_OR_RETURN(const TensorId b_tile, b.input_iterator(1, input_map(sb, d.batch, -1, 0),
                                                              static_cast<int>(sb.rank) - 1,
                                                              name_of(g, ch.b) + "_b_tile"));
  MG_ASSIGN_OR_RETURN(const TensorId d_tile, b.input_iterator(2, input_map(sd, d.batch, 2, 1),
                                                              static_cast<int>(sd.rank) - 2,
                                                              name_of(g, ch.d) + "_d_tile"));
  // In the loop: the pointwise ops, the row sums over the tile, E's numerator.
  std::vector<std::pair<TensorId, TensorId>> to_accumulate;  // (program tensor, in-loop tensor)
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const KernelOp& op = g.ops[i];
    const TensorId o = op.outputs[0];
    const Cls c = ch.cls[static_cast<size_t>(o)];
    std::vector<TensorId> args;
    if (static_cast<int>(i) == ch.m1) args = {a_tile, b_tile};
    else
      for (TensorId x : op.inputs) args.push_back(at(in, x));
    if (static_cast<int>(i) == ch.m2) {
      const TensorId z = op.inputs[0];
      const TensorId p = ch.cls[static_cast<size_t>(z)] == Cls::kScaled ? ch.scaled[static_cast<size_t>(z)].point : z;
      MG_ASSIGN_OR_RETURN(TensorId n, b.op(OpKind::kMatmul, {at(in, p), d_tile}));
      to_accumulate.push_back({o, n});
    } else if (c == Cls::kPoint) {
      MG_ASSIGN_OR_RETURN(at(in, o), b.op(op.op, args, op.attrs, name_of(g, o)));
    } else if (op.op == OpKind::kSum) {
      ir::OpAttrs attrs = op.attrs;
      attrs.group = t.n;
      MG_ASSIGN_OR_RETURN(TensorId s, b.op(OpKind::kSum, args, attrs));
      to_accumulate.push_back({o, s});
    }
  }
  for (auto [prog, loop] : to_accumulate) {
    const bool numerator = prog == ch.e && ch.cls[static_cast<size_t>(g.ops[static_cast<size_t>(ch.m2)].inputs[0])] == Cls::kScaled;
    MG_ASSIGN_OR_RETURN(at(post, prog), b.accumulator(loop, kReplica, numerator ? "" : name_of(g, prog)));
  }
  // After the loop: row factors, E (scaled by its row factor), the ops after E.
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const KernelOp& op = g.ops[i];
    const TensorId o = op.outputs[0];
    const Cls c = ch.cls[static_cast<size_t>(o)];
    if (static_cast<int>(i) == ch.m2) {
      const TensorId z = op.inputs[0];
      if (ch.cls[static_cast<size_t>(z)] != Cls::kScaled) continue;
      const Scaled& s = ch.scaled[static_cast<size_t>(z)];
      MG_ASSIGN_OR_RETURN(at(post, o), b.op(s.op, {at(post, o), at(post, s.row)}, {}, name_of(g, o)));
    } else if ((c == Cls::kRow && op.op != OpKind::kSum) || (c == Cls::kOut)) {
      std::vector<TensorId> args;
      for (TensorId x : op.inputs) args.push_back(at(post, x));
      MG_ASSIGN_OR_RETURN(at(post, o), b.op(op.op, args, op.attrs, name_of(g, o)));
    }
  }
  const TensorId out = g.outputs[0];
  const int rank = static_cast<int>(shape_of(g, out).rank);
  DimMap omap;
  if (rank == 3) omap.to[0] = 0;
  omap.to[1] = rank - 2;
  omap.to[2] = rank - 1;
  MG_RETURN_IF_ERROR(b.output_saver(at(post, out), omap));
  MG_ASSIGN_OR_RETURN(auto block, std::move(b).finish());
  ir::KernelBuilder kb;
  std::vector<TensorId> ins;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const ir::Tensor& x = g.tensors[static_cast<size_t>(g.inputs[i])];
    MG_ASSIGN_OR_RETURN(TensorId id, kb.input(x.name, x.type, i < g.input_scales.size() ? g.input_scales[i] : 0));
    ins.push_back(id);
  }
  auto index_of = [&](TensorId x) {
    for (size_t i = 0; i < g.inputs.size(); ++i)
      if (g.inputs[i] == x) return ins[i];
    return TensorId{-1};
  };
  MG_ASSIGN_OR_RETURN(std::vector<TensorId> outs,
                      kb.graph_defined({index_of(ch.a), index_of(ch.b), index_of(ch.d)}, block,
                                       {name_of(g, out)}));
  MG_RETURN_IF_ERROR(kb.output(outs[0]));
  MG_ASSIGN_OR_RETURN(KernelGraph result, std::move(kb).finish());
  if (!(result.tensor(result.outputs[0]).type.shape == shape_of(g, out)))
    return error("tile_chain: the kernel's output ", result.tensor(result.outputs[0]).type.shape.to_string(),
                 " is not the program's ", shape_of(g, out).to_string());
  return result;
}

}  // namespace mugraph::opt
