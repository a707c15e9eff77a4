#include "expr/abstract.h"

namespace mugraph::expr {
namespace {

int64_t last_dim(const ir::TensorType& t) { return t.shape[t.shape.rank - 1]; }

std::vector<Expr> gather(const std::vector<Expr>& v, const std::vector<ir::TensorId>& ids) {
  std::vector<Expr> out;
  for (ir::TensorId id : ids) {
    Expr e = v[static_cast<size_t>(id)];
    MG_CHECK(e != nullptr, "tensor " << id << " used before it is defined");
    out.push_back(e);
  }
  return out;
}

template <class Tensors>
std::vector<ir::TensorType> types_of(const Tensors& tensors, const std::vector<ir::TensorId>& ids) {
  std::vector<ir::TensorType> out;
  for (ir::TensorId id : ids) out.push_back(tensors[static_cast<size_t>(id)].type);
  return out;
}

// A thread graph's outputs, composing its element-wise ops.
std::vector<Expr> thread_expressions(const ir::ThreadGraph& tg, ExprPool& pool,
                                     std::span<const Expr> inputs) {
  std::vector<Expr> v(tg.tensors.size(), nullptr);
  MG_CHECK(inputs.size() == tg.inputs.size(), "thread graph arity");
  for (size_t i = 0; i < inputs.size(); ++i) v[static_cast<size_t>(tg.inputs[i])] = inputs[i];
  for (const ir::ThreadGraph::Node& n : tg.nodes) {
    const auto in = gather(v, n.inputs);
    const auto types = types_of(tg.tensors, n.inputs);
    v[static_cast<size_t>(n.output)] = op_expression(pool, n.op, n.attrs, in, types);
  }
  return gather(v, tg.outputs);
}

}  // namespace

Expr op_expression(ExprPool& pool, ir::OpKind op, const ir::OpAttrs& attrs,
                   std::span<const Expr> in, std::span<const ir::TensorType> in_types) {
  MG_CHECK(static_cast<int>(in.size()) == ir::op_info(op).arity, ir::op_name(op) << " arity");
  using ir::OpKind;
  switch (op) {
    case OpKind::kMatmul:
      return pool.sum(last_dim(in_types[0]), pool.mul(in[0], in[1]));
    case OpKind::kConcatMatmul:
      return pool.add(pool.sum(last_dim(in_types[0]), pool.mul(in[0], in[2])),
                      pool.sum(last_dim(in_types[1]), pool.mul(in[1], in[3])));
    case OpKind::kSum:
      return pool.sum(attrs.group, in[0]);
    case OpKind::kSquare:
      return pool.mul(in[0], in[0]);
    case OpKind::kExp:
      return pool.exp(in[0]);
    case OpKind::kSqrt:
      return pool.sqrt(in[0]);
    case OpKind::kAdd:
    case OpKind::kSub:
      return pool.add(in[0], in[1]);
    case OpKind::kMul:
      return pool.mul(in[0], in[1]);
    case OpKind::kDiv:
      return pool.div(in[0], in[1]);
    case OpKind::kReciprocal:
      return pool.div(pool.one(), in[0]);
    case OpKind::kNeg:
    case OpKind::kScale:
    case OpKind::kRepeat:
    case OpKind::kReshape:
    case OpKind::kTranspose:  // data movement: as reshape, the abstraction keeps no positions
      return in[0];
    case OpKind::kSilu:
    case OpKind::kRelu:
    case OpKind::kGelu:
      return pool.apply(op, in[0]);
    case OpKind::kConcat:
      return pool.apply(op, in[0], in[1]);
  }
  MG_CHECK(false, "unhandled operator");
  return nullptr;
}

bool adds_one_step(ir::OpKind op) {
  ExprPool pool;
  const int arity = ir::op_info(op).arity;
  std::vector<Expr> in;
  std::vector<ir::TensorType> types;
  for (int i = 0; i < arity; ++i) {
    in.push_back(pool.input("x" + std::to_string(i)));
    types.push_back(ir::TensorType::make(ir::DType::kF32, ir::Shape{4, 4}));
  }
  ir::OpAttrs attrs;
  attrs.group = 4;
  const Expr e = op_expression(pool, op, attrs, in, types);
  auto leaf = [](Expr x) {
    return x == nullptr || x->kind == ExprKind::kInput || x->kind == ExprKind::kOne;
  };
  if (leaf(e) || (leaf(e->a) && leaf(e->b))) return true;
  return e->kind == ExprKind::kSum && e->a->kind == ExprKind::kMul && leaf(e->a->a) &&
         leaf(e->a->b);
}

std::vector<Expr> block_expressions(const ir::BlockGraph& bg, ExprPool& pool,
                                    std::span<const Expr> inputs) {
  using ir::BlockNodeKind;
  std::vector<Expr> v(bg.tensors.size(), nullptr);
  for (const ir::BlockNode& n : bg.nodes) {
    switch (n.kind) {
      case BlockNodeKind::kInputIterator:
        MG_CHECK(n.input_index >= 0 && static_cast<size_t>(n.input_index) < inputs.size(),
                 "iterator input index");
        v[static_cast<size_t>(n.outputs[0])] = inputs[static_cast<size_t>(n.input_index)];
        break;
      case BlockNodeKind::kCompute: {
        const auto in = gather(v, n.inputs);
        const auto types = types_of(bg.tensors, n.inputs);
        v[static_cast<size_t>(n.outputs[0])] = op_expression(pool, n.op, n.attrs, in, types);
        break;
      }
      case BlockNodeKind::kThreadGraph: {
        const auto outs = thread_expressions(*n.thread, pool, gather(v, n.inputs));
        for (size_t i = 0; i < outs.size(); ++i) v[static_cast<size_t>(n.outputs[i])] = outs[i];
        break;
      }
      case BlockNodeKind::kAccumulator: {
        Expr x = gather(v, n.inputs)[0];
        v[static_cast<size_t>(n.outputs[0])] =
            n.fmap == ir::kReplica ? pool.sum(bg.forloop, x) : x;
        break;
      }
      case BlockNodeKind::kOutputSaver:
        break;
    }
  }
  return v;
}

GraphExprs abstract_expressions(const ir::KernelGraph& g, ExprPool& pool) {
  GraphExprs out;
  out.tensors.assign(g.tensors.size(), nullptr);
  for (ir::TensorId id : g.inputs) out.tensors[static_cast<size_t>(id)] = pool.input(g.tensor(id).name);
  for (const ir::KernelOp& op : g.ops) {
    const auto in = gather(out.tensors, op.inputs);
    if (!op.graph_defined) {
      const auto types = types_of(g.tensors, op.inputs);
      out.tensors[static_cast<size_t>(op.outputs[0])] =
          op_expression(pool, op.op, op.attrs, in, types);
      out.blocks.emplace_back();
      continue;
    }
    const ir::BlockGraph& bg = *op.block;
    std::vector<Expr> bv = block_expressions(bg, pool, in);
    MG_CHECK(bg.savers.size() == op.outputs.size(), "one saver per output");
    for (size_t i = 0; i < op.outputs.size(); ++i) {
      const ir::BlockNode& saver = bg.nodes[static_cast<size_t>(bg.savers[i])];
      out.tensors[static_cast<size_t>(op.outputs[i])] = gather(bv, saver.inputs)[0];
    }
    out.blocks.push_back(std::move(bv));
  }
  out.outputs = gather(out.tensors, g.outputs);
  return out;
}

}  // namespace mugraph::expr
