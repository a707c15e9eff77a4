# Row sums (catalog).
input X : f32[8, 8]
S = sum(X, dim=1, group=8)
output S
