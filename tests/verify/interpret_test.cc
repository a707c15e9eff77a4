// The block-graph semantics on small hand-checked cases: imap/omap partition, replication,
// fmap tiling, sum- and concat-accumulation, post-loop ops and thread graphs. The input is
// X[i][j] = 10 i + j, so every expected value is an exact integer worked out by hand.
#include <bit>
#include <cmath>

#include "test_util.h"
#include "verify/arith.h"
#include "verify/interpret.h"

namespace mugraph::verify {
namespace {

using mugraph::testing::parse_ok;

HostTensor<double> make_x() {
  HostTensor<double> x(ir::Shape{4, 6}, 0.0);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 6; ++j) x.data[static_cast<size_t>(i * 6 + j)] = 10.0 * static_cast<double>(i) + static_cast<double>(j);
  return x;
}

// Runs `graph_defined(X, <header>) { <body> }` on X and returns its output.
HostTensor<double> run_block(const std::string& header, const std::string& body) {
  ir::KernelGraph g = parse_ok("input X : f32[4, 6]\nY = graph_defined(X, " + header + ") {\n" +
                               body + "}\noutput Y\n");
  auto out = interpret<double>(g, {make_x()});
  EXPECT_TRUE(out.ok()) << out.status().message();
  return (*out)[0];
}

double at(const HostTensor<double>& t, int64_t i, int64_t j) {
  return t.data[static_cast<size_t>(i * t.shape[1] + j)];
}

TEST(Interpret, ImapPartitionsAndOmapReassembles) {
  // Block (bx, by) takes X[2bx.., 2by..] and writes it to Y[2by.., 2bx..] (omap swaps the grid
  // dims), keeping the tile's own orientation: Y[2by + a][2bx + b] = X[2bx + a][2by + b].
  HostTensor<double> y = run_block("grid=[2, 3, 1], forloop=1",
                                   "  x = input_iterator(X, imap={x:0, y:1}, fmap=phi)\n"
                                   "  output_saver(x, omap={x:1, y:0})\n");
  ASSERT_EQ(y.shape, (ir::Shape{6, 4}));
  EXPECT_EQ(at(y, 5, 1), 15);  // by=2, bx=0, local (1, 1) -> X[1][5]
  EXPECT_EQ(at(y, 0, 3), 21);  // by=0, bx=1, local (0, 1) -> X[2][1]
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t c = 0; c < 4; ++c) {
      const int64_t bx = c / 2, by = r / 2;
      EXPECT_EQ(at(y, r, c), 10.0 * static_cast<double>(bx * 2 + r % 2) + static_cast<double>(by * 2 + c % 2));
    }
}

TEST(Interpret, ReplicaImapGivesEveryBlockTheWholeTensor) {
  HostTensor<double> y = run_block("grid=[3, 1, 1], forloop=1",
                                   "  x = input_iterator(X, imap={}, fmap=phi)\n"
                                   "  s = sum(x, dim=1, group=6)\n"
                                   "  output_saver(s, omap={x:1})\n");
  ASSERT_EQ(y.shape, (ir::Shape{4, 3}));
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t b = 0; b < 3; ++b) EXPECT_EQ(at(y, i, b), 60.0 * static_cast<double>(i) + 15) << i << "," << b;
}

TEST(Interpret, SumAccumulatorAddsTheIterations) {
  HostTensor<double> y = run_block("grid=[1, 1, 1], forloop=3",
                                   "  x = input_iterator(X, imap={}, fmap=1)\n"  // [4, 2]
                                   "  s = sum(x, dim=1, group=2)\n"
                                   "  a = accumulator(s, fmap=phi)\n"
                                   "  output_saver(a, omap={})\n");
  ASSERT_EQ(y.shape, (ir::Shape{4, 1}));
  EXPECT_EQ(y.data, (std::vector<double>{15, 75, 135, 195}));
}

TEST(Interpret, ConcatAccumulatorStacksIterationsInOrder) {
  // Tiles X[:, 2it : 2it+2] stacked along dim 0: Y[4 it + i][j] = X[i][2 it + j].
  HostTensor<double> y = run_block("grid=[1, 1, 1], forloop=3",
                                   "  x = input_iterator(X, imap={}, fmap=1)\n"
                                   "  a = accumulator(x, fmap=0)\n"
                                   "  output_saver(a, omap={})\n");
  ASSERT_EQ(y.shape, (ir::Shape{12, 2}));
  EXPECT_EQ(at(y, 0, 0), 0);
  EXPECT_EQ(at(y, 4, 1), 3);    // it=1, i=0, j=1 -> X[0][3]
  EXPECT_EQ(at(y, 11, 0), 34);  // it=2, i=3, j=0 -> X[3][4]
  for (int64_t r = 0; r < 12; ++r)
    for (int64_t j = 0; j < 2; ++j)
      EXPECT_EQ(at(y, r, j), 10.0 * static_cast<double>(r % 4) + static_cast<double>(2 * (r / 4) + j));
}

TEST(Interpret, ConcatAccumulatorAlongTheIteratedDimRebuildsTheInput) {
  HostTensor<double> y = run_block("grid=[1, 1, 1], forloop=3",
                                   "  x = input_iterator(X, imap={}, fmap=1)\n"
                                   "  q = square(x)\n"
                                   "  a = accumulator(q, fmap=1)\n"
                                   "  output_saver(a, omap={})\n");
  HostTensor<double> x = make_x();
  ASSERT_EQ(y.shape, x.shape);
  for (size_t i = 0; i < x.data.size(); ++i) EXPECT_EQ(y.data[i], x.data[i] * x.data[i]);
}

TEST(Interpret, ReplicaFmapSeesTheWholeBlockInputEveryIteration) {
  HostTensor<double> y = run_block("grid=[1, 1, 1], forloop=3",
                                   "  x = input_iterator(X, imap={}, fmap=phi)\n"
                                   "  a = accumulator(x, fmap=phi)\n"
                                   "  output_saver(a, omap={})\n");
  HostTensor<double> x = make_x();
  for (size_t i = 0; i < x.data.size(); ++i) EXPECT_EQ(y.data[i], 3 * x.data[i]);
}

TEST(Interpret, PostLoopOpsRunOnceOnTheAccumulatedValue) {
  // Row means: grid splits the rows, the loop walks the columns, the scale runs after the loop.
  HostTensor<double> y = run_block("grid=[2, 1, 1], forloop=3",
                                   "  x = input_iterator(X, imap={x:0}, fmap=1)\n"  // [2, 2]
                                   "  s = sum(x, dim=1, group=2)\n"
                                   "  a = accumulator(s, fmap=phi)\n"
                                   "  m = scale(a, factor=1/6)\n"
                                   "  output_saver(m, omap={x:0})\n");
  ASSERT_EQ(y.shape, (ir::Shape{4, 1}));
  EXPECT_EQ(y.data, (std::vector<double>{2.5, 12.5, 22.5, 32.5}));
}

TEST(Interpret, ThreadGraphIsTheCompositionOfItsOps) {
  HostTensor<double> y = run_block("grid=[1, 1, 1], forloop=1",
                                   "  x = input_iterator(X, imap={}, fmap=phi)\n"
                                   "  t = thread_graph(x) {\n"
                                   "    n = neg(x)\n"
                                   "    m = mul(n, x)\n"
                                   "    output m\n"
                                   "  }\n"
                                   "  output_saver(t, omap={})\n");
  HostTensor<double> x = make_x();
  for (size_t i = 0; i < x.data.size(); ++i) EXPECT_EQ(y.data[i], -x.data[i] * x.data[i]);
}

TEST(Interpret, SameTensorTwiceWithDifferentImaps) {
  // X passed twice: rows split in one copy, columns in the other (k-th iterator, k-th occurrence).
  ir::KernelGraph g = parse_ok(
      "input X : f32[4, 6]\n"
      "Y = graph_defined(X, X, grid=[2, 1, 1], forloop=1) {\n"
      "  a = input_iterator(X, imap={x:0}, fmap=phi)\n"  // rows [2, 6]
      "  b = input_iterator(X, imap={}, fmap=phi)\n"     // all [4, 6]
      "  s = sum(b, dim=0, group=4)\n"                    // column sums [1, 6]
      "  d = sub(a, s)\n"
      "  output_saver(d, omap={x:0})\n"
      "}\noutput Y\n");
  auto out = interpret<double>(g, {make_x()});
  ASSERT_TRUE(out.ok());
  // column sum of column j = 60 + 4j; Y[i][j] = 10i + j - (60 + 4j)
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 6; ++j)
      EXPECT_EQ(at((*out)[0], i, j), static_cast<double>(10 * i + j - 60 - 4 * j));
}

// The float run's f16 storage rounding (arith.h, on the float's bits) against the compiler's
// _Float16 cast (libgcc's conversion), bit for bit: at every half-precision value, the floats
// next to it, the midpoints to its neighbours (the ties) and the floats next to those, then a
// million floats spread over all bit patterns.
TEST(Interpret, F16StorageRoundingIsTheCastBitForBit) {
  int checked = 0;
  auto same = [&](float x) {
    const float want = static_cast<float>(static_cast<_Float16>(x)), got = round_to_storage(x, ir::DType::kF16);
    ++checked;
    if (std::isnan(want)) return std::isnan(got);
    return std::bit_cast<uint32_t>(want) == std::bit_cast<uint32_t>(got);
  };
  auto around = [&](float x) {
    for (float y : {std::nextafter(x, -INFINITY), x, std::nextafter(x, INFINITY)})
      ASSERT_TRUE(same(y)) << "x = " << y << " (bits 0x" << std::hex << std::bit_cast<uint32_t>(y) << ")";
  };
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const float x = static_cast<float>(std::bit_cast<_Float16>(static_cast<uint16_t>(h)));
    if (std::isnan(x)) continue;
    around(x);
    const float next = static_cast<float>(std::bit_cast<_Float16>(static_cast<uint16_t>(h + 1)));
    if (std::isfinite(x) && std::isfinite(next) && (h & 0x7fffu) != 0x7fffu)
      around(static_cast<float>((static_cast<double>(x) + static_cast<double>(next)) / 2));
  }
  around(65520.0f);  // the tie past the largest half, which rounds to infinity
  around(-65520.0f);
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 4093)
    ASSERT_TRUE(same(std::bit_cast<float>(static_cast<uint32_t>(b)))) << "bits 0x" << std::hex << b;
  EXPECT_GT(checked, 1000000);
}

}  // namespace
}  // namespace mugraph::verify
