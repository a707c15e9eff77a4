# RMSNorm + MatMul in f16 (tests/data/search/rms_norm_matmul.mu).
input X : f16[4, 64]
input G : f16[64]
input W : f16[64, 32]
sq = square(X)
ss = sum(sq, dim=1, group=64)
ms = scale(ss, factor=1/64)
rms = sqrt(ms)
xn = div(X, rms)
xg = mul(xn, G)
Y = matmul(xg, W)
output Y
