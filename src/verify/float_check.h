// The floating-point check (Mirage §5.2, "numerical stability"): a candidate can be equal to the
// program over the reals and still be useless in floating point (say, it subtracts two huge
// intermediates). Both programs run in float32 on seeded standard-normal inputs, with every
// stored tensor rounded to its declared type (f16/bf16 programs are emulated: see
// verify/arith.h), and are compared with a float64 run of the reference on the same inputs.
//
// THE RULE. For each output, err(x) = ||x - ref64||_F / ||ref64||_F. The candidate is accepted
// iff err(cand32) <= max(kFactor * err(ref32), kFloorUlps * u), where u is the unit roundoff of
// the output's type (2^-24 f32, 2^-11 f16, 2^-8 bf16). Why: a correct reordering (another
// summation order, a fused epilogue) changes the rounding error by a small factor, not by
// orders of magnitude; kFactor = 16 leaves room for that while an unstable candidate (error
// 1e3x the reference's) fails. The floor covers references that happen to be almost exact.
// When the float64 reference itself is not finite, or the float32 reference overflows, the
// check cannot judge and says so (it does not reject).
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace mugraph::verify {

inline constexpr double kFloatFactor = 16;
inline constexpr double kFloatFloorUlps = 16;

struct FloatOutputError {
  std::string name;     // the reference's output
  double ref_err = 0;   // float32 reference vs float64 reference
  double cand_err = 0;  // float32 candidate vs float64 reference
  double limit = 0;     // the largest accepted cand_err
  bool ok = true;
};

struct FloatReport {
  bool ok = true;
  std::string note;  // why the check could not judge, when it could not
  std::vector<FloatOutputError> outputs;
};

// Runs the check with ref output i matched to cand output perm[i]; with an empty perm, matches
// each ref output to the unused same-shape cand output of least error (and returns it in perm).
FloatReport float_check(const ir::KernelGraph& ref, const ir::KernelGraph& cand,
                        std::vector<int>& perm, uint64_t seed);

}  // namespace mugraph::verify
