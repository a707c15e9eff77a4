# LoRA with the concat-matmul of Mirage Fig. 9b: X W + (X A) B = (X || XA) x (W || B), one matmul
# over the concatenated reduction dim instead of two matmuls and an add.
input X : f16[16, 256]
input W : f16[256, 4096]
input A : f16[256, 16]
input B : f16[16, 4096]
T = matmul(X, A)
O = concat_matmul(X, T, W, B)
output O
