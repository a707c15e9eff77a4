# A (B C).
input A : f32[4, 6]
input B : f32[6, 5]
input C : f32[5, 3]
T = matmul(B, C)
O = matmul(A, T)
output O
