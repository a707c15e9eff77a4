# Both RMS norms inside a FlashAttention-style kernel: each block normalizes its query rows once
# per iteration and each KV tile's key columns, accumulates exp(Qn Kn) V and the row sums.
input Q : f32[2, 8, 16]
input K : f32[2, 16, 64]
input V : f32[2, 64, 16]
O = graph_defined(Q, K, V, grid=[2, 2, 1], forloop=4) {
  q = input_iterator(Q, imap={x:0, y:1}, fmap=phi)
  k = input_iterator(K, imap={x:0}, fmap=2)
  v = input_iterator(V, imap={x:0}, fmap=1)
  qs = square(q)
  qss = sum(qs, dim=2, group=16)
  qms = scale(qss, factor=1/16)
  qr = sqrt(qms)
  qn = div(q, qr)
  ks = square(k)
  kss = sum(ks, dim=1, group=16)
  kms = scale(kss, factor=1/16)
  kr = sqrt(kms)
  kn = div(k, kr)
  qk = matmul(qn, kn)
  e = exp(qk)
  d = sum(e, dim=2, group=16)
  n = matmul(e, v)
  nacc = accumulator(n, fmap=phi)
  dacc = accumulator(d, fmap=phi)
  o = div(nacc, dacc)
  output_saver(o, omap={x:0, y:1})
}
output O
