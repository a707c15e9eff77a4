#include "expr/prefix_walk.h"

#include <unordered_set>

#include "expr/abstract.h"

namespace mugraph::expr {
namespace {

struct Item {
  ir::TensorType type;
  expr::Expr e;
  int depth;
};

class Walker {
 public:
  Walker(expr::ExprPool& pool, expr::Oracle& oracle, const WalkOptions& o, WalkResult& r)
      : pool_(pool), oracle_(oracle), o_(o), r_(r) {}

  // Grows `items` by up to `depth` rounds of ops; returns them.
  std::vector<Item> grow(std::vector<Item> items) {
    for (int d = 1; d <= o_.depth && !full(); ++d) {
      std::vector<Item> fresh;
      const size_t n = std::min(items.size(), o_.max_tensors_per_context);
      for (size_t i = 0; i < n; ++i) {
        for (ir::OpKind op : kUnary) try_op(op, {items[i]}, d, fresh);
        for (size_t j = 0; j < n; ++j) {
          if (items[i].depth != d - 1 && items[j].depth != d - 1) continue;  // new pairs only
          for (ir::OpKind op : kBinary)
            if (j >= i || op == ir::OpKind::kMatmul || op == ir::OpKind::kDiv)
              try_op(op, {items[i], items[j]}, d, fresh);
        }
      }
      for (Item& f : fresh) items.push_back(f);
    }
    return items;
  }

  // Starts a new context (kernel level, or one block-level configuration).
  void new_context() {
    seen_here_.clear();
    context_start_ = r_.queries.size();
  }
  bool full() const {
    return r_.queries.size() >= o_.max_queries ||
           r_.queries.size() - context_start_ >= o_.max_queries_per_context;
  }

  // Asks the oracle about a new tensor; true if kept.
  bool ask(expr::Expr e) {
    ++r_.asked;
    const bool keep = oracle_.may_lead_to(e);
    if (seen_.insert(e).second) {
      r_.queries.push_back(e);
      r_.kept += keep;
    }
    return keep;
  }

 private:
  static constexpr ir::OpKind kUnary[] = {ir::OpKind::kExp, ir::OpKind::kSqrt, ir::OpKind::kSilu,
                                          ir::OpKind::kSquare, ir::OpKind::kSum};
  static constexpr ir::OpKind kBinary[] = {ir::OpKind::kMatmul, ir::OpKind::kAdd,
                                           ir::OpKind::kMul, ir::OpKind::kDiv};

  void try_op(ir::OpKind op, const std::vector<Item>& in, int depth, std::vector<Item>& out) {
    if (full()) return;
    ir::OpAttrs attrs;
    std::vector<ir::TensorType> types;
    std::vector<expr::Expr> es;
    for (const Item& it : in) types.push_back(it.type), es.push_back(it.e);
    if (op == ir::OpKind::kSum) {
      attrs.dim = types[0].shape.rank - 1;
      attrs.group = types[0].shape[attrs.dim];
      if (attrs.group == 1) return;
    }
    auto t = ir::infer_type(op, attrs, types);
    if (!t.ok()) return;
    expr::Expr e = expr::op_expression(pool_, op, attrs, es, types);
    if (!seen_here_.insert(e).second) return;  // this context already has it
    if (ask(e)) out.push_back({*t, e, depth});
  }

  expr::ExprPool& pool_;
  expr::Oracle& oracle_;
  const WalkOptions& o_;
  WalkResult& r_;
  std::unordered_set<expr::Expr> seen_;
  size_t context_start_ = 0;

 public:
  std::unordered_set<expr::Expr> seen_here_;  // per context
};

}  // namespace

WalkResult walk_prefixes(const ir::KernelGraph& program, expr::ExprPool& pool,
                         expr::Oracle& oracle, const WalkOptions& options) {
  WalkResult r;
  Walker w(pool, oracle, options, r);
  std::vector<Item> inputs;
  for (ir::TensorId id : program.inputs)
    inputs.push_back({program.tensor(id).type, pool.input(program.tensor(id).name), 0});
  // Kernel level.
  w.new_context();
  w.grow(inputs);
  // Block level, one context per for-loop range and per choice of tiled input dims (each
  // input tiled along its last dim, its first dim, or replicated).
  for (int64_t R : options.forloop_ranges) {
    for (int variant = 0; variant < 3; ++variant) {
      std::vector<Item> tiles;
      for (const Item& in : inputs) {
        Item t = in;
        const int dim = variant == 0 ? t.type.shape.rank - 1 : 0;
        if (variant < 2 && t.type.shape[dim] % R == 0 && t.type.shape[dim] >= R) {
          ir::Shape s = t.type.shape;
          s[dim] /= R;
          t.type = ir::TensorType::make(t.type.dtype, s);
        }
        tiles.push_back(t);
      }
      w.new_context();
      std::vector<Item> in_loop = w.grow(tiles);
      // Accumulate every in-loop result over the R iterations, then continue after the loop.
      std::vector<Item> post;
      for (const Item& it : in_loop) {
        expr::Expr acc = pool.sum(R, it.e);
        if (w.seen_here_.insert(acc).second && w.ask(acc)) post.push_back({it.type, acc, 0});
        if (post.size() >= options.max_tensors_per_context || w.full()) break;
      }
      w.grow(post);
    }
  }
  return r;
}

}  // namespace mugraph::expr
