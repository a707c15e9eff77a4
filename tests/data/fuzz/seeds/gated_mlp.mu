# Gated MLP (examples/gated_mlp.mu) at catalog size: O = silu(X W1) * (X W2).
input X : f32[4, 8]
input W1 : f32[8, 8]
input W2 : f32[8, 8]
A = matmul(X, W1)
B = matmul(X, W2)
S = silu(A)
O = mul(S, B)
output O
