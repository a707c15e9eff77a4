# QK-norm + attention (examples/qknorm_attention.mu) at reduced shapes, for the discovery tests:
# RMS norms of Q over its head dim (2) and of K over its head dim (1), then attention. f32:
# in f16, exp of the normalized scores (up to e^16 here) overflows, as in the f16 example.
input Q : f32[2, 8, 16]
input K : f32[2, 16, 64]
input V : f32[2, 64, 16]
Qn = rms_norm(Q, dim=2)
Kn = rms_norm(K, dim=1)
O = attention(Qn, Kn, V)
output O
