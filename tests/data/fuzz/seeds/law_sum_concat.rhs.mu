# Row sums of X plus row sums of Y.
input X : f32[4, 8]
input Y : f32[4, 8]
input Z : f32[4, 8]
A = sum(X, dim=1, group=8)
B = sum(Y, dim=1, group=8)
S = add(A, B)
output S
