# The outputs in the other order, operands commuted (equal up to an output permutation).
input X : f32[4, 4]
input Y : f32[4, 4]
T = mul(Y, X)
S = add(Y, X)
output T
output S
