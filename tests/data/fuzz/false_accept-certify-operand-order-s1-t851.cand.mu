# verifier fuzz: FALSE ACCEPT in certify mode (operand-order mutation,
#   trial 851 of an early run of bench/verify_fuzz --seed 1, before the generator took its final
#   form: these files reproduce it by themselves)
# class: the f16 reference overflows (factor 2147483647/64): reference float error 1, so the float
#   check's limit (16 x 1) accepted any candidate; UNPROVED
# 2026-11-23: found against the verifier under repair; rejected since its fixes (kept as a
#   regression pair: FuzzVerifier.SavedFalseAcceptsAreRejected)
# seed pair: ntrans -> ntrans
# edit: ref+cand: factor=1/64 -> factor=2147483647/64
# edit: cand: d = sub(hn, X) -> d = sub(X, hn) (line 9)
# verdict: UNPROVED: unproved: different with sqrt as a fresh variable, which proves nothing (an
#   identity such as sqrt(25 x) = 5 sqrt(x) or sqrt(x) sqrt(y) = sqrt(x y) looks different there):
#   output 'O' entry [0, 0] differs from candidate output 'O'; the float check passed (outputs
#   matched as [0])
# float64 truth (compare_graphs): outputs [0]: seed 11: O 1.07 seed 12: O 1.04
# reproduce (in this folder): mugraph verify --seed 10410082968945602879
#   false_accept-certify-operand-order-s1-t851.ref.mu
#   false_accept-certify-operand-order-s1-t851.cand.mu
input H : f16[4, 64]
input X : f16[4, 64]
input alpha : f16[4, 64]
hs = square(H)
hss = sum(hs, dim=1, group=64)
hms = scale(hss, factor=2147483647/64)
hr = sqrt(hms)
hn = div(H, hr)
d = sub(X, hn)
ad = mul(alpha, d)
y = add(X, ad)
ys = square(y)
yss = sum(ys, dim=1, group=64)
yms = scale(yss, factor=2147483647/64)
yr = sqrt(yms)
O = div(y, yr)
output O
