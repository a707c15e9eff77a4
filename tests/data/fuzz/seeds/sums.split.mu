# The same reduction split in two: pair sums in a block graph, then a kernel sums the pairs.
input X : f32[8, 8]
P = graph_defined(X, grid=[2, 1, 1], forloop=2) {
  x = input_iterator(X, imap={x:0}, fmap=1)
  s = sum(x, dim=1, group=2)
  acc = accumulator(s, fmap=1)
  output_saver(acc, omap={x:0})
}
S = sum(P, dim=1, group=2)
output S
