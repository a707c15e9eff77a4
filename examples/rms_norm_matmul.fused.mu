# RMSNorm + MatMul as one graph-defined kernel (Mirage Fig. 3b). Since the RMS is per row,
# (X / rms * G) W = ((X * G) W) / rms: the for-loop over the hidden dim accumulates both the
# matmul and the sum of squares; the division by the RMS happens once, after the loop.
# Grid: 128 blocks, each computing 32 output columns (W split by columns); X and G replicated.
input X : f16[16, 4096]
input G : f16[4096]
input W : f16[4096, 4096]
Y = graph_defined(X, G, W, grid=[128, 1, 1], forloop=64) {
  x = input_iterator(X, imap={}, fmap=1)         # [16, 64] per iteration
  g = input_iterator(G, imap={}, fmap=0)         # [64]
  w = input_iterator(W, imap={x:1}, fmap=0)      # [64, 32]
  xg = mul(x, g)
  m = matmul(xg, w)                              # [16, 32]
  sq = square(x)
  ss = sum(sq, dim=1, group=64)                  # [16, 1]
  macc = accumulator(m, fmap=phi)                # sum over iterations
  sacc = accumulator(ss, fmap=phi)
  y = thread_graph(macc, sacc) {                 # fused epilogue in registers
    ms = scale(sacc, factor=1/4096)
    rms = sqrt(ms)
    y = div(macc, rms)
    output y
  }
  output_saver(y, omap={x:1})
}
output Y
