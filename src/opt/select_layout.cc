#include "opt/select_layout.h"

#include <z3++.h>

namespace mugraph::opt {
namespace {

using ir::BlockNodeKind;

// The innermost (stride-1) dim of a layout of rank `rank`.
int innermost(const ir::Layout& l, int rank) {
  for (int d = 0; d < rank; ++d)
    if (l.strides[static_cast<size_t>(d)] == 1) return d;
  return rank - 1;
}

int64_t bytes_of(const ir::BlockGraph& g, ir::TensorId t) {
  return g.tensors[static_cast<size_t>(t)].type.bytes();
}

// One cost term: a unary cost per choice of tensor t, or a pairwise mismatch between a and b.
struct Terms {
  struct Unary {
    ir::TensorId t;
    double if_r, if_t;
  };
  struct Pair {
    ir::TensorId a, b;
    double weight;
  };
  std::vector<Unary> unary;
  std::vector<Pair> pairs;
  double constant = 0;
};

Terms cost_terms(const ir::BlockGraph& g) {
  Terms terms;
  // Copy between a device tensor with layout `dev` and block tensor t.
  auto copy = [&](ir::TensorId t, const ir::TensorType& dev) {
    const double b = static_cast<double>(bytes_of(g, t));
    const int rank = dev.shape.rank;
    const int inner = innermost(dev.layout, rank);
    auto cost = [&](bool transposed) {
      const int block_inner = transposed ? rank - 2 : rank - 1;
      return inner == block_inner ? b : kStridedPenalty * b;
    };
    if (layout_choosable(g, t))
      terms.unary.push_back({t, cost(false), cost(true)});
    else
      terms.constant += cost(false);
  };
  for (const ir::BlockNode& n : g.nodes) {
    switch (n.kind) {
      case BlockNodeKind::kInputIterator:
        copy(n.outputs[0], g.input_types[static_cast<size_t>(n.input_index)]);
        break;
      case BlockNodeKind::kOutputSaver: {
        int k = 0;
        while (g.savers[static_cast<size_t>(k)] != static_cast<int>(&n - g.nodes.data())) ++k;
        copy(n.inputs[0], g.output_types[static_cast<size_t>(k)]);
        break;
      }
      case BlockNodeKind::kCompute:
        if (!ir::is_elementwise(n.op)) break;
        [[fallthrough]];
      case BlockNodeKind::kThreadGraph: {
        const ir::TensorId out = n.outputs[0];
        const int rank = g.tensors[static_cast<size_t>(out)].type.shape.rank;
        for (ir::TensorId in : n.inputs)
          if (g.tensors[static_cast<size_t>(in)].type.shape.rank == rank && in != out)
            terms.pairs.push_back({in, out, kMismatchPenalty * static_cast<double>(bytes_of(g, in))});
        break;
      }
      case BlockNodeKind::kAccumulator:
        // Accumulation is element-wise between the in-loop tile and the accumulator.
        terms.pairs.push_back(
            {n.inputs[0], n.outputs[0], kMismatchPenalty * static_cast<double>(bytes_of(g, n.inputs[0]))});
        break;
    }
  }
  return terms;
}

}  // namespace

bool layout_choosable(const ir::BlockGraph& g, ir::TensorId t) {
  const ir::Shape& s = g.tensors[static_cast<size_t>(t)].type.shape;
  return s.rank >= 2 && s[s.rank - 1] > 1 && s[s.rank - 2] > 1;
}

ir::Layout transposed_layout(const ir::Shape& s) {
  ir::Layout l = ir::row_major(s);
  if (s.rank < 2) return l;
  const size_t r = static_cast<size_t>(s.rank);
  l.strides[r - 2] = 1;
  l.strides[r - 1] = s[s.rank - 2];
  return l;
}

double layout_cost(const ir::BlockGraph& g, const std::vector<bool>& transposed) {
  const Terms terms = cost_terms(g);
  auto tr = [&](ir::TensorId t) {
    return layout_choosable(g, t) && transposed[static_cast<size_t>(t)];
  };
  double c = terms.constant;
  for (const auto& u : terms.unary) c += tr(u.t) ? u.if_t : u.if_r;
  for (const auto& p : terms.pairs) c += tr(p.a) != tr(p.b) ? p.weight : 0;
  return c;
}

LayoutPlan select_layouts(const ir::BlockGraph& g) {
  const size_t n = g.tensors.size();
  LayoutPlan plan;
  plan.transposed.assign(n, false);
  bool any = false;
  for (size_t t = 0; t < n; ++t) any = any || layout_choosable(g, static_cast<ir::TensorId>(t));
  if (any) {
    const Terms terms = cost_terms(g);
    z3::context c;
    z3::optimize opt(c);
    std::vector<z3::expr> x;
    for (size_t t = 0; t < n; ++t)
      x.push_back(layout_choosable(g, static_cast<ir::TensorId>(t))
                      ? c.bool_const(("t" + std::to_string(t)).c_str())
                      : c.bool_val(false));
    // Costs are byte counts times small integer penalties: exact as integers.
    auto num = [&](double v) { return c.int_val(static_cast<int64_t>(v)); };
    z3::expr total = c.int_val(0);
    for (const auto& u : terms.unary)
      total = total + z3::ite(x[static_cast<size_t>(u.t)], num(u.if_t), num(u.if_r));
    for (const auto& p : terms.pairs)
      total = total + z3::ite(x[static_cast<size_t>(p.a)] != x[static_cast<size_t>(p.b)],
                              num(p.weight), c.int_val(0));
    opt.minimize(total);
    MG_CHECK(opt.check() == z3::sat, "select_layouts: the layout program has no solution");
    const z3::model m = opt.get_model();
    for (size_t t = 0; t < n; ++t) plan.transposed[t] = m.eval(x[t], true).is_true();
  }
  for (size_t t = 0; t < n; ++t) {
    const ir::Shape& s = g.tensors[t].type.shape;
    plan.layout.push_back(plan.transposed[t] ? transposed_layout(s) : ir::row_major(s));
  }
  plan.cost = layout_cost(g, plan.transposed);
  return plan;
}

}  // namespace mugraph::opt
