# exp(-X).
input X : f32[4, 8]
input Y : f32[4, 8]
input Z : f32[4, 8]
N = neg(X)
O = exp(N)
output O
