# X tiled twice along rows, times W (catalog).
input X : f32[4, 4]
input W : f32[8, 4]
R = repeat(X, dim=0, times=2)
O = mul(R, W)
output O
