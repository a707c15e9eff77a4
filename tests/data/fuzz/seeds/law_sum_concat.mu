# Row sums of X || Y.
input X : f32[4, 8]
input Y : f32[4, 8]
input Z : f32[4, 8]
C = concat(X, Y, dim=1)
S = sum(C, dim=1, group=16)
output S
