# X / (Y Z).
input X : f32[4, 8]
input Y : f32[4, 8]
input Z : f32[4, 8]
T = mul(Y, Z)
O = div(X, T)
output O
