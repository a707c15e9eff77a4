# Both matmuls in one kernel: a block per pair of rows, relu between them.
input X : f32[4, 8]
input W1 : f32[8, 8]
input W2 : f32[8, 4]
O = graph_defined(X, W1, W2, grid=[2, 1, 1], forloop=1) {
  x = input_iterator(X, imap={x:0}, fmap=phi)
  w1 = input_iterator(W1, imap={}, fmap=phi)
  w2 = input_iterator(W2, imap={}, fmap=phi)
  h = matmul(x, w1)
  r = relu(h)
  o = matmul(r, w2)
  output_saver(o, omap={x:0})
}
output O
