# examples/gqa.flash_attention.mu at reduced shapes: the same tiles, grid [2, 1, 1], 2 iterations.
input Q : f16[2, 64, 64]
input K : f16[2, 64, 256]
input V : f16[2, 256, 64]
O = graph_defined(Q, K, V, grid=[2, 1, 1], forloop=2) {
  q = input_iterator(Q, imap={x:0, y:1}, fmap=phi)   # [1, 64, 64]
  k = input_iterator(K, imap={x:0}, fmap=2)          # [1, 64, 128]
  v = input_iterator(V, imap={x:0}, fmap=1)          # [1, 128, 64]
  qk = matmul(q, k)
  s = scale(qk, factor=1/8)
  e = exp(s)
  d = sum(e, dim=2, group=128)
  n = matmul(e, v)
  nacc = accumulator(n, fmap=phi)
  dacc = accumulator(d, fmap=phi)
  o = div(nacc, dacc)
  output_saver(o, omap={x:0, y:1})
}
output O
