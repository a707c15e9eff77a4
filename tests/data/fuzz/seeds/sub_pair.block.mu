# Both differences in one graph-defined kernel (rows over blocks, columns over the loop).
input X : f32[4, 8]
input Y : f32[4, 8]
A, B = graph_defined(X, Y, grid=[2, 1, 1], forloop=2) {
  x = input_iterator(X, imap={x:0}, fmap=1)
  y = input_iterator(Y, imap={x:0}, fmap=1)
  a = sub(x, y)
  b = sub(y, x)
  aacc = accumulator(a, fmap=1)
  bacc = accumulator(b, fmap=1)
  output_saver(aacc, omap={x:0})
  output_saver(bacc, omap={x:0})
}
output A
output B
