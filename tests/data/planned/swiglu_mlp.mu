# A SwiGLU MLP: (silu(X W1) * (X W3)) W2. For the planned-search tests (no search flags).
input X : f16[8, 64]
input W1 : f16[64, 64]
input W3 : f16[64, 64]
input W2 : f16[64, 32]
A = matmul(X, W1)
G = silu(A)
B = matmul(X, W3)
H = mul(G, B)
O = matmul(H, W2)
output O
