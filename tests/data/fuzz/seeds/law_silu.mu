# silu(X).
input X : f32[4, 8]
input Y : f32[4, 8]
input Z : f32[4, 8]
O = silu(X)
output O
