# exp(X) exp(Y).
input X : f32[4, 8]
input Y : f32[4, 8]
input Z : f32[4, 8]
A = exp(X)
B = exp(Y)
O = mul(A, B)
output O
