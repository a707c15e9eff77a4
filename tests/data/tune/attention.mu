# Softmax attention O = softmax(Q K / 4) V (MCFuser Table III's form, no max subtraction) at a
# reduced shape: 2 heads, 64 queries, 128 keys, head dim 16.
input Q : f16[2, 64, 16]
input K : f16[2, 16, 128]
input V : f16[2, 128, 16]
QK = matmul(Q, K)
S = scale(QK, factor=1/4)
E = exp(S)
D = sum(E, dim=2, group=128)
P = div(E, D)
O = matmul(P, V)
output O
