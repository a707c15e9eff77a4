input X : f32[4, 8]
R = sqrt(X)
Y = scale(R, factor=5)
output Y
