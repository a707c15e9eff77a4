// A small e-graph (equality graph) for abstract expressions, and equality saturation under the
// axiom table (axioms.h). It is the fast path of the pruning oracle: the program's expression is
// saturated once; after that, "is p a subexpression of some term equal to the program?" is a
// bottom-up lookup of p plus a reachability test.
//
// Structure: e-nodes (a kind, a count or operator, an input name, child e-classes) live in
// e-classes joined by a union-find; a hash-cons maps every canonical e-node to its class.
// `rebuild` restores the congruence invariant (equal children => equal parents) after merges.
// Saturation applies every axiom in both directions to every class until nothing changes
// (saturated) or a limit is hit.
//
// Why lookup decides the question when saturated: the represented terms are then closed under
// every axiom instance in both directions, so every term equal to the program, and each of its
// subterms, is represented; p is a subexpression of such a term iff p is represented and its
// class is reachable from the program's class through child edges.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "expr/axioms.h"
#include "expr/expr.h"

namespace mugraph::expr {

using ClassId = uint32_t;
inline constexpr ClassId kNoClass = UINT32_MAX;

struct ENode {  // 24 bytes (the hash-consing table holds one per node)
  int64_t k = 0;       // sum count / ir::OpKind
  ExprKind kind = ExprKind::kOne;
  uint32_t name = 0;   // input name index (kInput)
  ClassId a = kNoClass, b = kNoClass;
  bool operator==(const ENode&) const = default;
};

struct SaturationLimits {
  // Defaults fit the paper's benchmark programs with room to spare (RMSNorm+MatMul saturates
  // in about 10k nodes); a program that needs more gets an unsaturated e-graph, and the oracle
  // then asks Z3 about every prefix it cannot find, or prunes it (oracle.h).
  size_t max_nodes = 400000;
  int max_iterations = 60;
  double max_seconds = 60;
};

struct SaturationReport {
  bool saturated = false;
  std::string stop_reason;  // "saturated", "node limit", "iteration limit", "time limit"
  int iterations = 0;
  size_t nodes = 0, classes = 0;
  double seconds = 0;
  std::vector<size_t> hits;  // per axiom (both directions), merges that changed something
};

class EGraph {
 public:
  EGraph();
  ~EGraph();
  EGraph(EGraph&&) noexcept;
  EGraph& operator=(EGraph&&) noexcept;

  // Adds every node of `e`; linear in the number of distinct nodes (a hash-consed term is a
  // DAG: x_{i+1} = mul(x_i, x_i) has i + 1 nodes but a tree of 2^(i+1) - 1).
  ClassId add_expr(Expr e);
  ClassId add(const ENode& n);  // n's children must be classes of this graph
  ClassId find(ClassId c) const;
  // Merges two classes; true if they were different. Call rebuild() before reading classes.
  bool merge(ClassId x, ClassId y);
  void rebuild();

  // The class of `e` if every node of `e` is represented; never inserts. Linear in the
  // distinct nodes of `e`, like add_expr.
  std::optional<ClassId> lookup(Expr e) const;
  // Canonical node ids of a class (valid after rebuild) and the nodes themselves.
  const std::vector<uint32_t>& nodes_of(ClassId c) const { return class_nodes_[find(c)]; }
  const ENode& node(uint32_t id) const { return nodes_[id]; }
  const std::string& name(uint32_t id) const { return names_[id]; }
  size_t num_nodes() const { return nodes_.size(); }
  size_t num_classes() const;
  // Canonical class ids, ascending.
  std::vector<ClassId> classes() const;

  // Classes reachable from `roots` through child edges (roots included), as a bitmap.
  std::vector<bool> reachable_from(const std::vector<ClassId>& roots) const;
  // Per class, the fewest steps up to one of `roots` through parent nodes, a step being one
  // node or a sum node directly over a mul node (a matmul's abstraction); UINT32_MAX where
  // `roots` are not reachable. In a saturated e-graph every term of a root's class is
  // represented, so a subterm of any such term sits at least this many steps below it.
  std::vector<uint32_t> steps_to(const std::vector<ClassId>& roots) const;
  // A smallest term of a class (by node count as a tree; counts saturate near 2^32, where
  // any term of that size is taken). Linear in the distinct nodes of the result.
  Expr extract(ClassId c, ExprPool& pool) const;
  // A term of class `root` in which `sub` occurs literally, if `sub`'s class is reachable
  // from `root` (used to hand Z3 a witness).
  std::optional<Expr> witness(ClassId root, Expr sub, ExprPool& pool) const;

 private:
  struct NodeHash {
    size_t operator()(const ENode& n) const;
  };
  ENode canonical(ENode n) const;
  // Memos of one add_expr / lookup / extract call: what each shared subterm (class) gave.
  using ExprMemo = std::unordered_map<Expr, ClassId>;  // lookup: kNoClass = not represented
  ClassId add_expr(Expr e, ExprMemo& done);
  std::optional<ClassId> lookup(Expr e, ExprMemo* done) const;
  Expr extract(ClassId c, ExprPool& pool, std::unordered_map<ClassId, Expr>& done) const;
  uint32_t intern_name(std::string_view s);
  void compute_best() const;

  std::vector<ENode> nodes_;
  std::vector<ClassId> node_class_;  // class each node was added to (find() it)
  mutable std::vector<ClassId> parent_;
  // Hash-consing: canonical node -> its class (egraph.cc: an open-addressing table, as every
  // match of a saturation round looks its instantiated nodes up here).
  struct NodeTable;
  std::unique_ptr<NodeTable> memo_;
  std::vector<std::vector<uint32_t>> class_nodes_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> name_ids_;
  mutable std::vector<uint32_t> best_size_;  // extraction cache, per class
  mutable std::vector<uint32_t> best_node_;
};

// Saturates `g` under `axioms` (each in both directions) within `limits`.
SaturationReport saturate(EGraph& g, const std::vector<Axiom>& axioms,
                          const SaturationLimits& limits);

}  // namespace mugraph::expr
