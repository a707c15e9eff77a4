# LoRA (examples/lora.mu) at reduced shapes, for the discovery tests.
input X : f16[4, 32]
input W : f16[32, 64]
input A : f16[32, 4]
input B : f16[4, 64]
Y1 = matmul(X, W)
T = matmul(X, A)
Y2 = matmul(T, B)
O = add(Y1, Y2)
output O
