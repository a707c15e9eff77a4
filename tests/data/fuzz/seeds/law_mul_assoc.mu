# (X Y) Z, element-wise.
input X : f32[4, 8]
input Y : f32[4, 8]
input Z : f32[4, 8]
T = mul(X, Y)
O = mul(T, Z)
output O
