# examples/lora.concat_matmul.mu at reduced shapes.
input X : f16[16, 64]
input W : f16[64, 128]
input A : f16[64, 16]
input B : f16[16, 128]
T = matmul(X, A)
O = concat_matmul(X, T, W, B)
output O
