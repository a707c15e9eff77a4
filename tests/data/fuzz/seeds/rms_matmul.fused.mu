# Fig. 3b at small size: ((X * G) W) / rms, the sum of squares accumulated in the same loop.
input X : f32[4, 32]
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
