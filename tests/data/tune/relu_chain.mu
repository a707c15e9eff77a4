# An MLP E = relu(A B) D: a chain, but relu is not Lax: certify can only say UNPROVED (the float
# check passes), so `tune` exits 6 unless --accept-unproved.
input A : f16[64, 32]
input B : f16[32, 64]
input D : f16[64, 32]
C = matmul(A, B)
R = relu(C)
E = matmul(R, D)
output E
