# Attention softmax(Q K^T / sqrt(d)) V written with exp/sum/div, at shapes no benchmark has:
# 4 heads, 8 query rows, head dim 16, 32 keys. For the planned-search tests (no search flags).
input Q : f16[4, 8, 16]
input K : f16[4, 16, 32]
input V : f16[4, 32, 16]
QK = matmul(Q, K)
S = scale(QK, factor=1/4)
E = exp(S)
D = sum(E, dim=2, group=32)
P = div(E, D)
O = matmul(P, V)
output O
