# sqrt(X^2 / 16): equal to sqrt(X^2) / 4 only through a sqrt identity.
input X : f32[4, 8]
input Y : f32[4, 8]
input Z : f32[4, 8]
T = square(X)
U = scale(T, factor=1/16)
O = sqrt(U)
output O
