# A non-Lax program (relu): only the float check can judge it.
input X : f32[4, 8]
input W1 : f32[8, 8]
input W2 : f32[8, 4]
H = matmul(X, W1)
R = relu(H)
O = matmul(R, W2)
output O
