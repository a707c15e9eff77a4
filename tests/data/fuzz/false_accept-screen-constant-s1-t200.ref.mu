# verifier fuzz: FALSE ACCEPT in screen mode (constant mutation,
#   trial 200 of an early run of bench/verify_fuzz --seed 1, before the generator took its final
#   form: these files reproduce it by themselves)
# class: exponent constants aliased mod q: exp(x/4) vs exp(x/2^33), 2^33 = 4 (mod 2^31 - 1); the
#   screen has no float check
# 2026-11-23: found against the verifier under repair; rejected since its fixes (kept as a
#   regression pair: FuzzVerifier.SavedFalseAcceptsAreRejected)
# seed pair: attention -> attention.flash_attention
# edit: cand: factor=1/4 -> factor=1/8589934592 (line 9)
# verdict: PASSED: passed the screen: 1 field test on 24 output entries (outputs matched as [0])
# float64 truth (compare_graphs): outputs [0]: seed 11: O 0.474 seed 12: O 0.38
# reproduce (in this folder): mugraph verify --screen --seed 10410082968945601576
#   false_accept-screen-constant-s1-t200.ref.mu false_accept-screen-constant-s1-t200.cand.mu
input Q : f16[2, 8, 16]
input K : f16[2, 16, 64]
input V : f16[2, 64, 16]
QK = matmul(Q, K)  # f16[2, 8, 64]
S = scale(QK, factor=1/4)  # f16[2, 8, 64]
E = exp(S)  # f16[2, 8, 64]
D = sum(E, dim=2, group=64)  # f16[2, 8, 1]
P = div(E, D)  # f16[2, 8, 64]
O = matmul(P, V)  # f16[2, 8, 16]
output O
