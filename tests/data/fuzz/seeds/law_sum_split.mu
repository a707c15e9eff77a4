# Row sums of X.
input X : f32[4, 8]
input Y : f32[4, 8]
input Z : f32[4, 8]
S = sum(X, dim=1, group=8)
output S
