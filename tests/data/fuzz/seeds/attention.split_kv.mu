# Split-KV without reshape (examples/gqa.split_kv.mu) at reduced shapes: one part per split
# along the last dim; the second kernel adds the parts up in its loop and divides.
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
  output_saver(nacc, omap={x:0, y:2, z:1})
  output_saver(dacc, omap={x:0, y:2, z:1})
}
O = graph_defined(NP, DP, grid=[2, 2, 1], forloop=4) {
  np = input_iterator(NP, imap={x:0, y:1}, fmap=2)
  dp = input_iterator(DP, imap={x:0, y:1}, fmap=2)
  n = accumulator(np, fmap=phi)
  d = accumulator(dp, fmap=phi)
  o = div(n, d)
  output_saver(o, omap={x:0, y:1})
}
output O
