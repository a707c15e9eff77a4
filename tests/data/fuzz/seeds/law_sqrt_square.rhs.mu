# Y sqrt(X X).
input X : f32[4, 8]
input Y : f32[4, 8]
input Z : f32[4, 8]
T = mul(X, X)
O = sqrt(T)
P = mul(Y, O)
output P
