# A block graph reading a column-major weight: the layout pass should store W's tile transposed
# (column-major) so that the device-to-shared copy is coalesced, and X's tile row-major.
input X : f16[16, 256]
input W : f16[256, 128] strides=[1, 256]
Y = graph_defined(X, W, grid=[4, 1, 1], forloop=4) {
  x = input_iterator(X, imap={}, fmap=1)
  w = input_iterator(W, imap={x:1}, fmap=0)
  m = matmul(x, w)
  acc = accumulator(m, fmap=phi)
  output_saver(acc, omap={x:1})
}
output Y
