# QK-norm + attention (examples/qknorm_attention.mu) at reduced shapes, in f32.
input Q : f32[2, 8, 16]
input K : f32[2, 16, 64]
input V : f32[2, 64, 16]
Qn = rms_norm(Q, dim=2)
Kn = rms_norm(K, dim=1)
O = attention(Qn, Kn, V)
output O
