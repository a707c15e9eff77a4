# examples/lora.mu at reduced shapes.
input X : f16[16, 64]
input W : f16[64, 128]
input A : f16[64, 16]
input B : f16[16, 128]
Y1 = matmul(X, W)
T = matmul(X, A)
Y2 = matmul(T, B)
O = add(Y1, Y2)
output O
