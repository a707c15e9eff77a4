input X : f32[4, 8]
A = scale(X, factor=25)
Y = sqrt(A)
output Y
