#include "verify/field_test.h"

#include "verify/interface.h"

namespace mugraph::verify {
namespace {

// Runs `g` in the current field context; the outcome says whether the run was usable.
FieldTestResult run(const ir::KernelGraph& g, const Tensors<FF>& in, Tensors<FF>& out) {
  auto r = interpret<FF>(g, in);
  if (!r.ok()) return {FieldOutcome::kInvalid, r.status().message()};
  out = std::move(r).value();
  const FieldContext& c = field_context();
  if (!c.invalid.empty()) return {FieldOutcome::kInvalid, c.invalid};
  if (c.zero_divisor) return {FieldOutcome::kInconclusive, "zero divisor met"};
  return {FieldOutcome::kEqual, ""};
}


}  // namespace

Tensors<FF> random_field_inputs(const ir::KernelGraph& g, const FieldParams& f, Rng& rng) {
  Tensors<FF> out;
  for (ir::TensorId id : g.inputs) {
    HostTensor<FF> t(g.tensor(id).type.shape, FF{});
    for (FF& x : t.data) x = random_ff(f, rng);
    out.push_back(std::move(t));
  }
  return out;
}

FieldTestResult field_test(const ir::KernelGraph& ref, const ir::KernelGraph& cand,
                           const FieldParams& f, Rng& rng) {
  if (Status s = check_same_interface(ref, cand); !s.ok()) return {FieldOutcome::kInvalid, s.message()};
  FieldContext ctx(f, random_root_of_unity(f, rng));
  FieldScope scope(ctx);
  const Tensors<FF> in = random_field_inputs(ref, f, rng);
  Tensors<FF> a, b;
  if (FieldTestResult r = run(ref, in, a); r.outcome != FieldOutcome::kEqual) return r;
  if (FieldTestResult r = run(cand, in, b); r.outcome != FieldOutcome::kEqual) return r;
  for (size_t o = 0; o < a.size(); ++o)
    for (size_t i = 0; i < a[o].data.size(); ++i)
      if (!field_values_agree(a[o].data[i], b[o].data[i]))
        return {FieldOutcome::kDifferent, "output " + std::to_string(o) + " '" +
                                              cand.tensor(cand.outputs[o]).name + "' entry " +
                                              std::to_string(i) + " differs"};
  return {FieldOutcome::kEqual, ""};
}

}  // namespace mugraph::verify
