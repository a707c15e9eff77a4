# RMSNorm + MatMul from Python: build, superoptimize on the CPU (cached), run on torch tensors.
import torch, mugraph as mg
torch.manual_seed(0)
g = mg.Graph()
X, G, W = g.input((16, 1024), "f32", "X"), g.input((1024,), "f32", "G"), g.input((1024, 1024), "f32", "W")
g.output(g.matmul(g.mul(g.rms_norm(X, dim=1), G), W, name="Y"))
best = mg.superoptimize(g, target="cpu", time_budget=20, max_kernel_ops=1, max_block_ops=9)
print(best)  # chosen variant, verdict, measured speedup, whether it came from the cache
x, gamma, w = torch.randn(16, 1024), torch.rand(1024), torch.randn(1024, 1024) / 32
(y,) = best(x, gamma, w)
ref = (x.double() / x.double().pow(2).mean(1, keepdim=True).sqrt() * gamma.double()) @ w.double()
print("max rel err vs float64 torch: %.1e" % ((y.double() - ref).norm() / ref.norm()).item())
