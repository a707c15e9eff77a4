# Gated MLP as one kernel (Mirage Fig. 10b): both matmuls accumulate in the same for-loop over
# the hidden dim; SiLU and the product run once after the loop, fused in a thread graph.
input X : f16[8, 4096]
input W1 : f16[4096, 4096]
input W2 : f16[4096, 4096]
O = graph_defined(X, W1, W2, grid=[128, 1, 1], forloop=64) {
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
