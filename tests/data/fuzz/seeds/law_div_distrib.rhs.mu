# X / Z + Y / Z.
input X : f32[4, 8]
input Y : f32[4, 8]
input Z : f32[4, 8]
T = div(X, Z)
U = div(Y, Z)
O = add(T, U)
output O
