# FlashDecoding (examples/gqa.flash_decoding.mu) at reduced shapes: 4 KV splits (y) of 2 tiles,
# partials concatenated along a split dim, summed and divided by a second kernel.
input Q : f16[2, 8, 16]
input K : f16[2, 16, 64]
input V : f16[2, 64, 16]
NP, DP = graph_defined(Q, K, V, grid=[2, 4, 2], forloop=2) {
  q = input_iterator(Q, imap={x:0, z:1}, fmap=phi)
  k = input_iterator(K, imap={x:0, y:2}, fmap=2)
  v = input_iterator(V, imap={x:0, y:1}, fmap=1)
  qk = matmul(q, k)
  s = scale(qk, factor=1/4)
  e = exp(s)
  d = sum(e, dim=2, group=8)
  n = matmul(e, v)
  nacc = accumulator(n, fmap=phi)
  dacc = accumulator(d, fmap=phi)
  np = reshape(nacc, shape=[1, 4, 1, 16])
  dp = reshape(dacc, shape=[1, 4, 1, 1])
  output_saver(np, omap={x:0, y:2, z:1})
  output_saver(dp, omap={x:0, y:2, z:1})
}
O = graph_defined(NP, DP, grid=[2, 2, 1], forloop=1) {
  np = input_iterator(NP, imap={x:0, y:1}, fmap=phi)
  dp = input_iterator(DP, imap={x:0, y:1}, fmap=phi)
  n = sum(np, dim=2, group=4)
  d = sum(dp, dim=2, group=4)
  o4 = div(n, d)
  o = reshape(o4, shape=[1, 4, 16])
  output_saver(o, omap={x:0, y:1})
}
output O
