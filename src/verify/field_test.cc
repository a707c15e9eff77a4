#include "verify/field_test.h"

#include "verify/field_eval.h"
#include "verify/interface.h"

namespace mugraph::verify {
std::optional<FieldTestResult> field_run_problem() {
  const FieldContext& c = field_context();
  if (!c.invalid.empty()) return FieldTestResult{FieldOutcome::kInvalid, c.invalid};
  if (c.zero_divisor) return FieldTestResult{FieldOutcome::kInconclusive, "zero divisor met"};
  return std::nullopt;
}

FieldTestResult field_test(const ir::KernelGraph& ref, const ir::KernelGraph& cand,
                           const FieldParams& f, Rng& rng) {
  if (Status s = check_same_interface(ref, cand); !s.ok()) return {FieldOutcome::kInvalid, s.message()};
  FieldContext ctx(f, random_root_of_unity(f, rng));
  FieldScope scope(ctx);
  const uint64_t key = rng.next_u64();
  std::vector<Box> want;
  for (ir::TensorId id : ref.outputs) want.push_back(full_box(ref.tensor(id).type.shape));
  const auto a = eval_field(ref, want, key);
  if (auto bad = field_run_problem()) return *bad;
  const auto b = eval_field(cand, want, key);
  if (auto bad = field_run_problem()) return *bad;
  for (size_t o = 0; o < a.size(); ++o)
    for (size_t i = 0; i < a[o].data.data.size(); ++i)
      if (!field_values_agree(a[o].data.data[i], b[o].data.data[i]))
        return {FieldOutcome::kDifferent, "output " + std::to_string(o) + " '" +
                                              cand.tensor(cand.outputs[o]).name + "' entry " +
                                              std::to_string(i) + " differs"};
  return {FieldOutcome::kEqual, ""};
}

}  // namespace mugraph::verify
