// Abstract expressions of every tensor of a uGraph (Mirage Table 1), at all three levels.
//
// Graph-defined kernels are inlined: the expressions of a kernel op's inputs flow into its block
// graph through the input iterators, and the expressions its output savers receive become those
// of the op's outputs. Per operator:
//   matmul(a, b)                 sum(k, mul(a, b)), k = a's last dim (the reduction size)
//   concat_matmul(W, X, Y, Z)    add(sum(k1, mul(W, Y)), sum(k2, mul(X, Z))), k1/k2 = last dims of W/X
//   sum(dim, group)              sum(group, a)
//   square                       mul(a, a)
//   add, mul, div, exp, sqrt     the same-named term
//   sub                          add(a, b)      (signs and constant factors are abstracted away:
//   neg, scale                   a               equivalent graphs that move them around get
//   reciprocal                   div(one, a)     the same expression)
//   silu, relu, gelu, concat     opaque functions
//   repeat, reshape              a (data movement)
//   input iterator, saver        identity
//   accumulator                  sum(R, a) for a replica fmap (R = for-loop range), else a
// Thread graphs compose their ops' expressions. The abstraction is not sound and need not be:
// it only decides which prefixes the search may discard (Theorem 1).
#pragma once

#include <span>
#include <vector>

#include "expr/expr.h"
#include "ir/graph.h"

namespace mugraph::expr {

struct GraphExprs {
  std::vector<Expr> tensors;               // per kernel tensor
  std::vector<std::vector<Expr>> blocks;   // per kernel op: its block tensors (empty if predefined)
  std::vector<Expr> outputs;               // per kernel output, in output order
};

// The expression of one operator applied to argument expressions `in` of types `in_types`.
Expr op_expression(ExprPool& pool, ir::OpKind op, const ir::OpAttrs& attrs,
                   std::span<const Expr> in, std::span<const ir::TensorType> in_types);

// Whether `op`'s expression puts at most one step (EGraph::steps_to) between its inputs and
// its output: no node, one node over the inputs, or a sum over a mul of them (matmul).
// Oracle::steps_to_output bounds the ops left to a search only when every op it may place is.
bool adds_one_step(ir::OpKind op);

// Expressions of every tensor of `g`. Input i's leaf is named after `g`'s input tensor i.
// Precondition: `g` is valid (ir::validate).
GraphExprs abstract_expressions(const ir::KernelGraph& g, ExprPool& pool);

// Expressions of the tensors of one block graph, given its inputs' expressions.
std::vector<Expr> block_expressions(const ir::BlockGraph& bg, ExprPool& pool,
                                    std::span<const Expr> inputs);

}  // namespace mugraph::expr
