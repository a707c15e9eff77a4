# FlashDecoding-style split-KV attention in two kernels, the form the search finds (no reshape).
# Kernel 1: grid over heads (x), 8 KV splits (y) and 2 query halves (z); each block loops over
# its split in 8 tiles of 64 tokens and writes a partial numerator and denominator, one part per
# split concatenated along the last dim (NP: [2, 256, 8 x 64], DP: [2, 256, 8]). Kernel 2 adds
# the 8 parts up in its loop (one part per iteration, accumulated) and divides.
input Q : f16[2, 256, 64]
input K : f16[2, 64, 4096]
input V : f16[2, 4096, 64]
NP, DP = graph_defined(Q, K, V, grid=[2, 8, 2], forloop=8) {
  q = input_iterator(Q, imap={x:0, z:1}, fmap=phi)   # [1, 128, 64]
  k = input_iterator(K, imap={x:0, y:2}, fmap=2)     # [1, 64, 64] (split of 512, tile of 64)
  v = input_iterator(V, imap={x:0, y:1}, fmap=1)     # [1, 64, 64]
  qk = matmul(q, k)                                   # [1, 128, 64]
  s = scale(qk, factor=1/8)
  e = exp(s)
  d = sum(e, dim=2, group=64)                        # [1, 128, 1]
  n = matmul(e, v)                                   # [1, 128, 64]
  nacc = accumulator(n, fmap=phi)
  dacc = accumulator(d, fmap=phi)
  output_saver(nacc, omap={x:0, y:2, z:1})           # NP: [2, 256, 512]
  output_saver(dacc, omap={x:0, y:2, z:1})           # DP: [2, 256, 8]
}
O = graph_defined(NP, DP, grid=[2, 4, 1], forloop=8) {
  np = input_iterator(NP, imap={x:0, y:1}, fmap=2)   # [1, 64, 64]: one split per iteration
  dp = input_iterator(DP, imap={x:0, y:1}, fmap=2)   # [1, 64, 1]
  n = accumulator(np, fmap=phi)                      # sum of the 8 partial numerators
  d = accumulator(dp, fmap=phi)
  o = div(n, d)
  output_saver(o, omap={x:0, y:1})
}
output O
