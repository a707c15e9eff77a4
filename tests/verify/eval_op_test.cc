// Per-operator semantics of the interpreter against naive references written here, from the
// operator definitions, with plain multi-index loops (no code shared with verify/eval_op.h).
#include <cmath>
#include <functional>

#include "support/rng.h"
#include "test_util.h"
#include "verify/interpret.h"
#include "verify/random_inputs.h"

namespace mugraph::verify {
namespace {

using Index = std::vector<int64_t>;
using mugraph::testing::parse_ok;

void for_all(const ir::Shape& s, const std::function<void(const Index&)>& f) {
  Index i(static_cast<size_t>(s.rank), 0);
  for (int64_t n = 0; n < s.numel(); ++n) {
    f(i);
    for (int d = s.rank - 1; d >= 0; --d) {
      if (++i[static_cast<size_t>(d)] < s[d]) break;
      i[static_cast<size_t>(d)] = 0;
    }
  }
}

int64_t offset(const ir::Shape& s, const Index& i) {
  int64_t off = 0;
  for (int d = 0; d < s.rank; ++d) off = off * s[d] + i[static_cast<size_t>(d)];
  return off;
}

double& at(HostTensor<double>& t, const Index& i) { return t.data[static_cast<size_t>(offset(t.shape, i))]; }
double at(const HostTensor<double>& t, const Index& i) { return t.data[static_cast<size_t>(offset(t.shape, i))]; }

// Element of `t` that broadcasts to index `i` of a tensor of rank `rank`.
double bcast(const HostTensor<double>& t, const Index& i) {
  Index j(static_cast<size_t>(t.shape.rank));
  const size_t lead = i.size() - j.size();
  for (size_t d = 0; d < j.size(); ++d) j[d] = t.shape[static_cast<int>(d)] == 1 ? 0 : i[lead + d];
  return at(t, j);
}

// Interprets a one-op program; returns inputs and the output.
struct OpRun {
  Tensors<double> in;
  HostTensor<double> out;
};
OpRun run(const std::string& program, uint64_t seed = 7) {
  ir::KernelGraph g = parse_ok(program);
  Rng rng(seed);
  OpRun r{random_inputs(g, rng), {}};
  auto out = interpret<double>(g, r.in);
  EXPECT_TRUE(out.ok()) << out.status().message();
  r.out = (*out)[0];
  return r;
}

void expect_near(const HostTensor<double>& got, const HostTensor<double>& want, double tol = 1e-12) {
  ASSERT_EQ(got.shape, want.shape);
  for (size_t i = 0; i < got.data.size(); ++i) ASSERT_NEAR(got.data[i], want.data[i], tol) << "at " << i;
}

TEST(EvalOp, MatmulWithBatchBroadcast) {
  OpRun r = run("input a : f32[3, 1, 4, 5]\ninput b : f32[2, 5, 6]\nc = matmul(a, b)\noutput c\n");
  HostTensor<double> want(ir::Shape{3, 2, 4, 6}, 0.0);
  for_all(want.shape, [&](const Index& i) {
    double acc = 0;
    for (int64_t k = 0; k < 5; ++k) acc += at(r.in[0], {i[0], 0, i[2], k}) * at(r.in[1], {i[1], k, i[3]});
    at(want, i) = acc;
  });
  expect_near(r.out, want);
}

TEST(EvalOp, ConcatMatmulIsMatmulOfConcatenations) {
  OpRun r = run("input w : f32[3, 4]\ninput x : f32[3, 2]\ninput y : f32[4, 5]\ninput z : f32[2, 5]\n"
              "o = concat_matmul(w, x, y, z)\noutput o\n");
  HostTensor<double> want(ir::Shape{3, 5}, 0.0);
  for_all(want.shape, [&](const Index& i) {
    double acc = 0;  // row i of (w || x) times column j of (y || z)
    for (int64_t k = 0; k < 6; ++k)
      acc += (k < 4 ? at(r.in[0], {i[0], k}) : at(r.in[1], {i[0], k - 4})) *
             (k < 4 ? at(r.in[2], {k, i[1]}) : at(r.in[3], {k - 4, i[1]}));
    at(want, i) = acc;
  });
  expect_near(r.out, want);
}

TEST(EvalOp, BinaryOpsBroadcast) {
  const std::pair<const char*, std::function<double(double, double)>> ops[] = {
      {"add", std::plus<double>()}, {"sub", std::minus<double>()},
      {"mul", std::multiplies<double>()}, {"div", std::divides<double>()}};
  for (const auto& [name, f] : ops) {
    OpRun r = run(std::string("input a : f32[4, 1, 3]\ninput b : f32[5, 1]\nc = ") + name +
                "(a, b)\noutput c\n");
    HostTensor<double> want(ir::Shape{4, 5, 3}, 0.0);
    for_all(want.shape, [&](const Index& i) { at(want, i) = f(bcast(r.in[0], i), bcast(r.in[1], i)); });
    expect_near(r.out, want);
  }
}

TEST(EvalOp, UnaryOpsMatchTheirDefinitions) {
  const std::pair<const char*, std::function<double(double)>> ops[] = {
      {"exp(a)", [](double x) { return std::exp(x); }},
      {"square(a)", [](double x) { return x * x; }},
      {"sqrt(a)", [](double x) { return std::sqrt(x); }},
      {"silu(a)", [](double x) { return x / (1 + std::exp(-x)); }},
      {"relu(a)", [](double x) { return x < 0 ? 0.0 : x; }},
      {"gelu(a)", [](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }},
      {"neg(a)", [](double x) { return -x; }},
      {"reciprocal(a)", [](double x) { return 1 / x; }},
      {"scale(a, factor=-3/7)", [](double x) { return x * -3.0 / 7.0; }}};
  for (const auto& [call, f] : ops) {
    OpRun r = run(std::string("input a : f32[3, 4]\nc = ") + call + "\noutput c\n");
    for (size_t i = 0; i < r.out.data.size(); ++i) {
      const double want = f(r.in[0].data[i]);
      if (std::isnan(want)) EXPECT_TRUE(std::isnan(r.out.data[i])) << call;
      else EXPECT_NEAR(r.out.data[i], want, 1e-14) << call << " at " << i;
    }
  }
  // Known values: silu(1) = 1/(1+e^-1), gelu(1) = Phi(1).
  OpRun s = run("input a : f32[1]\nc = silu(a)\noutput c\n");
  EXPECT_NEAR(s.out.data[0], s.in[0].data[0] / (1 + std::exp(-s.in[0].data[0])), 1e-15);
  EXPECT_NEAR(0.5 * (1 + std::erf(1 / std::sqrt(2.0))), 0.8413447460685429, 1e-15);
}

TEST(EvalOp, SumGroupsConsecutiveElements) {
  OpRun r = run("input a : f32[2, 12, 3]\nc = sum(a, dim=1, group=4)\noutput c\n");
  HostTensor<double> want(ir::Shape{2, 3, 3}, 0.0);
  for_all(want.shape, [&](const Index& i) {
    for (int64_t t = 0; t < 4; ++t) at(want, i) += at(r.in[0], {i[0], i[1] * 4 + t, i[2]});
  });
  expect_near(r.out, want);
}

TEST(EvalOp, RepeatTilesAlongDim) {
  OpRun r = run("input a : f32[2, 3]\nc = repeat(a, dim=1, times=3)\noutput c\n");
  HostTensor<double> want(ir::Shape{2, 9}, 0.0);
  for_all(want.shape, [&](const Index& i) { at(want, i) = at(r.in[0], {i[0], i[1] % 3}); });
  expect_near(r.out, want);
}

TEST(EvalOp, ReshapeKeepsRowMajorOrder) {
  OpRun r = run("input a : f32[2, 6]\nc = reshape(a, shape=[3, 2, 2])\noutput c\n");
  HostTensor<double> want(ir::Shape{3, 2, 2}, 0.0);
  for_all(want.shape, [&](const Index& i) {
    const int64_t lin = (i[0] * 2 + i[1]) * 2 + i[2];
    at(want, i) = at(r.in[0], {lin / 6, lin % 6});
  });
  expect_near(r.out, want);
}

TEST(EvalOp, TransposeReadsThePermutedIndex) {
  OpRun r = run("input a : f32[2, 3, 4]\nc = transpose(a, perm=[2, 0, 1])\noutput c\n");
  HostTensor<double> want(ir::Shape{4, 2, 3}, 0.0);
  for_all(want.shape, [&](const Index& i) { at(want, i) = at(r.in[0], {i[1], i[2], i[0]}); });
  expect_near(r.out, want);
}

TEST(EvalOp, ConcatJoinsAlongDim) {
  OpRun r = run("input a : f32[2, 3, 2]\ninput b : f32[2, 1, 2]\nc = concat(a, b, dim=1)\noutput c\n");
  HostTensor<double> want(ir::Shape{2, 4, 2}, 0.0);
  for_all(want.shape, [&](const Index& i) {
    at(want, i) = i[1] < 3 ? at(r.in[0], i) : at(r.in[1], {i[0], i[1] - 3, i[2]});
  });
  expect_near(r.out, want);
}

TEST(EvalOp, FloatAndDoubleAgreeToFloatPrecision) {
  ir::KernelGraph g = parse_ok("input a : f32[4, 8]\ninput b : f32[8, 3]\nc = matmul(a, b)\n"
                               "d = silu(c)\noutput d\n");
  Rng rng(1);
  const auto in = random_inputs(g, rng);
  auto d = interpret<double>(g, in);
  auto f = interpret<float>(g, convert<float>(in));
  ASSERT_TRUE(d.ok() && f.ok());
  for (size_t i = 0; i < (*d)[0].data.size(); ++i)
    EXPECT_NEAR((*d)[0].data[i], (*f)[0].data[i], 1e-5);
}

TEST(EvalOp, InputShapeMismatchIsAnError) {
  ir::KernelGraph g = parse_ok("input a : f32[4, 8]\nc = exp(a)\noutput c\n");
  auto r = interpret<double>(g, {HostTensor<double>(ir::Shape{4, 7}, 0.0)});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("input 'a' expects shape [4, 8], given [4, 7]"), std::string::npos);
  EXPECT_FALSE(interpret<double>(g, {}).ok());
}

}  // namespace
}  // namespace mugraph::verify
