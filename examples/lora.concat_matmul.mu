# LoRA with the concat-matmul of Mirage Fig. 9b: X W + (X A) B = (X || XA) x (W || B), one matmul
# over the concatenated reduction dim instead of two matmuls and an add. Generated code: on the
# CPU one tiled matmul sums both terms in f32 (mg::matmul_parallel's two terms); on CUDA it is
# two cuBLAS GEMMs into O, the second adding onto the first (beta 1), so an f16 O is rounded
# once between them.
input X : f16[16, 256]
input W : f16[256, 4096]
input A : f16[256, 16]
input B : f16[16, 4096]
T = matmul(X, A)
O = concat_matmul(X, T, W, B)
output O
