"""torch.compile(model, backend=mg.backend(...)) (issue 21 item 4): a small Llama-style decoder
layer at reduced shapes on the CPU matches eager PyTorch; the report lists the regions replaced."""
import time

import pytest

import mugraph as mg

torch = pytest.importorskip("torch")
F = torch.nn.functional


class RMSNorm(torch.nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.rand(d) + 0.5)
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class DecoderLayer(torch.nn.Module):
    def __init__(self, d=64, heads=2, hidden=128):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.norm1, self.norm2 = RMSNorm(d), RMSNorm(d)
        self.qkv = torch.nn.Linear(d, 3 * d, bias=False)
        self.o = torch.nn.Linear(d, d, bias=False)
        self.gate = torch.nn.Linear(d, hidden, bias=False)
        self.up = torch.nn.Linear(d, hidden, bias=False)
        self.down = torch.nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, self.hd).transpose(1, 2) for z in (q, k, v))
        att = torch.softmax(q @ k.transpose(-1, -2) / self.hd ** 0.5, dim=-1)
        x = x + self.o((att @ v).transpose(1, 2).reshape(b, t, d))
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


def test_decoder_layer_through_torch_compile():
    torch.manual_seed(0)
    torch._dynamo.reset()
    model = DecoderLayer().eval()
    x = torch.randn(1, 8, 64)
    be = mg.backend(target="cpu", time_budget=5, max_kernel_ops=1, max_graph_defined=0, top=2,
                    runs=2)
    compiled = torch.compile(model, backend=be, dynamic=False)
    with torch.no_grad():
        want = model(x)
        got = compiled(x)
    report = be.report()
    print(report)
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-4), (got - want).abs().max()
    replaced = [r for r in be.regions if r["replaced"]]
    assert replaced and len(replaced) == len(be.regions), report
    assert any(r["ops"] >= 17 for r in replaced), report  # the attention, head split included
    assert "-> mugraph:" in report
    # The gated MLP (silu(gate) * up, then down) is one region: linear, silu, mul, linear.
    assert any(r["ops"] >= 4 for r in replaced), report
    # New shapes recompile and still match.
    x2 = torch.randn(1, 4, 64)
    with torch.no_grad():
        assert torch.allclose(compiled(x2), model(x2), rtol=1e-4, atol=1e-4)
    # The speedup over eager, printed (not asserted: 2 shared cores, tiny shapes).
    with torch.no_grad():
        for f in (model, compiled):
            f(x)
        t0 = time.perf_counter()
        for _ in range(20):
            model(x)
        t1 = time.perf_counter()
        for _ in range(20):
            compiled(x)
        t2 = time.perf_counter()
    print("eager %.3f ms, compiled with mugraph %.3f ms: %.2fx"
          % ((t1 - t0) / 20e-3, (t2 - t1) / 20e-3, (t1 - t0) / (t2 - t1)))


def test_backend_refuses_unknown_targets_and_graphs_that_need_grad():
    with pytest.raises(mg.Error, match=r"mg.backend\(target='tpu'\): unknown target \(known: a100, h100, h200, cpu\)"):
        mg.backend(target="tpu")
    with pytest.raises(TypeError, match="unknown option 'max_opz'"):
        mg.backend(target="cpu", max_opz=3)
    torch._dynamo.reset()
    lin = torch.nn.Linear(8, 8)
    be = mg.backend(target="cpu", time_budget=5, max_kernel_ops=1, max_graph_defined=0)
    x = torch.randn(2, 8)
    out = torch.compile(lin, backend=be, dynamic=False)(x)
    assert torch.allclose(out, lin(x))  # PyTorch ran it
    assert "inputs require grad" in be.report()


@pytest.mark.parametrize("script", ["quickstart.py", "compile_decoder.py"])
def test_the_python_examples_run(script):
    # What scripts/example.sh runs: each example checks its own result against PyTorch.
    import os
    import pathlib
    import subprocess
    import sys
    path = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python" / script
    p = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=600,
                       env=dict(os.environ))
    assert p.returncode == 0, p.stdout + p.stderr
    print(p.stdout)
