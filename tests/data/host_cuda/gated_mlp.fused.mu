# examples/gated_mlp.fused.mu at reduced shapes: the same tiles, 2 blocks, 2 iterations.
input X : f16[8, 128]
input W1 : f16[128, 64]
input W2 : f16[128, 64]
O = graph_defined(X, W1, W2, grid=[2, 1, 1], forloop=2) {
  x = input_iterator(X, imap={}, fmap=1)         # [8, 64]
  w1 = input_iterator(W1, imap={x:1}, fmap=0)    # [64, 32]
  w2 = input_iterator(W2, imap={x:1}, fmap=0)
  a = matmul(x, w1)
  b = matmul(x, w2)
  aacc = accumulator(a, fmap=phi)
  bacc = accumulator(b, fmap=phi)
  o = thread_graph(aacc, bacc) {
    s = silu(aacc)
    o = mul(s, bacc)
    output o
  }
  output_saver(o, omap={x:1})
}
output O
