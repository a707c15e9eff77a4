# GQA attention (examples/gqa.mu) at reduced shapes: O = softmax(Q K / 4) V.
input Q : f16[2, 8, 16]
input K : f16[2, 16, 64]
input V : f16[2, 64, 16]
QK = matmul(Q, K)
S = scale(QK, factor=1/4)
E = exp(S)
D = sum(E, dim=2, group=64)
P = div(E, D)
O = matmul(P, V)
output O
