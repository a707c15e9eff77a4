# Softmax per block of rows.
input X : f32[4, 4]
Y = graph_defined(X, grid=[2, 1, 1], forloop=1) {
  x = input_iterator(X, imap={x:0}, fmap=phi)
  e = exp(x)
  d = sum(e, dim=1, group=4)
  y = div(e, d)
  output_saver(y, omap={x:0})
}
output Y
