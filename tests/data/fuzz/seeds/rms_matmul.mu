# RMSNorm + MatMul (examples/rms_norm_matmul.mu) at catalog size.
input X : f32[4, 32]
input G : f32[32]
input W : f32[32, 16]
sq = square(X)
ss = sum(sq, dim=1, group=32)
ms = scale(ss, factor=1/32)
rms = sqrt(ms)
xn = div(X, rms)
xg = mul(xn, G)
Y = matmul(xg, W)
output Y
