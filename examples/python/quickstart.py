# RMSNorm + MatMul written in PyTorch, superoptimized by mugraph on the CPU (the result is
# cached: a second run answers at once), then called on torch tensors.
import torch, mugraph as mg
torch.manual_seed(0)
def rms_norm_matmul(x, g, w):
    return (x / torch.sqrt(torch.mean(x * x, dim=1, keepdim=True)) * g) @ w
x, g, w = torch.randn(16, 1024), torch.rand(1024), torch.randn(1024, 1024) / 32
program = mg.from_torch(rms_norm_matmul, x, g, w)
best = mg.superoptimize(program, target="cpu", time_budget=20, max_kernel_ops=1, max_block_ops=9)
print(best)  # chosen variant, verdict, measured speedup, whether it came from the cache
(y,) = best(x, g, w)
ref = rms_norm_matmul(x.double(), g.double(), w.double())
err = ((y.double() - ref).norm() / ref.norm()).item(); assert err < 1e-4, err
print("rel err vs float64 torch: %.1e" % err)
