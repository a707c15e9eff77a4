# RMSNorm + MatMul (Mirage Fig. 3a): Y = (rms_norm(X) * G) W.
# rms_norm(x) = x / sqrt(mean(x^2)) over the hidden dim (no epsilon: it would add a constant
# that the finite-field verifier treats like any other; the paper's program has none either).
input X : f16[16, 4096]
input G : f16[4096]
input W : f16[4096, 4096]
sq = square(X)
ss = sum(sq, dim=1, group=4096)      # [16, 1]
ms = scale(ss, factor=1/4096)
rms = sqrt(ms)
xn = div(X, rms)                     # broadcast [16, 4096] / [16, 1]
xg = mul(xn, G)                      # broadcast [16, 4096] * [4096]
Y = matmul(xg, W)
output Y
