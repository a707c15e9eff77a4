# A row sum accumulated across loop iterations.
input X : f32[8, 8]
S = graph_defined(X, grid=[2, 1, 1], forloop=4) {
  x = input_iterator(X, imap={x:0}, fmap=1)
  s = sum(x, dim=1, group=2)
  acc = accumulator(s, fmap=phi)
  output_saver(acc, omap={x:0})
}
output S
