// Demand-driven evaluation of a uGraph over Z_p x Z_q: computes only what a chosen set of output
// entries needs. The verifier's screen mode compares a few random output entries; for
// RMSNorm+MatMul (16x4096 by 4096x4096) that is a few thousandths of the full work. With every
// output entry demanded it is the full evaluation the certify mode needs, through the same code.
//
// How: a backward pass gives every tensor a *box* (per dim, a sorted list of indices) that its
// consumers read; a forward pass computes each tensor on its box only. Predefined ops run the
// shared op semantics (eval_op) on the compacted boxes: element-wise ops, broadcasting, matmul
// (all of K), sum (whole groups) and concat compute a compact box from compact inputs exactly.
// Repeat widens the box to the whole repeated dim and reshape to the whole tensor. A graph-
// defined kernel runs only the blocks whose output tiles meet the demanded box, and each of
// them the same way inside: demands go backwards from its savers through post-loop ops,
// accumulators (a concatenating one reads index i mod len of its input), in-loop ops and
// thread graphs to its iterators (tile coordinates, one box per tensor for all iterations); it
// runs only the iterations that reach a demanded accumulator, computes loop-invariant values
// once, and every op through eval_op (one source of op semantics, shared with the interpreter,
// which the tests compare this with).
//
// Inputs are hashed_ff(key, input number, linear index), so any subset can be materialized and
// both programs of a test see the same values.
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "ir/graph.h"
#include "verify/finite_field.h"
#include "verify/group_ring.h"
#include "verify/host_tensor.h"

namespace mugraph::verify {

// A set of multi-indices: the product of one sorted, duplicate-free index list per dim.
struct Box {
  int rank = 0;
  std::array<std::vector<int64_t>, 4> idx;
  int64_t numel() const;
  ir::Shape extents() const;  // the compact shape
  bool operator==(const Box&) const = default;
};
Box full_box(const ir::Shape& s);
Box unite(const Box& a, const Box& b);  // per dim union (a superset of the set union)
// The multi-index of `box`'s entry number `compact` (row-major over box.extents()), as "[i, j]".
std::string index_text(const Box& box, int64_t compact);

// A tensor of global shape `shape` known on `box` (data has box.extents(), row-major).
template <class T>
struct BoxTensorT {
  ir::Shape shape;
  Box box;
  HostTensor<T> data;
};
using BoxTensor = BoxTensorT<FF>;

// The entries of `src` at `want` (which must lie in src.box), compacted.
template <class T>
HostTensor<T> gather(const BoxTensorT<T>& src, const Box& want);
extern template HostTensor<FF> gather(const BoxTensorT<FF>&, const Box&);
extern template HostTensor<GR> gather(const BoxTensorT<GR>&, const Box&);

// The most entries a demand-driven evaluation of `g` for `want` (as eval_field and
// eval_group_ring do) holds at once: inputs on their demanded boxes, each op's produced box,
// tensors dropped after their last reader. For memory estimates (verifier.h).
int64_t demanded_peak_entries(const ir::KernelGraph& g,
                              const std::vector<std::optional<Box>>& want);

// Every input of `g` in full, as eval_field draws it (for tests against the plain interpreter).
std::vector<HostTensor<FF>> hashed_inputs(const ir::KernelGraph& g, uint64_t key);

// Inputs this thread's eval_field and eval_group_ring took from their memo of hashed input
// tensors instead of hashing them again (a diagnostic for tests).
int64_t input_memo_hits();

// Every input of a program in full, hashed with `key` in the active context's field: shared by
// evaluations of programs with the same inputs (the search's every-entry test hashes a weight
// matrix once, not once per candidate, and its threads hold one copy, not one each).
struct FullInputs {
  uint64_t p = 0, q = 0, key = 0;
  std::vector<std::shared_ptr<BoxTensor>> tensors;  // read only
};
FullInputs full_inputs(const ir::KernelGraph& g, uint64_t key);

// Evaluates `g` at least at the entries `want[i]` of output i, on hashed inputs with `key`,
// running a graph-defined kernel's blocks on `threads` threads (0: all cores); an input demanded
// in full is read from `shared` when given (which must be of this field, key and inputs).
// Needs an active FieldScope; the context's flags report zero divisors and non-Lax events.
std::vector<BoxTensor> eval_field(const ir::KernelGraph& g, const std::vector<Box>& want,
                                  uint64_t key, int threads = 0,
                                  const FullInputs* shared = nullptr);

// The same demand-driven evaluation over the group ring (verify/group_ring.h), for the
// group-ring test: output i at want[i] (nullopt: not needed), on the inputs eval_field draws with
// `key` (each entry a variable), hashed on demand. Entries not demanded are not returned.
std::vector<std::optional<BoxTensorT<GR>>> eval_group_ring(
    const ir::KernelGraph& g, const std::vector<std::optional<Box>>& want, uint64_t key,
    int threads = 0);

}  // namespace mugraph::verify
