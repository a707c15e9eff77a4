#!/usr/bin/env python3
"""mugraph's kernels and PyTorch (PyPI, eager and torch.compile) timed in interleaved rounds in
one process: every round times each contender once (a sample of calls lasting about 20 ms), so
a machine whose speed drifts by 30-50% within minutes (this project's VMs) slows them alike,
and the median of the per-round ratios says which is faster. bench/cpu/run.sh times mugraph
(inside `mugraph optimize`) and PyTorch (bench/cpu/torch_ref.py) one after the other, minutes
apart; between two of its runs a few minutes apart (two builds that differ only in how optimize
times its entries) LoRA's vs-eager moved from 1.40x to 0.98x and QKNorm's from 0.76x to 1.08x,
with the same chosen graphs.

    PYTHONPATH=build/python .venv/bin/python bench/cpu/interleaved.py [--rounds N] [NAME ...]

For each benchmark: the program (examples/NAME.mu) and, when bench/cpu/run.sh wrote one,
the kernel graph `mugraph optimize` chose (build/bench_cpu/NAME/best.mu), both compiled by the
CPU backend and called on f16 tensors as the Python package calls them; PyTorch eager and
torch.compile each in its fastest dtype of f16, bf16 and f32 (picked from a few warm-up calls).
Prints median microseconds per call and the median per-round ratio of each PyTorch contender
to mugraph's best. Results: bench/results/cpu.md.
"""
import os
import pathlib
import statistics
import sys
import time

import torch

import mugraph as mg
from mugraph import _mugraph, _result

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import torch_ref  # noqa: E402  (the PyTorch programs and shapes)

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLE_S = 0.02


def inputs(specs, shared):
    """Tensors for inputs `specs` (name, dtype, shape, strides): the one of `shared` (name ->
    tensor) where its dtype, shape and strides fit, else a fresh draw, which joins `shared`:
    every contender reads one copy of a weight, as repeated calls of one model would."""
    out = []
    for name, dt, shape, strides in specs:
        want = getattr(torch, _result._DTYPES[dt][1])
        t = shared.get(name)
        if t is None or t.dtype != want or tuple(t.shape) != tuple(shape) or t.stride() != tuple(strides):
            gen = torch.Generator().manual_seed(len(shared))
            t = torch.empty_strided(tuple(shape), tuple(strides), dtype=want)
            t.copy_(torch.rand(tuple(shape), generator=gen) * 2 - 1)
            shared.setdefault(name, t)
        out.append(t)
    return out


def mugraph_call(path, shared):
    """A no-argument call of the graph at `path` through the package's CPU kernel (outputs
    allocated once); the closure keeps its tensors alive."""
    g = mg.load(path)
    kernel = _mugraph.CpuKernel(g)
    ins = inputs(g.inputs(), shared)
    ptrs = [_result._pointer(x, spec, i) for i, (x, spec) in enumerate(zip(ins, g.inputs()))]
    outs = [_result._alloc(spec, True) for spec in g.outputs()]
    out_ptrs = [p for _, p in outs]

    def call():
        kernel.run(ptrs, out_ptrs)
    call.keep = (ins, outs)
    return call


def torch_call(fn, specs, dtype, shared):
    """fn on inputs of `specs` (the program's) in `dtype`: f16 ones are mugraph's own tensors."""
    args = [t if t.dtype == dtype else t.to(dtype) for t in inputs(specs, shared)]

    def call():
        with torch.no_grad():
            fn(*args)
    return call


def one(call):
    t0 = time.perf_counter()
    call()
    return time.perf_counter() - t0


def fastest_dtype(fn, specs, shared):
    """(call, dtype name) of fn's fastest dtype over 3 warm calls each; None if none runs."""
    best = None
    for dt in (torch.float16, torch.bfloat16, torch.float32):
        try:
            c = torch_call(fn, specs, dt, shared)
            c()  # warm-up (compiles for torch.compile)
            t = min(one(c) for _ in range(3))
        except Exception:  # noqa: BLE001 - a dtype this torch lacks on the CPU
            continue
        if best is None or t < best[0]:
            best = (t, c, str(dt).replace("torch.", ""))
    return None if best is None else (best[1], best[2])


def sample(call, calls):
    t0 = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - t0) / calls


def bench(name, rounds):
    _, fn = torch_ref.BENCH[name]
    shared = {}
    program = ROOT / "examples" / (name + ".mu")
    contenders = [("program", mugraph_call(program, shared))]
    chosen = pathlib.Path(os.environ.get("BUILD_DIR", ROOT / "build")) / "bench_cpu" / name / "best.mu"
    if chosen.exists():
        contenders.append(("chosen", mugraph_call(chosen, shared)))
    specs = mg.load(program).inputs()
    for kind, f in (("eager", fn), ("compiled", torch.compile(fn))):
        picked = fastest_dtype(f, specs, shared)
        if picked:
            contenders.append(("%s %s" % (kind, picked[1]), picked[0]))
    calls = {}
    for label, c in contenders:
        c()
        calls[label] = max(1, min(1000, round(SAMPLE_S / max(min(one(c) for _ in range(3)), 1e-7))))
    times = {label: [] for label, _ in contenders}
    for r in range(rounds):  # each round starts with the next contender: no fixed order
        for j in range(len(contenders)):
            label, c = contenders[(r + j) % len(contenders)]
            times[label].append(sample(c, calls[label]))
    best = "chosen" if "chosen" in times else "program"
    row = [name]
    for label, _ in contenders:
        ratio = statistics.median(t / m for t, m in zip(times[label], times[best]))
        row.append("%s %.1f us (%.2fx)" % (label, statistics.median(times[label]) * 1e6, ratio))
    print(" | ".join(row), flush=True)


def main():
    args = sys.argv[1:]
    rounds = 15
    if "--rounds" in args:
        i = args.index("--rounds")
        rounds = int(args[i + 1])
        del args[i:i + 2]
    names = args or list(torch_ref.BENCH)
    for n in names:
        if n not in torch_ref.BENCH:
            sys.exit("unknown benchmark %s (one of %s)" % (n, ", ".join(torch_ref.BENCH)))
    print("# interleaved rounds: %d, torch %s, %d torch threads, mugraph's OpenMP threads: %s; "
          "(Nx): median per-round time over mugraph's best (chosen, else the program); > 1: "
          "slower than mugraph" % (rounds, torch.__version__, torch.get_num_threads(),
                                   os.environ.get("OMP_NUM_THREADS", "one per core")))
    for n in names:
        bench(n, rounds)
    sys.stdout.flush()
    # PyTorch 2.15's teardown after torch.compile aborts in this process ("Tried to deregister a
    # kernel for dispatch key Meta ... all_gather_into_tensor"): leave without it.
    os._exit(0)


if __name__ == "__main__":
    main()
