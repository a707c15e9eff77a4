# exp(X + Y).
input X : f32[4, 8]
input Y : f32[4, 8]
input Z : f32[4, 8]
T = add(X, Y)
O = exp(T)
output O
