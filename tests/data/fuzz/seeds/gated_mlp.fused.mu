# Fig. 10b at catalog size: both matmuls accumulated in one loop, silu * B fused after it.
input X : f32[4, 8]
input W1 : f32[8, 8]
input W2 : f32[8, 8]
O = graph_defined(X, W1, W2, grid=[2, 1, 1], forloop=2) {
  x = input_iterator(X, imap={}, fmap=1)
  w1 = input_iterator(W1, imap={x:1}, fmap=0)
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
