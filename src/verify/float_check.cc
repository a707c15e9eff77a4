#include "verify/float_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <tuple>
#include <mutex>
#include <memory>

#include "support/format.h"
#include "verify/interpret.h"
#include "verify/overflow.h"
#include "support/memory.h"
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

// ||x - ref|| / ||ref|| (Frobenius), computed on values divided by max |ref| so that huge but
// finite entries do not overflow the squares; NaN when either has a non-finite entry.
template <class T>
double rel_err(const HostTensor<T>& x, const HostTensor<double>& ref) {
  double scale = 0;
  for (size_t i = 0; i < ref.data.size(); ++i) {
    if (!std::isfinite(static_cast<double>(x.data[i])) || !std::isfinite(ref.data[i]))
      return std::nan("");
    scale = std::max(scale, std::fabs(ref.data[i]));
  }
  if (scale == 0) scale = 1;
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.data.size(); ++i) {
    const double d = (static_cast<double>(x.data[i]) - ref.data[i]) / scale;
    num += d * d;
    den += (ref.data[i] / scale) * (ref.data[i] / scale);
  }
  if (!std::isfinite(num)) return std::nan("");
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

std::string fmt_scale(double s) { return "1/" + std::to_string(static_cast<int>(1 / s)); }

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

// The reference's float runs on the check's inputs (scaled as the header says): the same for
// every candidate checked against one reference with one seed, so a small cache keeps the last
// few (the search float-checks many candidates against one program).
struct ReferenceRuns {
  std::vector<HostTensor<double>> in64;
  std::vector<HostTensor<float>> in32;
  Result<Tensors<double>> r64 = error("not run");
  Result<Tensors<float>> r32 = error("not run");
  std::string how;  // how the inputs were changed, when they were
  std::optional<Overflow> overflow;  // where r32 first leaves its format's range, if it does
};

// Which inputs of g reach a sqrt (the radicand side): only those are made non-negative when
// the float64 reference is not finite, so a difference on negative values of the others stays
// visible. A graph-defined kernel that holds a sqrt counts all its inputs (conservative).
std::vector<bool> inputs_feeding_sqrt(const ir::KernelGraph& g) {
  auto has_sqrt = [](const ir::BlockGraph& bg) {
    for (const ir::BlockNode& n : bg.nodes) {
      if (n.kind == ir::BlockNodeKind::kCompute && n.op == ir::OpKind::kSqrt) return true;
      if (n.kind == ir::BlockNodeKind::kThreadGraph)
        for (const auto& tn : n.thread->nodes)
          if (tn.op == ir::OpKind::kSqrt) return true;
    }
    return false;
  };
  std::vector<char> marked(g.tensors.size(), 0);
  for (size_t k = g.ops.size(); k-- > 0;) {
    const ir::KernelOp& op = g.ops[k];
    bool feeds = op.graph_defined ? has_sqrt(*op.block) : op.op == ir::OpKind::kSqrt;
    for (ir::TensorId o : op.outputs) feeds = feeds || marked[static_cast<size_t>(o)];
    if (feeds)
      for (ir::TensorId i : op.inputs) marked[static_cast<size_t>(i)] = 1;
  }
  std::vector<bool> out;
  for (ir::TensorId id : g.inputs) out.push_back(marked[static_cast<size_t>(id)] != 0);
  return out;
}

std::shared_ptr<const ReferenceRuns> compute_reference_runs(const ir::KernelGraph& ref,
                                                            uint64_t seed) {
  auto runs = std::make_shared<ReferenceRuns>();
  Rng rng(seed);
  const auto drawn = normal_inputs(ref, rng);
  // Equal programs are equal on every input of their domain: scaled down (exp overflow), then
  // made non-negative too (sqrt of a raw input).
  const struct {
    double scale;
    bool abs;
  } kTries[] = {{1, false}, {0.25, false}, {1.0 / 16, false}, {1.0 / 64, false},
                {1.0 / 256, false}, {1, true}, {1.0 / 16, true}, {1.0 / 256, true}};
  const std::vector<bool> radicand_inputs = inputs_feeding_sqrt(ref);
  for (const auto& t : kTries) {
    runs->in64 = drawn;
    for (size_t i = 0; i < runs->in64.size(); ++i)
      for (double& e : runs->in64[i].data)
        e = (t.abs && radicand_inputs[i] ? std::fabs(e) : e) * t.scale;
    runs->r64 = interpret<double>(ref, runs->in64);
    if (!runs->r64.ok()) break;
    bool all = true;
    for (const auto& o : *runs->r64) all = all && finite(o);
    if (all) {
      if (t.scale != 1 || t.abs)
        runs->how =
            std::string("the float64 reference is not finite on its normal inputs: inputs") +
            (t.abs ? " feeding a sqrt made non-negative" : "") +
            (t.abs && t.scale != 1 ? " and" : "") +
            (t.scale != 1 ? " scaled by " + fmt_scale(t.scale) : std::string());
      break;
    }
  }
  runs->in32 = convert<float>(runs->in64);
  runs->r32 = interpret<float>(ref, runs->in32);
  bool finite32 = true;
  if (runs->r32.ok())
    for (const auto& o : *runs->r32)
      for (float x : o.data) finite32 = finite32 && std::isfinite(x);
  if (!finite32) runs->overflow = find_overflow(ref, runs->in64);
  return runs;
}

int64_t runs_bytes(const ReferenceRuns& r) {
  int64_t n = 0;
  for (const auto& t : r.in64) n += static_cast<int64_t>(t.data.size()) * 12;  // + in32
  return n;
}

std::shared_ptr<const ReferenceRuns> reference_runs(const ir::KernelGraph& ref, uint64_t seed) {
  static std::mutex mu;
  static std::vector<std::tuple<ir::KernelGraph, uint64_t, std::shared_ptr<const ReferenceRuns>>>
      cache;
  // The cached inputs count against the memory budget, and go when a verification needs room.
  static const bool registered = [] {
    register_cache(
        [] {
          std::lock_guard<std::mutex> lock(mu);
          int64_t n = 0;
          for (const auto& e : cache) n += runs_bytes(*std::get<2>(e));
          return n;
        },
        [] {
          std::lock_guard<std::mutex> lock(mu);
          cache.clear();
        });
    return true;
  }();
  (void)registered;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& [g, s, runs] : cache)
      if (s == seed && g == ref) return runs;
  }
  auto runs = compute_reference_runs(ref, seed);
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() >= 4) cache.erase(cache.begin());
  cache.emplace_back(ref, seed, runs);
  return runs;
}

}  // namespace

FloatReport float_check(const ir::KernelGraph& ref, const ir::KernelGraph& cand,
                        std::vector<int>& perm, uint64_t seed, bool equality) {
  FloatReport rep;
  const std::shared_ptr<const ReferenceRuns> runs = reference_runs(ref, seed);
  const std::vector<HostTensor<double>>& in64 = runs->in64;
  const Result<Tensors<double>>& r64 = runs->r64;
  const std::string& how = runs->how;
  const auto fail = [&](const std::string& why) {
    rep.ok = false;
    rep.judged = false;
    rep.note = why;
    return rep;
  };
  if (!r64.ok()) return fail(r64.status().message());
  for (size_t i = 0; i < r64->size(); ++i)
    if (!finite((*r64)[i]))
      return fail("the float64 reference output '" + ref.tensor(ref.outputs[i]).name +
                  "' is not finite on any input tried (scaled to 1/256, made non-negative)");
  rep.note = how;
  const auto& in32 = runs->in32;
  const Result<Tensors<float>>& r32 = runs->r32;
  auto c32 = interpret<float>(cand, in32);
  if (!r32.ok()) return fail(r32.status().message());
  if (!c32.ok()) {
    rep.ok = false;
    rep.note = c32.status().message();
    return rep;
  }
  std::optional<Result<Tensors<double>>> c64;  // only when the program overflows
  std::string overflowing;                      // the reference's outputs that do
  std::optional<Overflow> first_output;         // the first of them
  const bool find = perm.empty();
  std::vector<bool> used(cand.outputs.size(), false);
  for (size_t i = 0; i < ref.outputs.size(); ++i) {
    const ir::Tensor& t = ref.tensor(ref.outputs[i]);
    const HostTensor<double>& want = (*r64)[i];
    const double ref_err = rel_err((*r32)[i], want);
    const bool overflow = std::isnan(ref_err);  // the program itself, in its precision
    if ((overflow || equality) && !c64) {
      c64 = interpret<double>(cand, in64);
      if (!c64->ok()) return fail(c64->status().message());
    }
    auto err = [&](size_t c) {
      return overflow ? rel_err((**c64)[c], want) : rel_err((*c32)[c], want);
    };
    int j = find ? -1 : perm[i];
    if (find) {  // the unused same-shape candidate output closest to this reference output
      double best = 0;
      for (size_t c = 0; c < cand.outputs.size(); ++c) {
        if (used[c] || !((*c32)[c].shape == want.shape)) continue;
        const double e = err(c);
        if (j < 0 || e < best || std::isnan(best)) j = static_cast<int>(c), best = e;
      }
      if (j < 0) j = static_cast<int>(i);
      used[static_cast<size_t>(j)] = true;
      perm.push_back(j);
    }
    const double cand_err = err(static_cast<size_t>(j));
    if (overflow) {
      overflowing += std::string(overflowing.empty() ? "" : ", ") + "'" + t.name + "'";
      if (!first_output)
        first_output = Overflow{t.name, std::string(ir::dtype_name(t.type.dtype))};
      FloatOutputError e{t.name, 0, cand_err, kFloat64Tolerance, false};
      e.ok = std::isfinite(cand_err) && cand_err <= kFloat64Tolerance;
      rep.outputs.push_back(e);
    } else {
      rep.outputs.push_back(judge(t.name, ref_err, cand_err, t.type.dtype));
      if (equality) {
        const double e64 = rel_err((**c64)[static_cast<size_t>(j)], want);
        if (!(e64 <= kFloat64Tolerance)) {
          rep.outputs.back().ok = false;
          rep.float64_mismatch = true;
          rep.note += std::string(rep.note.empty() ? "" : "; ") + "output '" + t.name +
                      "': the candidate's float64 run differs from the reference's by " +
                      fmt_g3(e64) + " (> " + fmt_g3(kFloat64Tolerance) + ")";
        }
      }
    }
    rep.ok = rep.ok && rep.outputs.back().ok;
  }
  if (!overflowing.empty()) {
    const Overflow o = runs->overflow.value_or(*first_output);
    rep.note += std::string(rep.note.empty() ? "" : "; ") + o.message() + " (output " +
                overflowing + " not finite in its own precision): candidate compared in float64";
  }
  return rep;
}

}  // namespace mugraph::verify
