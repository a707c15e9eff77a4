# Gated MLP (Mirage Fig. 10a): O = silu(X W1) * (X W2).
input X : f16[8, 4096]
input W1 : f16[4096, 4096]
input W2 : f16[4096, 4096]
A = matmul(X, W1)
B = matmul(X, W2)
S = silu(A)
O = mul(S, B)
output O
