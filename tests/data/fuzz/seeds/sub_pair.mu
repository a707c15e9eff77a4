# A = X - Y and B = Y - X: two outputs that differ only in operand order.
input X : f32[4, 8]
input Y : f32[4, 8]
A = sub(X, Y)
B = sub(Y, X)
output A
output B
