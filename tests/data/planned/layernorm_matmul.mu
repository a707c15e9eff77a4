# LayerNorm (mean and variance over the hidden dim, no affine) followed by a matmul. For the
# planned-search tests (no search flags).
input X : f16[8, 64]
input W : f16[64, 32]
s = sum(X, dim=1, group=64)
mu = scale(s, factor=1/64)
xc = sub(X, mu)
sq = square(xc)
ss = sum(sq, dim=1, group=64)
var = scale(ss, factor=1/64)
r = sqrt(var)
xn = div(xc, r)
Y = matmul(xn, W)
output Y
