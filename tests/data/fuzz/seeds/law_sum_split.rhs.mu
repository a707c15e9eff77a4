# Pair sums, then sums of 4 pairs.
input X : f32[4, 8]
input Y : f32[4, 8]
input Z : f32[4, 8]
T = sum(X, dim=1, group=2)
S = sum(T, dim=1, group=4)
output S
