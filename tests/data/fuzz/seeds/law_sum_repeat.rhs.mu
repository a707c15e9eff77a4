# Twice the row sums.
input X : f32[4, 8]
input Y : f32[4, 8]
input Z : f32[4, 8]
S0 = sum(X, dim=1, group=8)
S = scale(S0, factor=2)
output S
