# 1 / exp(X).
input X : f32[4, 8]
input Y : f32[4, 8]
input Z : f32[4, 8]
A = exp(X)
O = reciprocal(A)
output O
