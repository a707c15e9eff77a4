# A batched GEMM chain E = (A B) D (MCFuser Table II's form) at a reduced shape.
input A : f16[2, 128, 32]
input B : f16[2, 32, 128]
input D : f16[2, 128, 64]
C = matmul(A, B)
E = matmul(C, D)
output E
