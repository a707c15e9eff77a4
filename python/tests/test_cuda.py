"""CUDA tensors (issue 21 item 2): a result for a GPU target runs on torch CUDA tensors, on
torch's current stream, outputs allocated by torch on the inputs' device, checked against the
float64 reference; wrong devices get errors naming the input. Without a GPU the CUDA kernel is
still generated, compiled by nvcc and loaded; the GPU runs skip and say why. On a machine with
a GPU device node that torch cannot use, the GPU tests fail (a broken setup is not a skip)."""
import os

import numpy as np
import pytest

import mugraph as mg

torch = pytest.importorskip("torch")

NVCC = "/usr/local/cuda/bin/nvcc"
GPU_NODE = os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/nvidia0")
needs_gpu = pytest.mark.skipif(
    not GPU_NODE and not torch.cuda.is_available(),
    reason="no GPU here (no /dev/nvidia0 and torch.cuda.is_available() is False): the CUDA "
           "tensor runs are checked on a GPU machine (bench/gpu/run.sh --python)")

RMS = """input X : f16[8, 256]
input G : f16[256]
input W : f16[256, 128]
sq = square(X)
ss = sum(sq, dim=1, group=256)
ms = scale(ss, factor=1/256)
rms = sqrt(ms)
xn = div(X, rms)
xg = mul(xn, G)
Y = matmul(xg, W)
output Y
"""
SMALL = dict(time_budget=10, top=3, runs=3)


def reference(x, g, w):
    x, g, w = (np.asarray(a, dtype=np.float64) for a in (x, g, w))
    return (x / np.sqrt((x * x).mean(axis=1, keepdims=True)) * g) @ w


def gpu_target():
    assert torch.cuda.is_available(), "a GPU device node is here but torch cannot use it"
    name = torch.cuda.get_device_name()
    return "h200" if "H200" in name else "a100" if "A100" in name else "h100"


def inputs(device):
    gen = torch.Generator().manual_seed(1)
    x, g, w = (torch.rand(s, generator=gen).sub(0.5).to(torch.float16)
               for s in ((8, 256), (256,), (256, 128)))
    return [t.to(device) for t in (x, g, w)]


def close(out, x, g, w):
    want = reference(x.cpu(), g.cpu(), w.cpu())
    err = np.linalg.norm(out.cpu().double().numpy() - want) / np.linalg.norm(want)
    assert err <= 1e-2, err


@pytest.mark.skipif(not os.path.exists(NVCC), reason="no nvcc at " + NVCC)
def test_the_cuda_kernel_compiles_and_loads_without_a_gpu():
    from mugraph import _mugraph
    g = mg.parse(RMS)
    for prog in (g, mg.load(os.path.join(os.path.dirname(__file__), "..", "..", "examples",
                                         "rms_norm_matmul.fused.mu"))):
        k = _mugraph.CudaKernel(prog, "h100", 90)
        assert k.workspace_bytes() >= 0
    with pytest.raises(mg.Error, match="needs a GPU target"):
        _mugraph.CudaKernel(g, "cpu", 90)


def test_tensors_on_another_device_are_refused():
    r = mg.superoptimize(mg.parse(RMS), target="cpu", cache=False, **SMALL)
    x, g, w = inputs("cpu")
    with pytest.raises(mg.Error, match=r"input 0 \('X'\): a torch tensor \(8, 256\) float16 on "
                                       r"meta; expected a CPU or CUDA tensor"):
        r(x.to("meta"), g, w)


@needs_gpu
def test_a_gpu_result_runs_on_cuda_tensors_on_the_current_stream():
    target = gpu_target()
    r = mg.superoptimize(mg.parse(RMS), target=target, cache=False, **SMALL)
    assert r.target == target and r.measured, r.report
    x, g, w = inputs("cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        (y,) = r(x, g, w)
    side.synchronize()
    assert y.device == x.device and y.dtype == torch.float16 and tuple(y.shape) == (8, 128)
    close(y, x, g, w)
    # Captured into a CUDA graph (the capture stream is torch's current one) and replayed on
    # new inputs copied into the captured ones.
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        (yg,) = r(x, g, w)
    x2 = x.flip(0).contiguous()
    x.copy_(x2)
    graph.replay()
    torch.cuda.synchronize()
    close(yg, x2, g, w)
    print(r.report)


@needs_gpu
def test_cuda_errors_name_the_input():
    target = gpu_target()
    r = mg.superoptimize(mg.parse(RMS), target=target, cache=False, **SMALL)
    x, g, w = inputs("cuda")
    with pytest.raises(mg.Error, match=r"input 1: a torch tensor \(256,\) float16 on cpu, but "
                                       r"input 0 is a torch tensor .* on cuda:0"):
        r(x, g.cpu(), w)
    with pytest.raises(mg.Error, match=r"input 2 \('W'\): dtype float32"):
        r(x, g, w.float())
    with pytest.raises(mg.Error, match=r"input 2 \('W'\): strides"):
        r(x, g, torch.zeros(128, 256, dtype=torch.float16, device="cuda").t())
    cpu = mg.superoptimize(mg.parse(RMS), target="cpu", cache=False, **SMALL)
    with pytest.raises(mg.Error, match="optimized for target 'cpu'"):
        cpu(x, g, w)
    # The first CUDA call compiles: not inside a CUDA graph capture.
    fresh = mg.superoptimize(mg.parse(RMS), target=target, **SMALL)
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(mg.Error, match="call the result once before capturing"):
        with torch.cuda.graph(graph):
            fresh(x, g, w)


@needs_gpu
def test_torch_compile_backend_on_cuda():
    target = gpu_target()

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.rand(256) + 0.5)
            self.proj = torch.nn.Linear(256, 128, bias=False)

        def forward(self, x):
            h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True)) * self.weight
            return self.proj(h)

    torch.manual_seed(0)
    model = Model().half().cuda().eval()
    x = torch.rand(8, 256, device="cuda", dtype=torch.float16) - 0.5
    be = mg.backend(target=target, time_budget=10)
    with torch.no_grad():
        want = model(x).double()
        got = torch.compile(model, backend=be, dynamic=False)(x)
    print(be.report())
    assert got.device == x.device
    assert "region(s) replaced" in be.report() and " 0 region(s) replaced" not in be.report()
    err = float((got.double() - want).norm() / want.norm())
    assert err <= 1e-2, err
