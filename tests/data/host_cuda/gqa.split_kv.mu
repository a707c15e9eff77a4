# examples/gqa.split_kv.mu at reduced shapes: 2 KV splits of 2 tiles of 64 tokens.
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
  output_saver(nacc, omap={x:0, y:2, z:1})           # NP: [2, 128, 128]
  output_saver(dacc, omap={x:0, y:2, z:1})           # DP: [2, 128, 2]
}
O = graph_defined(NP, DP, grid=[2, 2, 1], forloop=2) {
  np = input_iterator(NP, imap={x:0, y:1}, fmap=2)   # [1, 64, 64]
  dp = input_iterator(DP, imap={x:0, y:1}, fmap=2)   # [1, 64, 1]
  n = accumulator(np, fmap=phi)
  d = accumulator(dp, fmap=phi)
  o = div(n, d)
  output_saver(o, omap={x:0, y:1})
}
output O
