# verifier fuzz: FALSE ACCEPT in certify mode (constant mutation,
#   trial 3530 of an early run of bench/verify_fuzz --seed 1, before the generator took its final
#   form: these files reproduce it by themselves)
# class: sqrt program (fresh-variable sqrt: the field cannot decide), candidate off by 0.6% (1/64 ->
#   1/65) inside the f16 float check's 16-ulp floor (0.78%); UNPROVED
# 2026-11-23: found against the verifier under repair; rejected since its fixes (kept as a
#   regression pair: FuzzVerifier.SavedFalseAcceptsAreRejected)
# seed pair: ntrans -> ntrans
# edit: cand: factor=1/64 -> factor=1/65 (line 6)
# verdict: UNPROVED: unproved: different with sqrt as a fresh variable, which proves nothing (an
#   identity such as sqrt(25 x) = 5 sqrt(x) or sqrt(x) sqrt(y) = sqrt(x y) looks different there):
#   output 'O' entry [0, 0] differs from candidate output 'O'; the float check passed (outputs
#   matched as [0])
# float64 truth (compare_graphs): outputs [0]: seed 11: O 0.00617 seed 12: O 0.00412
# reproduce (in this folder): mugraph verify --seed 10410082968945608237
#   false_accept-certify-constant-s1-t3530.ref.mu false_accept-certify-constant-s1-t3530.cand.mu
input H : f16[4, 64]
input X : f16[4, 64]
input alpha : f16[4, 64]
hs = square(H)  # f16[4, 64]
hss = sum(hs, dim=1, group=64)  # f16[4, 1]
hms = scale(hss, factor=1/64)  # f16[4, 1]
hr = sqrt(hms)  # f16[4, 1]
hn = div(H, hr)  # f16[4, 64]
d = sub(hn, X)  # f16[4, 64]
ad = mul(alpha, d)  # f16[4, 64]
y = add(X, ad)  # f16[4, 64]
ys = square(y)  # f16[4, 64]
yss = sum(ys, dim=1, group=64)  # f16[4, 1]
yms = scale(yss, factor=1/64)  # f16[4, 1]
yr = sqrt(yms)  # f16[4, 1]
O = div(y, yr)  # f16[4, 64]
output O
