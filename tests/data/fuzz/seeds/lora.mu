# LoRA (examples/lora.mu) at catalog size: O = X W + (X A) B.
input X : f32[4, 8]
input W : f32[8, 8]
input A : f32[8, 2]
input B : f32[2, 8]
XW = matmul(X, W)
XA = matmul(X, A)
XAB = matmul(XA, B)
O = add(XW, XAB)
output O
