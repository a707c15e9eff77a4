# X Z + Y Z.
input X : f32[4, 8]
input Y : f32[4, 8]
input Z : f32[4, 8]
T = mul(X, Z)
U = mul(Y, Z)
O = add(T, U)
output O
