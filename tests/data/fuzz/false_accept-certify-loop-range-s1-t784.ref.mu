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
sq = square(X)  # f16[4, 64]
ss = sum(sq, dim=1, group=64)  # f16[4, 1]
ms = scale(ss, factor=2147483648)  # f16[4, 1]
rms = sqrt(ms)  # f16[4, 1]
xn = div(X, rms)  # f16[4, 64]
xg = mul(xn, G)  # f16[4, 64]
Y = matmul(xg, W)  # f16[4, 32]
output Y
