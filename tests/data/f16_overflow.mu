# An f16 matmul over 4096 whose weight is forced to scale=1000 (entries of H about 2e4, the
# largest beyond f16's 65504): the program itself overflows at H. Scaled by role (1/64, the
# default without scale=) it stays far inside f16's range.
input X : f16[8, 4096]
input W : f16[4096, 1024] scale=1000
H = matmul(X, W)
S = silu(H)
O = scale(S, factor=1/2)
output O
