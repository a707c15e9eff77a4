#!/usr/bin/env python3
"""MCFuser's benchmark (seed 002, Tables II and III) on this machine: each chain tuned by
`mugraph tune`, against the unfused program (same CPU backend) and PyTorch eager from PyPI, all
in this one run.

Usage (the project's .venv python; bench/mcfuser/run.sh builds first):
  chains.py MUGRAPH OUT_DIR [--only NAME]... [--runs N]
            [--target h100|h200 [--tune-budget S] [--step-timeout S]]

--target h100|h200 (on a GPU machine, with the PyTorch there; bench/gpu/run.sh --mcfuser): `tune
--target T` measures the tilings and the program on the GPU; PyTorch eager and torch.compile in
f16 on CUDA, every contestant replayed from a CUDA graph (bench/gpu/torch_ref.py's
timing), against the device's measured f16 matmul rate; the all-tilings run is skipped there
(one nvcc per tiling), so the rank correlation is over the measured top picks. --tune-budget S
is passed to `tune --time-budget` (the search's seconds; certify and the final timing come after);
--step-timeout S stops a chain's whole `tune` after S seconds (the row says so).

For each configuration: writes OUT_DIR/NAME.mu (f16, the paper's precision), runs
`MUGRAPH tune NAME.mu --out OUT_DIR/NAME` (tuning, certify, the kernel timed against the
program in interleaved rounds), then times the same function in PyTorch eager in f32, bf16 and
f16 (median of N runs, the best dtype counts), and runs `tune` once more measuring every tiling
of the pruned space (--population/--top above its size: one generation) for the model's rank
correlation over the whole space, as MCFuser's Fig. 11 reports it (the tuning run's own
correlation is over the model's top picks only, a narrow range). Prints one markdown row per configuration and a
header with this machine's measured f32 matmul rate and copy bandwidth (same process).
Shapes are the tables' (batch/heads as given); none reduced.
"""
import json
import os
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cpu"))
from torch_ref import ceilings, median_time  # noqa: E402  (same timing as bench/cpu)

# Table II: name, batch, M, N, K, H. E = (A[b,M,K] B[b,K,N]) D[b,N,H].
GEMM = [("G1", 1, 512, 256, 64, 64), ("G2", 1, 512, 256, 64, 128), ("G3", 1, 512, 256, 64, 256),
        ("G4", 1, 512, 512, 256, 256), ("G5", 1, 512, 512, 512, 256), ("G6", 1, 512, 512, 1024, 256),
        ("G7", 1, 512, 512, 128, 128), ("G8", 1, 1024, 512, 128, 128), ("G9", 1, 2048, 512, 128, 128),
        ("G10", 1, 1024, 1024, 128, 128), ("G11", 4, 1024, 1024, 128, 128),
        ("G12", 8, 1024, 1024, 128, 128)]
# Table III: name, heads, M, N, K, H. O = softmax(Q K^T / sqrt(K)) V, Q[h,M,K], K^T[h,K,N], V[h,N,H].
ATTN = [("S1", 8, 512, 512, 64, 64), ("S2", 12, 512, 512, 64, 64), ("S3", 16, 512, 512, 64, 64),
        ("S4", 12, 256, 256, 64, 64), ("S5", 16, 256, 256, 64, 64), ("S6", 16, 256, 256, 80, 80),
        ("S7", 1, 512, 256, 64, 64), ("S8", 1, 768, 384, 64, 64), ("S9", 1, 1024, 512, 64, 64)]


def shape(b, *dims):
    return "[" + ", ".join(str(x) for x in ((b,) + dims if b > 1 else dims)) + "]"


def gemm_program(b, m, n, k, h):
    return (f"# MCFuser Table II GEMM chain: E = (A B) D\n"
            f"input A : f16{shape(b, m, k)}\ninput B : f16{shape(b, k, n)}\n"
            f"input D : f16{shape(b, n, h)}\nC = matmul(A, B)\nE = matmul(C, D)\noutput E\n")


def attention_program(b, m, n, k, h):
    # 1/sqrt(K) as an exact fraction where K is a square (64 -> 1/8), else the nearest decimal.
    root = int(round(k ** 0.5))
    factor = f"1/{root}" if root * root == k else f"{1 / k ** 0.5:.6f}"
    return (f"# MCFuser Table III attention: O = softmax(Q K / sqrt({k})) V (no max subtraction)\n"
            f"input Q : f16{shape(b, m, k)}\ninput K : f16{shape(b, k, n)}\n"
            f"input V : f16{shape(b, n, h)}\nQK = matmul(Q, K)\nS = scale(QK, factor={factor})\n"
            f"E = exp(S)\nD = sum(E, dim={2 if b > 1 else 1}, group={n})\nP = div(E, D)\n"
            f"O = matmul(P, V)\noutput O\n")


def write_program(out, name, kind, b, m, n, k, h):
    """Writes OUT/NAME.mu, the chain as a mugraph program; returns its path."""
    prog = os.path.join(out, name + ".mu")
    with open(prog, "w") as f:
        f.write((gemm_program if kind == "gemm" else attention_program)(b, m, n, k, h))
    return prog


def tuned(mg, out, only, args, step):
    """`MUGRAPH tune` on each chain (`only`: those names; `args`: more tune flags; `step`: seconds
    before a tune is stopped, or None). Yields ((kind, name, b, m, n, k, h, program path),
    tune.json, seconds, None), or (..., None, None, why) when tune left no report."""
    for kind, table in (("gemm", GEMM), ("attn", ATTN)):
        for name, b, m, n, k, h in table:
            if only and name not in only:
                continue
            prog = write_program(out, name, kind, b, m, n, k, h)
            spec = (kind, name, b, m, n, k, h, prog)
            t0 = time.perf_counter()
            try:
                p = subprocess.run([mg, "tune", prog, "--out", os.path.join(out, name)] + args,
                                   capture_output=True, text=True, timeout=step)
            except subprocess.TimeoutExpired:
                yield spec, None, None, f"tune stopped after {step} s (--step-timeout)"
                continue
            total = time.perf_counter() - t0
            if p.returncode != 0 and not os.path.exists(os.path.join(out, name, "tune.json")):
                yield spec, None, None, f"error (exit {p.returncode}): {p.stderr.strip()[:200]}"
                continue
            yield spec, json.load(open(os.path.join(out, name, "tune.json"))), total, None


def torch_chain(kind, b, m, n, k, h):
    """The chain in PyTorch: (seeded f32 inputs on the CPU, the function)."""
    gen = torch.Generator().manual_seed(0)
    dims = [(m, k), (k, n), (n, h)]
    base = [torch.rand(((b,) if b > 1 else ()) + d, generator=gen) * 2 - 1 for d in dims]
    scale = 1 / k ** 0.5
    if kind == "gemm":
        fn = lambda a, bb, d: torch.matmul(torch.matmul(a, bb), d)  # noqa: E731
    else:
        def fn(q, kt, v):
            e = torch.exp(torch.matmul(q, kt) * scale)
            return torch.matmul(e / e.sum(dim=-1, keepdim=True), v)
    return base, fn


def torch_eager(kind, b, m, n, k, h, runs):
    """Best median over f32, bf16, f16 (dtype, seconds)."""
    base, fn = torch_chain(kind, b, m, n, k, h)
    best = None
    for dt, name in ((torch.float32, "f32"), (torch.bfloat16, "bf16"), (torch.float16, "f16")):
        args = [x.to(dt) for x in base]
        try:
            t = median_time(fn, args, runs)
        except Exception:  # noqa: BLE001 - a dtype this torch lacks on the CPU
            continue
        if best is None or t < best[1]:
            best = (name, t)
    return best


def torch_gpu(kind, b, m, n, k, h, runs):
    """Medians on CUDA in f16 (the programs' type): ((dtype, eager s), (dtype, compile s) or None)."""
    from gpu_ref import graph_time
    base, fn = torch_chain(kind, b, m, n, k, h)
    eager, comp = None, None
    for dt, name in ((torch.float16, "f16"),):  # bf16 runs on the same tensor cores at the same rate
        args = [x.to("cuda", dt) for x in base]
        t = graph_time(fn, args, runs)
        if eager is None or t < eager[1]:
            eager = (name, t)
        try:
            torch._dynamo.reset()
            t = graph_time(torch.compile(fn), args, runs)
        except Exception as e:  # noqa: BLE001 - reported in the row, never hidden
            print(f"# torch.compile failed ({name}): {str(e)[:200]}", file=sys.stderr)
            continue
        if comp is None or t < comp[1]:
            comp = (name, t)
    return eager, comp


def main_gpu(mg, out, only, runs, target, budget, step):
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "gpu_ref", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu", "torch_ref.py"))
    gpu_ref = importlib.util.module_from_spec(spec)
    sys.modules["gpu_ref"] = gpu_ref
    spec.loader.exec_module(gpu_ref)
    c = gpu_ref.ceilings()
    bw, peak = c["copy_bytes_per_s"], c["f16_flops_per_s"]
    print(f"# measured here: {torch.cuda.get_device_name()}, copy {bw / 1e9:.0f} GB/s, f16 matmul "
          f"{peak / 1e12:.0f} TFLOP/s (8192^3); torch {torch.__version__}; tune --target {target}")
    print("| chain | batch,M,N,K,H | tune s | total s | measured/space | rank corr (top picks) | tiling (tm,th,tn) "
          "| verdict | kernel us | program us | vs program | eager us (dtype) | compile us (dtype) | vs best torch "
          "| TFLOP/s | % f16 matmul |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    failed = 0
    args = ["--target", target] + (["--time-budget", budget] if budget else [])
    for (kind, name, b, m, n, k, h, _), r, total, err in tuned(mg, out, only, args, step):
        if err:
            print(f"| {name} | {err} |", flush=True)
            failed += 1
            continue
        ch = r["chosen"]
        kernel = r.get("kernel_s")
        eager, comp = torch_gpu(kind, b, m, n, k, h, runs)
        best = min(t for t in (eager[1], comp[1] if comp else None) if t is not None)
        flops = 2.0 * b * m * n * (k + h)
        corr = r["rank_correlation"]
        us = lambda x: "-" if x is None else f"{x * 1e6:.1f}"  # noqa: E731
        row = [name, f"{b},{m},{n},{k},{h}", f"{r['tune_seconds']:.1f}", f"{total:.1f}",
               f"{len(r['measured'])}/{r['space']['fit_memory']}",
               "-" if corr is None else f"{corr:.2f}",
               "-" if ch is None else f"{ch['tm']},{ch['th']},{ch['tn']}",
               r.get("verdict", "none"), us(kernel),
               "-" if kernel is None else us(r["program_s"]),
               "-" if kernel is None else f"{r['speedup']:.2f}x",
               f"{us(eager[1])} ({eager[0]})",
               "failed" if comp is None else f"{us(comp[1])} ({comp[0]})",
               "-" if kernel is None else f"{best / kernel:.2f}x",
               "-" if kernel is None else f"{flops / kernel / 1e12:.1f}",
               "-" if kernel is None else f"{100 * flops / kernel / peak:.1f}%"]
        print("| " + " | ".join(row) + " |", flush=True)
        failed += r.get("verdict") != "VERIFIED"
    sys.exit(1 if failed else 0)


def main():
    mg, out = sys.argv[1], sys.argv[2]
    only = [sys.argv[i + 1] for i, a in enumerate(sys.argv) if a == "--only"]
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 20
    os.makedirs(out, exist_ok=True)
    if "--target" in sys.argv and sys.argv[sys.argv.index("--target") + 1] != "cpu":
        budget = sys.argv[sys.argv.index("--tune-budget") + 1] if "--tune-budget" in sys.argv else None
        step = float(sys.argv[sys.argv.index("--step-timeout") + 1]) if "--step-timeout" in sys.argv else None
        return main_gpu(mg, out, only, runs, sys.argv[sys.argv.index("--target") + 1], budget, step)
    c = ceilings()
    bw, peak = c["copy_bytes_per_s"], c["f32_flops_per_s"]
    print(f"# measured here: copy {bw / 1e9:.1f} GB/s, f32 matmul {peak / 1e9:.0f} GFLOP/s "
          f"(2048^3; torch {torch.__version__}, {torch.get_num_threads()} threads; not the FMA peak: "
          f"torch's own f32 GEMM rate, which kernels converting f16 to f32 in registers can pass)")
    print("| chain | batch,M,N,K,H | tune s | total s | measured/space | rank corr (top picks) | rank corr (all tilings) | tiling (tm,th,tn) "
          "| verdict | kernel us | program us | vs program | eager us (dtype) | vs eager | GFLOP/s | vs torch f32 GEMM |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    failed = 0
    for (kind, name, b, m, n, k, h, prog), r, total, err in tuned(mg, out, only, [], None):
        if err:
            print(f"| {name} | {err} |", flush=True)
            failed += 1
            continue
        ch = r["chosen"]
        kernel = r.get("kernel_s")
        eager = torch_eager(kind, b, m, n, k, h, runs)
        subprocess.run([mg, "tune", prog, "--population", "100000", "--top", "100000", "--out",
                        os.path.join(out, name + "_all")], capture_output=True, text=True)
        all_corr = json.load(open(os.path.join(out, name + "_all", "tune.json")))["rank_correlation"]
        flops = 2.0 * b * m * n * (k + h)
        corr = r["rank_correlation"]
        row = [name, f"{b},{m},{n},{k},{h}", f"{r['tune_seconds']:.1f}", f"{total:.1f}",
               f"{len(r['measured'])}/{r['space']['fit_memory']}",
               "-" if corr is None else f"{corr:.2f}",
               "-" if all_corr is None else f"{all_corr:.2f}",
               "-" if ch is None else f"{ch['tm']},{ch['th']},{ch['tn']}",
               r.get("verdict", "none"),
               "-" if kernel is None else f"{kernel * 1e6:.0f}",
               "-" if kernel is None else f"{r['program_s'] * 1e6:.0f}",
               "-" if kernel is None else f"{r['speedup']:.2f}x",
               f"{eager[1] * 1e6:.0f} ({eager[0]})",
               "-" if kernel is None else f"{eager[1] / kernel:.2f}x",
               "-" if kernel is None else f"{flops / kernel / 1e9:.0f}",
               "-" if kernel is None else f"{100 * flops / kernel / peak:.0f}%"]
        print("| " + " | ".join(row) + " |", flush=True)
        failed += r.get("verdict") != "VERIFIED"
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
