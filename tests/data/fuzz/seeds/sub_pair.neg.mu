# B as the negation of A.
input X : f32[4, 8]
input Y : f32[4, 8]
A = sub(X, Y)
B = neg(A)
output A
output B
