# Gated MLP (examples/gated_mlp.mu) at reduced shapes, for the discovery tests.
input X : f16[4, 64]
input W1 : f16[64, 32]
input W2 : f16[64, 32]
A = matmul(X, W1)
B = matmul(X, W2)
S = silu(A)
O = mul(S, B)
output O
