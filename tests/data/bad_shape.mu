# A user mistake: the matmul's inner dimensions differ (4096 vs 2048).
input X : f16[16, 4096]
input W : f16[2048, 4096]
S = square(X)

# the error must point at the matmul on line 7, column 5
Y = matmul(S, W)
output Y
