# Two outputs of the same shape (catalog).
input X : f32[4, 4]
input Y : f32[4, 4]
S = add(X, Y)
T = mul(X, Y)
output S
output T
