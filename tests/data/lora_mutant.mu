# LoRA (Mirage Fig. 9a): O = X W + (X A) B.
input X : f16[16, 256]
input W : f16[256, 4096]
input A : f16[256, 16]
input B : f16[16, 4096]
Y1 = matmul(X, W)
T = matmul(X, A)
Y2 = matmul(T, B)
O = sub(Y1, Y2)
output O
