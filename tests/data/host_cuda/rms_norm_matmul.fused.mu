# examples/rms_norm_matmul.fused.mu at reduced shapes: the same tiles, 2 blocks, 2 iterations.
input X : f16[16, 128]
input G : f16[128]
input W : f16[128, 64]
Y = graph_defined(X, G, W, grid=[2, 1, 1], forloop=2) {
  x = input_iterator(X, imap={}, fmap=1)         # [16, 64] per iteration
  g = input_iterator(G, imap={}, fmap=0)         # [64]
  w = input_iterator(W, imap={x:1}, fmap=0)      # [64, 32]
  xg = mul(x, g)
  m = matmul(xg, w)                              # [16, 32]
  sq = square(x)
  ss = sum(sq, dim=1, group=64)                  # [16, 1]
  macc = accumulator(m, fmap=phi)
  sacc = accumulator(ss, fmap=phi)
  y = thread_graph(macc, sacc) {
    ms = scale(sacc, factor=1/128)
    rms = sqrt(ms)
    y = div(macc, rms)
    output y
  }
  output_saver(y, omap={x:1})
}
output Y
