// Small uGraphs shared by the verifier's and the code generators' tests.
#pragma once

namespace mugraph::testing {

// transpose (issue 21 item 3, issue 22) for both code generators' tests: of a computed tensor,
// of an input with a strided layout, in f16 and f32, feeding a matmul and an output.
inline constexpr const char* kTransposes = R"(input X : f32[4, 6, 8]
input W : f32[6, 5]
input H : f16[8, 6] strides=[1, 8]
T = transpose(X, perm=[0, 2, 1])
M = matmul(T, W)
E = exp(M)
U = transpose(E, perm=[2, 1, 0])
HT = transpose(H, perm=[1, 0])
G = scale(HT, factor=1/2)
output U
output G
)";

// Fig. 3b at small size: ((X * G) W) / rms, the sum of squares accumulated in the same loop.
inline constexpr const char* kRmsFusedSmall = R"(input X : f32[4, 32]
input G : f32[32]
input W : f32[32, 16]
Y = graph_defined(X, G, W, grid=[4, 1, 1], forloop=4) {
  x = input_iterator(X, imap={}, fmap=1)
  g = input_iterator(G, imap={}, fmap=0)
  w = input_iterator(W, imap={x:1}, fmap=0)
  xg = mul(x, g)
  m = matmul(xg, w)
  sq = square(x)
  ss = sum(sq, dim=1, group=8)
  macc = accumulator(m, fmap=phi)
  sacc = accumulator(ss, fmap=phi)
  y = thread_graph(macc, sacc) {
    ms = scale(sacc, factor=1/32)
    rms = sqrt(ms)
    y = div(macc, rms)
    output y
  }
  output_saver(y, omap={x:1})
}
output Y
)";

}  // namespace mugraph::testing
