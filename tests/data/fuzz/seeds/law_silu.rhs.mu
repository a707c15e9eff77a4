# X / (1 + exp(-X)), the 1 built as exp(-X) / exp(-X).
input X : f32[4, 8]
input Y : f32[4, 8]
input Z : f32[4, 8]
N = neg(X)
E = exp(N)
O1 = scale(E, factor=1)
D0 = reciprocal(O1)
D = reciprocal(D0)
T = sub(D, E)
U = add(T, E)
One = div(U, D)
S = add(One, E)
O = div(X, S)
output O
