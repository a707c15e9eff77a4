# Attention with a long key sequence and a small head dim: 2 heads, 4 query rows, head dim 4,
# 256 keys (scale 1/sqrt(4)). For the planned-search tests (no search flags).
input Q : f16[2, 4, 4]
input K : f16[2, 4, 256]
input V : f16[2, 256, 4]
QK = matmul(Q, K)
S = scale(QK, factor=1/2)
E = exp(S)
D = sum(E, dim=2, group=256)
P = div(E, D)
O = matmul(P, V)
output O
