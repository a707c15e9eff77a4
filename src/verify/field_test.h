// One random test of two uGraphs over Z_p x Z_q (Mirage §5.2): both are evaluated in full
// (verify/field_eval.h) on the same pseudo-random inputs and the same random q-th root of unity
// w, and every output entry is compared in order. The verifier (verify/verifier.h) builds its
// screen and certify modes from the same pieces; this says nothing about how many tests make a
// proof.
#pragma once

#include <optional>
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

// What spoiled the evaluation just run in the current field context (a non-Lax event: kInvalid;
// a zero divisor: kInconclusive), or nullopt when it is usable.
std::optional<FieldTestResult> field_run_problem();

// Runs one test of `ref` against `cand` (outputs compared in order) with fresh inputs and w.
FieldTestResult field_test(const ir::KernelGraph& ref, const ir::KernelGraph& cand,
                           const FieldParams& f, Rng& rng);

}  // namespace mugraph::verify
