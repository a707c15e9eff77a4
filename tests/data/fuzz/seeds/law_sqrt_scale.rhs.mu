# sqrt(X^2) / 4.
input X : f32[4, 8]
input Y : f32[4, 8]
input Z : f32[4, 8]
T = square(X)
O0 = sqrt(T)
O = scale(O0, factor=1/4)
output O
