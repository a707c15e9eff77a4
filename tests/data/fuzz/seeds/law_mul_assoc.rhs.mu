# (Y Z) X: associativity and commutativity.
input X : f32[4, 8]
input Y : f32[4, 8]
input Z : f32[4, 8]
T = mul(Y, Z)
O = mul(T, X)
output O
