# FlashAttention-style kernel: grid over heads (x) and query tiles (y), for-loop over KV tiles;
# the numerator exp(QK)V and the denominator sum(exp(QK)) are accumulated across the loop and
# divided once after it.
input Q : f16[2, 256, 64]
input K : f16[2, 64, 4096]
input V : f16[2, 4096, 64]
O = graph_defined(Q, K, V, grid=[2, 4, 1], forloop=32) {
  q = input_iterator(Q, imap={x:0, y:1}, fmap=phi)   # [1, 64, 64], same in every iteration
  k = input_iterator(K, imap={x:0}, fmap=2)          # [1, 64, 128]
  v = input_iterator(V, imap={x:0}, fmap=1)          # [1, 128, 64]
  qk = matmul(q, k)                                   # [1, 64, 128]
  s = scale(qk, factor=1/8)
  e = exp(s)
  d = sum(e, dim=2, group=128)                       # [1, 64, 1]
  n = matmul(e, v)                                   # [1, 64, 64]
  nacc = accumulator(n, fmap=phi)
  dacc = accumulator(d, fmap=phi)
  o = div(nacc, dacc)
  output_saver(o, omap={x:0, y:1})
}
output O
