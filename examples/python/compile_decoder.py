# A Llama-style decoder layer (RMSNorm, attention with a head split, SiLU-gated MLP, residuals)
# through torch.compile with mugraph as the backend on the CPU: each region of ops mugraph
# supports is superoptimized (cached: a second run answers at once) and replaced by its result.
import time, torch, torch.nn.functional as F, mugraph as mg
torch.manual_seed(0)
d, heads, hd = 128, 4, 32
rms = lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
W = {k: torch.randn(*s) / s[0] ** 0.5 for k, s in dict(
    qkv=(d, 3 * d), o=(d, d), gate=(d, 4 * d), up=(d, 4 * d), down=(4 * d, d)).items()}
n1, n2 = torch.rand(d) + 0.5, torch.rand(d) + 0.5
def layer(x):  # x: [tokens, d]
    q, k, v = (t.view(-1, heads, hd).transpose(0, 1) for t in (rms(x, n1) @ W["qkv"]).split(d, -1))
    att = torch.softmax(q @ k.transpose(-1, -2) / hd ** 0.5, dim=-1) @ v
    x = x + att.transpose(0, 1).reshape(-1, d) @ W["o"]
    h = rms(x, n2)
    return x + (F.silu(h @ W["gate"]) * (h @ W["up"])) @ W["down"]
x = torch.randn(64, d)
be = mg.backend(target="cpu", time_budget=8)
compiled = torch.compile(layer, backend=be, dynamic=False)
with torch.no_grad():
    want, got = layer(x), compiled(x)
    t0 = time.perf_counter(); [layer(x) for _ in range(50)]; t1 = time.perf_counter()
    [compiled(x) for _ in range(50)]; t2 = time.perf_counter()
print(be.report())
assert torch.allclose(got, want, rtol=1e-4, atol=1e-4), (got - want).abs().max()
assert be.regions and all(r["replaced"] for r in be.regions), be.report()
print("max abs err vs eager %.1e; eager %.3f ms, compiled with mugraph %.3f ms (%.2fx)" % (
    (got - want).abs().max(), (t1 - t0) * 20, (t2 - t1) * 20, (t1 - t0) / (t2 - t1)))
