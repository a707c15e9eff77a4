# FlashAttention-style (examples/gqa.flash_attention.mu) at reduced shapes: heads (x) and query
# halves (y) over the grid, 4 KV tiles of 16 over the loop.
input Q : f16[2, 8, 16]
input K : f16[2, 16, 64]
input V : f16[2, 64, 16]
O = graph_defined(Q, K, V, grid=[2, 2, 1], forloop=4) {
  q = input_iterator(Q, imap={x:0, y:1}, fmap=phi)
  k = input_iterator(K, imap={x:0}, fmap=2)
  v = input_iterator(V, imap={x:0}, fmap=1)
  qk = matmul(q, k)
  s = scale(qk, factor=1/4)
  e = exp(s)
  d = sum(e, dim=2, group=16)
  n = matmul(e, v)
  nacc = accumulator(n, fmap=phi)
  dacc = accumulator(d, fmap=phi)
  o = div(nacc, dacc)
  output_saver(o, omap={x:0, y:1})
}
output O
