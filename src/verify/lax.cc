#include "verify/lax.h"

#include <algorithm>
#include <cmath>

#include "support/format.h"

namespace mugraph::verify {
namespace {

double log2_sum(double a, double b) {  // log2(2^a + 2^b)
  const double hi = std::max(a, b), lo = std::min(a, b);
  return hi + std::log2(1 + std::exp2(lo - hi));
}

Side prod(const Side& a, const Side& b) {
  return {a.k * b.k, a.deg + b.deg, a.lw + b.lw, a.exp || b.exp, a.same_constant && b.same_constant};
}
Side plus(const Side& a, const Side& b) {
  const bool exp = a.exp || b.exp;
  return {exp ? a.k + b.k : 1, std::max(a.deg, b.deg), log2_sum(a.lw, b.lw), exp, false};
}
// a^n for a side (n-fold product).
Side power(const Side& a, double n) {
  return {std::pow(a.k, n), a.deg * n, a.lw * n, a.exp, a.same_constant};
}

// The exponent of a product of n terms, each exponent bounded by e: sum of n fractions g/h.
ExponentBound combine(const ExponentBound& e, double n) {
  if (n <= 1) return e;
  return {e.dg + (n - 1) * e.dh, n * e.dh, e.lwg + (n - 1) * e.lwh + std::log2(n), n * e.lwh};
}
ExponentBound max_ex(const ExponentBound& a, const ExponentBound& b) {
  return {std::max(a.dg, b.dg), std::max(a.dh, b.dh), std::max(a.lwg, b.lwg), std::max(a.lwh, b.lwh)};
}
// Exponent bound after multiplying sides whose exp flags are given (n exp factors per term).
ExponentBound product_ex(const Form& x, const Form& y, bool xa, bool ya) {
  return combine(max_ex(x.ex, y.ex), static_cast<double>(xa) + static_cast<double>(ya));
}

Form with_path(Form r, const Form& x, const Form& y) {
  r.exps = std::max(x.exps, y.exps);
  r.path = x.exps >= y.exps ? x.path : y.path;
  return r;
}

Form constant_one() { return Form{}; }

// log2 |x| for any int64 (std::llabs(INT64_MIN) is undefined: take the magnitude unsigned).
double log2_abs(int64_t x) {
  const uint64_t m = x < 0 ? uint64_t{0} - static_cast<uint64_t>(x) : static_cast<uint64_t>(x);
  return std::log2(static_cast<double>(m));
}

Form mul(const Form& x, const Form& y) {
  Form r;
  r.num = prod(x.num, y.num);
  r.den = prod(x.den, y.den);
  r.ex = max_ex(product_ex(x, y, x.num.exp, y.num.exp), product_ex(x, y, x.den.exp, y.den.exp));
  return with_path(r, x, y);
}

Form div(const Form& x, const Form& y) {
  Form r;
  r.num = prod(x.num, y.den);
  r.den = prod(x.den, y.num);
  r.den.same_constant = r.den.same_constant && r.den.deg == 0 && !r.den.exp;
  r.ex = max_ex(product_ex(x, y, x.num.exp, y.den.exp), product_ex(x, y, x.den.exp, y.num.exp));
  return with_path(r, x, y);
}

Form add(const Form& x, const Form& y) {
  Form r;
  r.num = plus(prod(x.num, y.den), prod(y.num, x.den));
  r.den = prod(x.den, y.den);
  r.ex = max_ex(max_ex(product_ex(x, y, x.num.exp, y.den.exp), product_ex(x, y, y.num.exp, x.den.exp)),
                product_ex(x, y, x.den.exp, y.den.exp));
  return with_path(r, x, y);
}

// The sum of g entries of x (a reduction, a matmul's k, or a for-loop's accumulation).
Form sum(const Form& x, double g) {
  if (g <= 1) return x;
  Form r = x;
  if (x.den.same_constant) {  // one shared denominator: add the numerators
    r.num.k = x.num.exp ? g * x.num.k : 1;
    r.num.lw = x.num.lw + std::log2(g);
    return r;
  }
  r.num = prod(x.num, power(x.den, g - 1));
  r.num.k = x.num.exp || x.den.exp ? g * r.num.k : 1;
  r.num.lw += std::log2(g);
  r.den = power(x.den, g);
  r.den.same_constant = false;
  if (x.den.exp) r.ex = combine(x.ex, g);
  return r;
}

Form join(const Form& x, const Form& y) {  // entries of either (concat)
  Form r = with_path(x, x, y);
  auto side = [](const Side& a, const Side& b) {
    const bool one = a.deg == 0 && b.deg == 0 && a.lw == 0 && b.lw == 0 && !a.exp && !b.exp;
    return Side{std::max(a.k, b.k), std::max(a.deg, b.deg), std::max(a.lw, b.lw), a.exp || b.exp,
                one};
  };
  r.num = side(x.num, y.num);
  r.den = side(x.den, y.den);
  r.ex = max_ex(x.ex, y.ex);
  return r;
}

struct Walker {
  LaxInfo& info;

  void fail(const std::string& why) {
    if (info.lax) info.lax = false, info.reason = why;
  }

  std::string path_text(const Path& p) {
    std::vector<const std::string*> names;
    for (const PathNode* n = p.get(); n; n = n->prev.get()) names.push_back(&n->name);
    std::string s;
    for (size_t i = names.size(); i-- > 0;) s += (s.empty() ? "" : " -> ") + *names[i];
    return s;
  }

  Form exp_of(const Form& x, const std::string& name, const std::string& where) {
    info.has_exp = true;
    if (x.exps >= 1)
      fail("second exp on one path at " + where + ": " + path_text(x.path) + " -> " + name);
    Form r;
    r.num.exp = true;
    r.ex = {x.num.deg, x.den.deg, x.num.lw, x.den.lw};
    r.exps = x.exps + 1;
    r.path = x.path;
    return r;
  }

  // Applies one op of the table; `mult` is how many times it runs (blocks x iterations).
  Form apply(ir::OpKind op, const ir::OpAttrs& at, const std::vector<const Form*>& in,
             const std::vector<ir::Shape>& shapes, const ir::Shape& out, const std::string& name,
             const std::string& where, double mult) {
    using K = ir::OpKind;
    const Form& x = *in[0];
    if (op == K::kDiv || op == K::kReciprocal) {  // count divisions by exp-free values (for z)
      const Form& y = op == K::kDiv ? *in[1] : x;
      if (!y.num.exp && !y.den.exp) {
        info.divisions += static_cast<double>(out.numel()) * mult;
        info.divisor_degree = std::max(info.divisor_degree, y.num.deg);
        info.divisor_lw = std::max(info.divisor_lw, y.num.lw);
      }
    }
    switch (op) {
      case K::kMatmul: return sum(mul(x, *in[1]), static_cast<double>(shapes[0][shapes[0].rank - 1]));
      case K::kConcatMatmul:
        return add(sum(mul(x, *in[2]), static_cast<double>(shapes[0][shapes[0].rank - 1])),
                   sum(mul(*in[1], *in[3]), static_cast<double>(shapes[1][shapes[1].rank - 1])));
      case K::kExp: return exp_of(x, name, where);
      case K::kSquare: return mul(x, x);
      case K::kSqrt: {
        info.has_sqrt = true;
        // Its fresh root is keyed by the radicand's Z_p value alone (an exp value has no Z_q
        // part), and exponents that agree mod q collide with probability ~1/q per pair: the
        // collision term below (degree / p) does not cover it.
        if (x.num.exp || x.den.exp) info.sqrt_of_exp = true;
        info.sqrt_evaluations += static_cast<double>(out.numel()) * mult;
        info.radicand_degree = std::max(info.radicand_degree, x.num.deg + x.den.deg);
        info.radicand_num_lw = std::max(info.radicand_num_lw, x.num.lw);
        info.radicand_den_lw = std::max(info.radicand_den_lw, x.den.lw);
        Form r;  // a fresh variable
        r.num.deg = 1;
        r.num.same_constant = false;
        r.exps = x.exps;
        r.path = x.path;
        return r;
      }
      case K::kSilu: {
        const Form e = exp_of(x, name, where);  // exp(-x): -x has x's form
        return with_path(div(x, add(constant_one(), e)), e, e);
      }
      case K::kRelu:
      case K::kGelu:
        fail(std::string(ir::op_name(op)) + " at " + where + " is not in the Lax fragment");
        return x;
      case K::kNeg: return x;
      case K::kReciprocal: return div(constant_one(), x);
      case K::kScale: {
        Form r = x;
        if (at.factor.num == 0) return Form{};
        r.num.lw += log2_abs(at.factor.num);
        r.den.lw += log2_abs(at.factor.den);
        // from_rational divides by den in the field: a zero divisor when q divides it
        info.scale_denominator_primes += std::floor(log2_abs(at.factor.den) / 30 + 1e-6);
        return r;
      }
      case K::kAdd:
      case K::kSub: return add(x, *in[1]);
      case K::kMul: return mul(x, *in[1]);
      case K::kDiv: return div(x, *in[1]);
      case K::kSum: return sum(x, static_cast<double>(at.group));
      case K::kRepeat:
      case K::kReshape:
      case K::kTranspose: return x;
      case K::kConcat: return join(x, *in[1]);
    }
    MG_CHECK(false, "bad op");
  }

  Form named(Form f, const std::string& name) {
    f.path = std::make_shared<const PathNode>(name, std::move(f.path));
    return f;
  }

  std::vector<Form> thread(const ir::ThreadGraph& tg, const std::vector<Form>& ins,
                           const std::string& where, double mult) {
    std::vector<Form> v(tg.tensors.size());
    for (size_t i = 0; i < ins.size(); ++i) v[static_cast<size_t>(tg.inputs[i])] = ins[i];
    for (const auto& n : tg.nodes) {
      std::vector<const Form*> in;
      std::vector<ir::Shape> shapes;
      for (ir::TensorId id : n.inputs) {
        in.push_back(&v[static_cast<size_t>(id)]);
        shapes.push_back(tg.tensors[static_cast<size_t>(id)].type.shape);
      }
      const auto& t = tg.tensors[static_cast<size_t>(n.output)];
      v[static_cast<size_t>(n.output)] = named(
          apply(n.op, n.attrs, in, shapes, t.type.shape, t.name, "thread node '" + t.name + "' of " + where, mult),
          t.name);
    }
    std::vector<Form> out;
    for (ir::TensorId id : tg.outputs) out.push_back(v[static_cast<size_t>(id)]);
    return out;
  }

  std::vector<Form> block(const ir::BlockGraph& bg, const std::vector<Form>& ins, const std::string& kernel) {
    using ir::BlockNodeKind;
    std::vector<Form> v(bg.tensors.size());
    std::vector<Form> outs;
    const double blocks = static_cast<double>(bg.grid[0] * bg.grid[1] * bg.grid[2]);
    for (const ir::BlockNode& n : bg.nodes) {
      const std::string name = n.outputs.empty() ? "" : bg.tensors[static_cast<size_t>(n.outputs[0])].name;
      const std::string where = "block node '" + name + "' of kernel '" + kernel + "'";
      const bool in_loop = !n.outputs.empty() && bg.phases[static_cast<size_t>(n.outputs[0])] == ir::Phase::kInLoop;
      const double mult = blocks * (in_loop ? static_cast<double>(bg.forloop) : 1.0);
      switch (n.kind) {
        case BlockNodeKind::kInputIterator: v[static_cast<size_t>(n.outputs[0])] = named(ins[static_cast<size_t>(n.input_index)], name); break;
        case BlockNodeKind::kAccumulator: {
          const Form& x = v[static_cast<size_t>(n.inputs[0])];
          v[static_cast<size_t>(n.outputs[0])] = named(n.fmap == ir::kReplica ? sum(x, static_cast<double>(bg.forloop)) : x, name);
          break;
        }
        case BlockNodeKind::kOutputSaver: outs.push_back(v[static_cast<size_t>(n.inputs[0])]); break;
        case BlockNodeKind::kCompute: {
          std::vector<const Form*> in;
          std::vector<ir::Shape> shapes;
          for (ir::TensorId id : n.inputs) {
            in.push_back(&v[static_cast<size_t>(id)]);
            shapes.push_back(bg.tensors[static_cast<size_t>(id)].type.shape);
          }
          v[static_cast<size_t>(n.outputs[0])] = named(
              apply(n.op, n.attrs, in, shapes, bg.tensors[static_cast<size_t>(n.outputs[0])].type.shape, name, where, mult), name);
          break;
        }
        case BlockNodeKind::kThreadGraph: {
          std::vector<Form> tin;
          for (ir::TensorId id : n.inputs) tin.push_back(v[static_cast<size_t>(id)]);
          const auto touts = thread(*n.thread, tin, where, mult);
          for (size_t i = 0; i < touts.size(); ++i)
            v[static_cast<size_t>(n.outputs[i])] = named(touts[i], bg.tensors[static_cast<size_t>(n.outputs[i])].name);
          break;
        }
      }
    }
    return outs;
  }
};

}  // namespace

LaxInfo classify_lax(const ir::KernelGraph& g) {
  LaxInfo info;
  Walker w{info};
  std::vector<Form> v(g.tensors.size());
  for (ir::TensorId id : g.inputs) {  // each input entry is a variable: degree 1
    Form& f = v[static_cast<size_t>(id)];
    f.num.deg = 1;
    f.num.same_constant = false;
    f.path = std::make_shared<const PathNode>(g.tensor(id).name, nullptr);
  }
  for (const ir::KernelOp& op : g.ops) {
    if (op.graph_defined) {
      std::vector<Form> ins;
      for (ir::TensorId id : op.inputs) ins.push_back(v[static_cast<size_t>(id)]);
      const std::string kernel = g.tensor(op.outputs[0]).name;
      const auto outs = w.block(*op.block, ins, kernel);
      for (size_t i = 0; i < outs.size(); ++i)
        v[static_cast<size_t>(op.outputs[i])] = w.named(outs[i], g.tensor(op.outputs[i]).name);
      continue;
    }
    std::vector<const Form*> in;
    std::vector<ir::Shape> shapes;
    for (ir::TensorId id : op.inputs) {
      in.push_back(&v[static_cast<size_t>(id)]);
      shapes.push_back(g.tensor(id).type.shape);
    }
    const ir::Tensor& t = g.tensor(op.outputs[0]);
    v[static_cast<size_t>(op.outputs[0])] =
        w.named(w.apply(op.op, op.attrs, in, shapes, t.type.shape, t.name, "kernel op '" + t.name + "'", 1), t.name);
  }
  for (ir::TensorId id : g.outputs) info.outputs.push_back(v[static_cast<size_t>(id)]);
  return info;
}

TestBound test_bound(const LaxInfo& ref, const LaxInfo& cand, const std::vector<int>& perm,
                     const FieldParams& f, bool random_q) {
  TestBound worst;
  worst.vacuous = false;
  worst.epsilon = 0;
  const double lp = std::log2(static_cast<double>(f.p)), lq = std::log2(static_cast<double>(f.q));
  const double p = static_cast<double>(f.p), q = static_cast<double>(f.q);
  // The chance that a random q divides a nonzero integer below 2^w (LARGE COEFFICIENTS, lax.h;
  // the slack covers rounding in the accumulated log2 bounds). Only where every value keeps its
  // Z_q part (no exp).
  auto q_divides = [](double w) { return std::floor(w / 30 + 1e-6) / kRandomQPrimes; };
  const bool q_compared = random_q && !ref.has_exp && !cand.has_exp;
  std::string q_terms;  // the content terms used, for the note
  for (size_t i = 0; i < ref.outputs.size(); ++i) {
    const Form& r = ref.outputs[i];
    const Form& c = cand.outputs[static_cast<size_t>(perm[i])];
    const Side num = plus(prod(r.num, c.den), prod(c.num, r.den));
    const bool exp = r.num.exp || r.den.exp || c.num.exp || c.den.exp;
    const ExponentBound ex = combine(max_ex(r.ex, c.ex), 2);
    const double d = exp ? std::max({num.deg, ex.dg, ex.dh}) : num.deg;
    const double lw = exp ? std::max({num.lw, ex.lwg, ex.lwh}) : num.lw;
    const double k = exp ? num.k : 1;
    TestBound b;
    b.k = k, b.d = d, b.vacuous = false;
    if (!exp) {
      b.epsilon = d / p * (lw + 1 < lq ? d / q : 1.0);
      b.note = "Schwartz-Zippel in Z_p and Z_q, degree " + fmt_g3(d);
      if (!(lw + 1 < lp) && q_compared && std::isfinite(lw)) {
        // The Z_q part alone, with q drawn afresh per test (THE BOUND in lax.h: large
        // coefficients): a nonzero integer below 2^lw has at most lw / 30 prime factors
        // >= 2^30, so a uniform q of kRandomQPrimes divides them all with probability at most
        // floor(lw / 30) / kRandomQPrimes; else the difference is a nonzero polynomial mod q.
        b.epsilon = q_divides(lw) + d / q;
        b.note = "Schwartz-Zippel in Z_q, degree " + fmt_g3(d) + ", coefficients up to 2^" +
                 fmt_g3(lw) + " (a random q divides them with probability <= " +
                 fmt_g3(q_divides(lw)) + ")";
      } else if (!(lw + 1 < lp)) {  // also when lw is not a number
        b.vacuous = true;
        b.note = "coefficients may reach p (2^" + fmt_g3(lw) + ")";
      }
    } else {
      b.epsilon = 8 * d * std::pow(k, 4) / q + std::pow(q, -1.0 / (k * k));
      b.note = "Theorem 2 with k = " + fmt_g3(k) + " exp terms, degree d = " + fmt_g3(d);
      if (!(lw + 1 < lq) && b.epsilon < 1) {  // also when lw is not a number
        b.vacuous = true;
        b.note = "coefficients up to 2^" + fmt_g3(lw) + ": Theorem 2 needs q > 2w";
      }
    }
    const double n = ref.sqrt_evaluations + cand.sqrt_evaluations;
    const double rdeg = std::max(ref.radicand_degree, cand.radicand_degree);
    // a_i b_j - a_j b_i for radicands a / b of either program: l1 norm at most 2 max w(a) max w(b)
    const double rlw = std::max(ref.radicand_num_lw, cand.radicand_num_lw) +
                       std::max(ref.radicand_den_lw, cand.radicand_den_lw) + 1;
    double pair = rdeg * 2 / p;  // two radicands collide (per pair)
    if (n > 0 && !(rlw + 1 < lp)) {
      if (q_compared && std::isfinite(rlw)) {
        pair = q_divides(rlw) + rdeg * 2 / q;
        q_terms += ", radicand coefficients up to 2^" + fmt_g3(rlw);
      } else if (!b.vacuous) {
        b.vacuous = true;
        b.note = "radicand coefficients may reach p (2^" + fmt_g3(rlw) + ")";
      }
    }
    const double divisions = ref.divisions + cand.divisions;
    const double dlw = std::max(ref.divisor_lw, cand.divisor_lw);
    const double ddeg = std::max(ref.divisor_degree, cand.divisor_degree);
    double z = divisions * ddeg / q + divisions * ddeg / p;
    if (random_q) {  // a divisor or denominator q divides is zero mod q in every draw with that q
      const double primes = ref.scale_denominator_primes + cand.scale_denominator_primes;
      if (divisions > 0 && !(dlw + 1 < lq)) z += divisions * q_divides(dlw);
      z += primes / kRandomQPrimes;
      if (divisions > 0 && !(dlw + 1 < lq)) q_terms += ", divisor coefficients up to 2^" + fmt_g3(dlw);
      if (divisions > 0 && !(dlw + 1 < lp) && !b.vacuous) {  // p is not drawn uniformly
        b.vacuous = true;
        b.note = "divisor coefficients may reach p (2^" + fmt_g3(dlw) + ")";
      }
    }
    if (!q_terms.empty() && !b.vacuous) b.note += " (bounded through the random q:" + q_terms.substr(1) + ")";
    b.epsilon = (b.epsilon + n * n / 2 * pair) / ((1 - 1 / q) * (1 - std::min(z, 1.0)));
    if (!b.vacuous && (ref.sqrt_of_exp || cand.sqrt_of_exp)) {
      b.vacuous = true;
      b.note = "sqrt of a radicand with exp: fresh roots may collide (no bound)";
    }
    if (!b.vacuous && !(b.epsilon >= 0 && b.epsilon < 1)) {  // NaN is vacuous too
      b.vacuous = true;
      b.note += ": per-test bound " + fmt_g3(b.epsilon) + " >= 1";
    }
    if (b.vacuous || b.epsilon > worst.epsilon) {
      if (!worst.vacuous) worst = b;
    }
  }
  return worst;
}

int tests_needed(double epsilon, double delta) {
  MG_CHECK(!std::isnan(epsilon) && epsilon < 1, "tests_needed: epsilon " << epsilon);
  if (epsilon <= 0) return 1;
  const double n = std::ceil(std::log(delta) / std::log(epsilon));  // clamped before the cast
  return n >= 1e9 ? 1000000000 : std::max(1, static_cast<int>(n));
}

}  // namespace mugraph::verify
