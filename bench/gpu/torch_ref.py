#!/usr/bin/env python3
"""PyTorch GPU timings of the paper benchmarks (shapes and programs of bench/cpu/torch_ref.py,
i.e. of examples/*.mu), f16 on the GPU, for bench/gpu/run.sh.

Usage: torch_ref.py NAME [--runs N]. Prints one JSON line with the median seconds per call of
  eager     the program in eager PyTorch,
  compiled  torch.compile(program) (default mode),
each captured into a CUDA graph (so launch overhead is excluded for every contestant, as for
mugraph's kernels), timed with CUDA events over batches of calls; plus the device's measured
ceilings: copy bandwidth (bytes read + written per second) and a large f16 matmul's FLOP rate.
"""
import json
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cpu"))
from torch_ref import BENCH  # noqa: E402  (same programs and shapes as the CPU benchmark)


def graph_time(fn, args, runs, batch=20):
    """Median seconds per call of fn(*args), replayed from a CUDA graph of `batch` calls."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s), torch.no_grad():
        for _ in range(3):  # warm-up (and compilation for torch.compile)
            fn(*args)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g), torch.no_grad():
        for _ in range(batch):
            fn(*args)
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e-3 / batch)
    return statistics.median(times)


def ceilings():
    x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    copy = graph_time(lambda: y.copy_(x), (), 10, batch=5)
    n = 8192
    a = torch.randn(n, n, dtype=torch.float16, device="cuda")
    mm = graph_time(lambda: a @ a, (), 10, batch=5)
    return {"copy_bytes_per_s": 2 * x.numel() / copy, "f16_flops_per_s": 2 * n ** 3 / mm}


def main():
    name = sys.argv[1]
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 50
    shapes, fn = BENCH[name]
    gen = torch.Generator().manual_seed(0)
    args = [(torch.rand(s, generator=gen) * 2 - 1).to("cuda", torch.float16) for s in shapes]
    out = {"name": name, "torch": torch.__version__, "device": torch.cuda.get_device_name()}
    out["eager_s"] = graph_time(fn, args, runs)
    try:
        out["compiled_s"] = graph_time(torch.compile(fn), args, runs)
    except Exception as e:  # report, never hide: the table shows n/a and the reason
        out["compiled_s"] = None
        out["compile_error"] = str(e)[:300]
    out["best_s"] = min(t for t in (out["eager_s"], out["compiled_s"]) if t is not None)
    if "--ceilings" in sys.argv:
        out.update(ceilings())
    print(json.dumps(out))


if __name__ == "__main__":
    main()
