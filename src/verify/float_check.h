// The floating-point check (Mirage §5.2, "numerical stability"): a candidate can be equal to the
// program over the reals and still be useless in floating point (say, it subtracts two huge
// intermediates). Both programs run in float32 on seeded normal inputs (mean 0, standard
// deviation the input's scale by role: verify/random_inputs.h), with every
// stored tensor rounded to its declared type (f16/bf16 programs are emulated: see
// verify/arith.h), and are compared with a float64 run of the reference on the same inputs.
//
// THE RULE. For each output, err(x) = ||x - ref64||_F / ||ref64||_F. The candidate is accepted
// iff err(cand32) <= max(kFactor * err(ref32), kFloorUlps * u), where u is the unit roundoff of
// the output's type (2^-24 f32, 2^-11 f16, 2^-8 bf16). Why: a correct reordering (another
// summation order, a fused epilogue) changes the rounding error by a small factor, not by
// orders of magnitude; kFactor = 16 leaves room for that while an unstable candidate (error
// 1e3x the reference's) fails. The floor covers references that happen to be almost exact.
// WHEN THE RULE CANNOT JUDGE. A float64 reference that is not finite (exp of large arguments)
// is retried on inputs scaled by 1/4, 1/16, 1/64 and 1/256, then with the inputs that feed a
// sqrt made non-negative (sqrt of a raw input; the others keep their signs) at scales 1, 1/16,
// 1/256: equal programs are equal on every input of their domain;
// the note says which inputs were used. When the program itself overflows in its own
// precision (the float32 reference is not finite while the float64 one is), that is the
// program's doing, never the candidate's: the candidate is then compared in float64 against the
// float64 reference (accepted iff the normwise error is <= kFloat64Tolerance) and the note names
// the first tensor of the program, in program order, that is not finite (verify/overflow.h) and
// the outputs that are not. When no scale gives a finite reference, the check could not judge:
// `judged` is false and `ok` is false (a verdict built on it is INCONCLUSIVE, never an
// acceptance).
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace mugraph::verify {

inline constexpr double kFloatFactor = 16;
inline constexpr double kFloatFloorUlps = 16;
// float64 candidate vs float64 reference when the program overflows in its own precision:
// reorderings change float64 results by ~1e-15; real mistakes by O(1).
inline constexpr double kFloat64Tolerance = 1e-8;

struct FloatOutputError {
  std::string name;     // the reference's output
  double ref_err = 0;   // float32 reference vs float64 reference
  double cand_err = 0;  // float32 candidate vs float64 reference
  double limit = 0;     // the largest accepted cand_err
  bool ok = true;
};

struct FloatReport {
  bool ok = true;      // judged and every output accepted
  bool judged = true;  // false: the check could not judge (then ok is false too)
  bool float64_mismatch = false;  // with `equality`: some output's float64 runs differ
  std::string note;    // inputs scaled, program overflow, or why it could not judge
  std::vector<FloatOutputError> outputs;
};

// Runs the check with ref output i matched to cand output perm[i]; with an empty perm, matches
// each ref output to the unused same-shape cand output of least error (and returns it in perm).
// With `equality` (the verifier sets it when the field test could not decide: not Lax, sqrt
// identities) the candidate must also agree with the reference in float64, both run without
// storage rounding, to kFloat64Tolerance: the stability rule alone tolerates an error of the
// output type's precision (16 ulps of f16 = 0.8%), which a wrong constant can hide under.
FloatReport float_check(const ir::KernelGraph& ref, const ir::KernelGraph& cand,
                        std::vector<int>& perm, uint64_t seed, bool equality = false);

}  // namespace mugraph::verify
