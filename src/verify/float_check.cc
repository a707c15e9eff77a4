#include "verify/float_check.h"

#include <cmath>

#include "verify/interpret.h"
#include "verify/random_inputs.h"

namespace mugraph::verify {
namespace {

double unit_roundoff(ir::DType t) {
  switch (t) {
    case ir::DType::kF32: return std::ldexp(1.0, -24);
    case ir::DType::kF16: return std::ldexp(1.0, -11);
    case ir::DType::kBF16: return std::ldexp(1.0, -8);
  }
  return 1;
}

// ||x - ref|| / ||ref|| (Frobenius); NaN when either has a non-finite entry.
template <class T>
double rel_err(const HostTensor<T>& x, const HostTensor<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.data.size(); ++i) {
    const double d = static_cast<double>(x.data[i]) - ref.data[i];
    num += d * d;
    den += ref.data[i] * ref.data[i];
  }
  if (!std::isfinite(num) || !std::isfinite(den)) return std::nan("");
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

bool finite(const HostTensor<double>& t) {
  for (double x : t.data)
    if (!std::isfinite(x)) return false;
  return true;
}

FloatOutputError judge(const std::string& name, double ref_err, double cand_err, ir::DType t) {
  FloatOutputError e{name, ref_err, cand_err, 0, true};
  e.limit = std::max(kFloatFactor * ref_err, kFloatFloorUlps * unit_roundoff(t));
  e.ok = std::isfinite(cand_err) && cand_err <= e.limit;
  return e;
}

}  // namespace

FloatReport float_check(const ir::KernelGraph& ref, const ir::KernelGraph& cand,
                        std::vector<int>& perm, uint64_t seed) {
  FloatReport rep;
  Rng rng(seed);
  const auto in64 = normal_inputs(ref, rng);
  const auto in32 = convert<float>(in64);
  auto r64 = interpret<double>(ref, in64);
  auto r32 = interpret<float>(ref, in32);
  auto c32 = interpret<float>(cand, in32);
  if (!r64.ok() || !r32.ok() || !c32.ok()) {
    rep.ok = false;
    rep.note = !r64.ok() ? r64.status().message() : !c32.ok() ? c32.status().message() : r32.status().message();
    return rep;
  }
  const bool find = perm.empty();
  std::vector<bool> used(cand.outputs.size(), false);
  for (size_t i = 0; i < ref.outputs.size(); ++i) {
    const ir::Tensor& t = ref.tensor(ref.outputs[i]);
    const HostTensor<double>& want = (*r64)[i];
    if (!finite(want)) {
      rep.note = "the float64 reference output '" + t.name + "' is not finite: no float comparison";
      if (find) perm.push_back(static_cast<int>(i));
      continue;
    }
    const double ref_err = rel_err((*r32)[i], want);
    if (std::isnan(ref_err)) {
      rep.note = "the reference overflows in float32 (output '" + t.name + "', stored as " +
                 std::string(ir::dtype_name(t.type.dtype)) + "): no float comparison";
      if (find) perm.push_back(static_cast<int>(i));
      continue;
    }
    int j = find ? -1 : perm[i];
    if (find) {  // the unused same-shape candidate output closest to this reference output
      double best = 0;
      for (size_t c = 0; c < cand.outputs.size(); ++c) {
        if (used[c] || !((*c32)[c].shape == want.shape)) continue;
        const double e = rel_err((*c32)[c], want);
        if (j < 0 || e < best || std::isnan(best)) j = static_cast<int>(c), best = e;
      }
      if (j < 0) j = static_cast<int>(i);
      used[static_cast<size_t>(j)] = true;
      perm.push_back(j);
    }
    rep.outputs.push_back(judge(t.name, ref_err, rel_err((*c32)[static_cast<size_t>(j)], want), t.type.dtype));
    rep.ok = rep.ok && rep.outputs.back().ok;
  }
  return rep;
}

}  // namespace mugraph::verify
