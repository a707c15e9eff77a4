# C = A B (catalog).
input A : f32[8, 8]
input B : f32[8, 8]
C = matmul(A, B)
output C
