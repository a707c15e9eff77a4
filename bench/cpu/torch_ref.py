#!/usr/bin/env python3
"""PyTorch CPU timings of the paper benchmarks, same shapes as examples/*.mu.

Usage: torch_ref.py NAME [--runs N] [--no-compile] | torch_ref.py --ceilings. Prints one JSON
line: the median seconds of eager PyTorch with f16, bf16 and f32 tensors (null where this torch
lacks the op), of torch.compile (default mode, inductor) in each dtype, and the best of them,
which is what bench/cpu/run.sh compares against. Run with the project's .venv python (PyTorch
2.x from PyPI), never Debian's python3-torch 1.13. --ceilings: this machine's measured copy
bandwidth (bytes read + written per second, a STREAM-like copy of 256 MiB) and f32 matmul FLOP
rate (2048^3), in the same process as the timings it judges.
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


def ceilings():
    n = 64 << 20  # 64 Mi floats: 256 MiB, far above the caches
    x = torch.rand(n)
    y = torch.empty_like(x)
    copy = median_time(lambda: y.copy_(x), [], 10)
    m = 2048
    a = torch.rand(m, m)
    mm = median_time(lambda: a @ a, [], 5)
    return {"copy_bytes_per_s": 2 * 4 * n / copy, "f32_flops_per_s": 2 * m ** 3 / mm,
            "threads": torch.get_num_threads(), "torch": torch.__version__}


def main():
    if "--ceilings" in sys.argv:
        print(json.dumps(ceilings()))
        return
    name = sys.argv[1]
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 10
    shapes, fn = BENCH[name]
    gen = torch.Generator().manual_seed(0)
    base = [torch.rand(s, generator=gen) * 2 - 1 for s in shapes]
    out = {"name": name, "threads": torch.get_num_threads(), "torch": torch.__version__,
           "blas": blas()}
    compiled = None if "--no-compile" in sys.argv else torch.compile(fn)
    times = []
    for dt, key in ((torch.float16, "f16"), (torch.bfloat16, "bf16"), (torch.float32, "f32")):
        args = [b.to(dt) for b in base]
        for f, kind in ((fn, "eager"), (compiled, "compiled")):
            k = "%s_%s_s" % (kind, key)
            if f is None:
                continue
            try:
                out[k] = median_time(f, args, runs)
                times.append((out[k], kind, key))
            except Exception as e:  # noqa: BLE001 - a dtype this torch lacks on the CPU
                out[k] = None
                out[k + "_error"] = str(e).splitlines()[0][:200]
    best = min(times)
    out["best_s"], out["best"] = best[0], "%s %s" % (best[1], best[2])
    eager = [t for t in times if t[1] == "eager"]
    out["eager_s"] = min(eager)[0] if eager else None
    comp = [t for t in times if t[1] == "compiled"]
    out["compiled_s"] = min(comp)[0] if comp else None
    print(json.dumps(out))


if __name__ == "__main__":
    main()
