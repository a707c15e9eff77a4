# Sums of X repeated twice along rows.
input X : f32[4, 8]
input Y : f32[4, 8]
input Z : f32[4, 8]
R = repeat(X, dim=1, times=2)
S = sum(R, dim=1, group=16)
output S
