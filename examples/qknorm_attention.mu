# QK-norm + attention (Mirage benchmark QKNorm): RMS-normalize Q over its head dim (dim 2) and K
# over its head dim (dim 1 in the [head, dim, token] layout), then attention as in gqa.mu.
# Written with the composite helpers, which expand into square/sum/scale/sqrt/div and
# matmul/exp/sum/div when parsed (`mugraph check` prints the expansion).
input Q : f16[2, 256, 64]
input K : f16[2, 64, 4096]
input V : f16[2, 4096, 64]
Qn = rms_norm(Q, dim=2)
Kn = rms_norm(K, dim=1)
O = attention(Qn, Kn, V)
output O
