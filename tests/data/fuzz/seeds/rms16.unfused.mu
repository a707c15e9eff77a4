# Fig. 3b in f16 before thread-graph construction (tests/data/search/rms_norm_unfused.mu).
input X : f16[4, 64]
input G : f16[64]
input W : f16[64, 32]
Y = graph_defined(X, G, W, grid=[2, 1, 1], forloop=4) {
  x = input_iterator(X, imap={}, fmap=1)
  g = input_iterator(G, imap={}, fmap=0)
  w = input_iterator(W, imap={x:1}, fmap=0)
  xg = mul(x, g)
  m = matmul(xg, w)
  sq = square(x)
  ss = sum(sq, dim=1, group=16)
  macc = accumulator(m, fmap=phi)
  sacc = accumulator(ss, fmap=phi)
  ms = scale(sacc, factor=1/64)
  rms = sqrt(ms)
  y = div(macc, rms)
  output_saver(y, omap={x:1})
}
output Y
