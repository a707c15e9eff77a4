# verifier fuzz: FALSE ACCEPT in certify mode (loop-range mutation,
#   trial 784 of an early run of bench/verify_fuzz --seed 1, before the generator took its final
#   form: these files reproduce it by themselves)
# class: not Lax (relu), f16 reference overflows (factor 2^31): float check limit 16 accepted a
#   candidate off by 100%; UNPROVED
# 2026-11-23: found against the verifier under repair; rejected since its fixes (kept as a
#   regression pair: FuzzVerifier.SavedFalseAcceptsAreRejected)
# seed pair: rms16 -> rms16.unfused
# edit: ref+cand: factor=1/64 -> factor=2147483648
# edit: cand: forloop=4 -> 8 (line 4), ss group 16 -> 8
# edit: cand, op-kind: sqrt -> relu in rms = sqrt(ms) (line 15)
# verdict: UNPROVED: unproved: not Lax (candidate: relu at block node 'rms' of kernel 'Y' is not in
#   the Lax fragment), so only the float check ran (outputs matched as [0])
# float64 truth (compare_graphs): outputs [0]: seed 11: Y 1 seed 12: Y 1
# reproduce (in this folder): mugraph verify --seed 10410082968945602745
#   false_accept-certify-loop-range-s1-t784.ref.mu false_accept-certify-loop-range-s1-t784.cand.mu
input X : f16[4, 64]
input G : f16[64]
input W : f16[64, 32]
Y = graph_defined(X, G, W, grid=[2, 1, 1], forloop=8) {
  x = input_iterator(X, imap={}, fmap=1)
  g = input_iterator(G, imap={}, fmap=0)
  w = input_iterator(W, imap={x:1}, fmap=0)
  xg = mul(x, g)
  m = matmul(xg, w)
  sq = square(x)
  ss = sum(sq, dim=1, group=8)
  macc = accumulator(m, fmap=phi)
  sacc = accumulator(ss, fmap=phi)
  ms = scale(sacc, factor=2147483648)
  rms = relu(ms)
  y = div(macc, rms)
  output_saver(y, omap={x:1})
}
output Y
