# examples/rms_norm_matmul.mu at reduced shapes (host CUDA harness tests).
input X : f16[16, 128]
input G : f16[128]
input W : f16[128, 64]
sq = square(X)
ss = sum(sq, dim=1, group=128)
ms = scale(ss, factor=1/128)
rms = sqrt(ms)
xn = div(X, rms)
xg = mul(xn, G)
Y = matmul(xg, W)
output Y
