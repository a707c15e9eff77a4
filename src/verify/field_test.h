// One random test of two uGraphs over Z_p x Z_q (Mirage §5.2): both run through the reference
// interpreter on the same uniformly random inputs and the same random q-th root of unity w, and
// every output entry is compared. This is the building block of the verifier's screen and
// certify modes; it says nothing about how many tests make a proof.
#pragma once

#include <string>

#include "ir/graph.h"
#include "support/rng.h"
#include "verify/finite_field.h"
#include "verify/interpret.h"

namespace mugraph::verify {

extern template Result<Tensors<FF>> interpret(const ir::KernelGraph&, const Tensors<FF>&);

enum class FieldOutcome {
  kEqual,         // every output entry agrees
  kDifferent,     // some entry differs: the graphs are certainly not equivalent
  kInconclusive,  // a zero divisor was met: redraw, never count
  kInvalid,       // not evaluable over the field (non-Lax op, two exps on a path, or
                  // mismatched inputs/outputs); `detail` says which
};

struct FieldTestResult {
  FieldOutcome outcome = FieldOutcome::kInvalid;
  std::string detail;  // for kDifferent: the first differing output and entry
};

// Two output values agree if their Z_p parts do and, where both still have one, their Z_q parts
// (a value downstream of an exp has no Z_q part, Table 3).
inline bool field_values_agree(const FF& a, const FF& b) {
  return a.p == b.p && (!a.has_q || !b.has_q || a.q == b.q);
}

// Uniform random inputs in Z_p x Z_q for `g`.
Tensors<FF> random_field_inputs(const ir::KernelGraph& g, const FieldParams& f, Rng& rng);

// Runs one test of `ref` against `cand` (outputs compared in order) with fresh inputs and w.
FieldTestResult field_test(const ir::KernelGraph& ref, const ir::KernelGraph& cand,
                           const FieldParams& f, Rng& rng);

}  // namespace mugraph::verify
