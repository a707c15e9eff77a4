input X : f32[4, 8]
A = scale(X, factor=-2)
Y = exp(A)
output Y
