#!/usr/bin/python3
"""PyTorch CPU timings of the paper benchmarks, same shapes as examples/*.mu.

Usage: torch_ref.py NAME [--runs N]. Prints one JSON line: the median seconds of eager PyTorch
with f16 tensors (the examples' storage type; null where this torch lacks a Half CPU op) and with f32 tensors (often faster on CPUs without
native f16 math), and the best of the two, which is what bench/cpu/run.sh compares against.
"""
import json
import statistics
import sys
import time

import torch


def blas():
    """The BLAS this torch build uses (from its build configuration), e.g. 'open' or 'mkl'."""
    for line in torch.__config__.show().splitlines():
        line = line.strip()
        if line.startswith("- BLAS_INFO=") or "BLAS_INFO=" in line:
            return line.split("BLAS_INFO=")[1].split(",")[0].strip()
    return "unknown"


def rms(x, dim):
    return x / torch.sqrt(torch.mean(x * x, dim=dim, keepdim=True))


def attention(q, k, v):
    e = torch.exp(torch.matmul(q, k) / 8.0)
    return torch.matmul(e / e.sum(dim=2, keepdim=True), v)


# name -> (input shapes, function): the programs of examples/<name>.mu.
BENCH = {
    "rms_norm_matmul": ([(16, 4096), (4096,), (4096, 4096)],
                        lambda x, g, w: torch.matmul(rms(x, 1) * g, w)),
    "gated_mlp": ([(8, 4096), (4096, 4096), (4096, 4096)],
                  lambda x, w1, w2: torch.nn.functional.silu(x @ w1) * (x @ w2)),
    "gqa": ([(2, 256, 64), (2, 64, 4096), (2, 4096, 64)], attention),
    "lora": ([(16, 256), (256, 4096), (256, 16), (16, 4096)],
             lambda x, w, a, b: x @ w + (x @ a) @ b),
    "ntrans": ([(8, 4096), (8, 4096), (8, 4096)],
               lambda h, x, al: rms(x + al * (rms(h, 1) - x), 1)),
    "qknorm_attention": ([(2, 256, 64), (2, 64, 4096), (2, 4096, 64)],
                         lambda q, k, v: attention(rms(q, 2), rms(k, 1), v)),
}


def median_time(fn, args, runs):
    with torch.no_grad():
        fn(*args)  # warm-up
        t = []
        for _ in range(runs):
            t0 = time.perf_counter()
            fn(*args)
            t.append(time.perf_counter() - t0)
    return statistics.median(t)


def main():
    name = sys.argv[1]
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 10
    shapes, fn = BENCH[name]
    gen = torch.Generator().manual_seed(0)
    base = [torch.rand(s, generator=gen) * 2 - 1 for s in shapes]
    out = {"name": name, "threads": torch.get_num_threads(), "torch": torch.__version__,
           "blas": blas()}
    for dt, key in ((torch.float16, "f16_s"), (torch.float32, "f32_s")):
        try:
            out[key] = median_time(fn, [b.to(dt) for b in base], runs)
        except RuntimeError as e:  # e.g. torch 1.13: no CPU sqrt for Half
            out[key] = None
            out[key + "_error"] = str(e)
    out["best_s"] = min(t for t in (out["f16_s"], out["f32_s"]) if t is not None)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
