# A model-size matmul (a 4096 x 4096 weight): its field evaluation holds ~400 MiB
# (cli_verify_memory_budget runs it under --memory-budget 100M: refused, and said).
input X : f32[64, 4096]
input W : f32[4096, 4096]
H = matmul(X, W)
O = silu(H)
output O
