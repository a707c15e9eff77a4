# QK-norm + attention (Mirage benchmark QKNorm): RMS-normalize Q over its head dim (dim 2) and K
# over its head dim (dim 1 in the [head, dim, token] layout), then attention as in gqa.mu.
input Q : f16[2, 256, 64]
input K : f16[2, 64, 4096]
input V : f16[2, 4096, 64]
qs = square(Q)
qss = sum(qs, dim=2, group=64)       # [2, 256, 1]
qms = scale(qss, factor=1/64)
qr = sqrt(qms)
Qn = div(Q, qr)
ks = square(K)
kss = sum(ks, dim=1, group=64)       # [2, 1, 4096]
kms = scale(kss, factor=1/64)
kr = sqrt(kms)
Kn = div(K, kr)
S = matmul(Qn, Kn)
E = exp(S)
D = sum(E, dim=2, group=4096)
P = div(E, D)
O = matmul(P, V)
output O
