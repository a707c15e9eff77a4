# QK-norm + attention (examples/qknorm_attention.mu) at reduced shapes, for the discovery tests:
# RMS norms of Q over its head dim (2) and of K over its head dim (1), then attention.
input Q : f16[2, 8, 16]
input K : f16[2, 16, 64]
input V : f16[2, 64, 16]
Qn = rms_norm(Q, dim=2)
Kn = rms_norm(K, dim=1)
O = attention(Qn, Kn, V)
output O
