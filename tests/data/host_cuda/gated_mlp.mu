# examples/gated_mlp.mu at reduced shapes.
input X : f16[8, 128]
input W1 : f16[128, 64]
input W2 : f16[128, 64]
A = matmul(X, W1)
B = matmul(X, W2)
S = silu(A)
O = mul(S, B)
output O
