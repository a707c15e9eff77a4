# sqrt(X^2) Y.
input X : f32[4, 8]
input Y : f32[4, 8]
input Z : f32[4, 8]
T = square(X)
O = sqrt(T)
P = mul(O, Y)
output P
