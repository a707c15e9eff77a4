# Laws of the verifier catalog: (X + Y) + Z.
input X : f32[4, 8]
input Y : f32[4, 8]
input Z : f32[4, 8]
T = add(X, Y)
O = add(T, Z)
output O
