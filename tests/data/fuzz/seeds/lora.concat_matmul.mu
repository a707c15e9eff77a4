# LoRA as one concat-matmul (Fig. 9b).
input X : f32[4, 8]
input W : f32[8, 8]
input A : f32[8, 2]
input B : f32[2, 8]
XA = matmul(X, A)
O = concat_matmul(X, XA, W, B)
output O
