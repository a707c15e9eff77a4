# examples/qknorm_attention.mu at reduced shapes.
input Q : f16[2, 64, 64]
input K : f16[2, 64, 256]
input V : f16[2, 256, 64]
Qn = rms_norm(Q, dim=2)
Kn = rms_norm(K, dim=1)
QK = matmul(Qn, Kn)
S = scale(QK, factor=1/8)
E = exp(S)
D = sum(E, dim=2, group=256)
P = div(E, D)
O = matmul(P, V)
output O
