# examples/gqa.flash_decoding.mu at reduced shapes: 2 KV splits of 2 tiles of 64 tokens, query
# tiles of 64 rows; kernel 2 sums the 2 partials.
input Q : f16[2, 128, 64]
input K : f16[2, 64, 256]
input V : f16[2, 256, 64]
NP, DP = graph_defined(Q, K, V, grid=[2, 2, 2], forloop=2) {
  q = input_iterator(Q, imap={x:0, z:1}, fmap=phi)   # [1, 64, 64]
  k = input_iterator(K, imap={x:0, y:2}, fmap=2)     # [1, 64, 64]
  v = input_iterator(V, imap={x:0, y:1}, fmap=1)     # [1, 64, 64]
  qk = matmul(q, k)
  s = scale(qk, factor=1/8)
  e = exp(s)
  d = sum(e, dim=2, group=64)
  n = matmul(e, v)
  nacc = accumulator(n, fmap=phi)
  dacc = accumulator(d, fmap=phi)
  np = reshape(nacc, shape=[1, 64, 1, 64])
  dp = reshape(dacc, shape=[1, 64, 1, 1])
  output_saver(np, omap={x:0, y:2, z:1})             # NP: [2, 128, 2, 64]
  output_saver(dp, omap={x:0, y:2, z:1})             # DP: [2, 128, 2, 1]
}
O = graph_defined(NP, DP, grid=[2, 2, 1], forloop=1) {
  np = input_iterator(NP, imap={x:0, y:1}, fmap=phi) # [1, 64, 2, 64]
  dp = input_iterator(DP, imap={x:0, y:1}, fmap=phi) # [1, 64, 2, 1]
  n = sum(np, dim=2, group=2)
  d = sum(dp, dim=2, group=2)
  o4 = div(n, d)
  o = reshape(o4, shape=[1, 64, 64])
  output_saver(o, omap={x:0, y:1})
}
output O
