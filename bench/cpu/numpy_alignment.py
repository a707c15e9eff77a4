"""RMSNorm+MatMul's program through the Python package, called with a NumPy weight as NumPy
allocates it (a 32 MiB array starts 16 bytes past a 64-byte boundary) and with the same values
in a 64-byte aligned copy: min and median of 30 calls each, twice, in one run. The kernels read
the arrays in place, so the weight's alignment reaches the matmul. Results: bench/results/cpu.md.

    PYTHONPATH=build/python .venv/bin/python bench/cpu/numpy_alignment.py
"""
import pathlib
import time

import numpy as np

import mugraph as mg

ROOT = pathlib.Path(__file__).resolve().parents[2]


def timed(run, w, calls=30):
    run(w)
    ts = []
    for _ in range(calls):
        t0 = time.perf_counter()
        run(w)
        ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[0] * 1e3, ts[len(ts) // 2] * 1e3


def main():
    g = mg.load(ROOT / "examples" / "rms_norm_matmul.mu")
    r = mg.superoptimize(g, target="cpu", time_budget=20, max_kernel_ops=1, max_graph_defined=0)
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (16, 4096)).astype(np.float16)
    gain = rng.uniform(-1, 1, (4096,)).astype(np.float16)
    w = (rng.uniform(-1, 1, (4096, 4096)) / 64).astype(np.float16)
    buf = np.empty(4096 * 4096 + 32, dtype=np.float16)
    first = (-buf.ctypes.data % 64) // 2
    aligned = buf[first:first + 4096 * 4096].reshape(4096, 4096)
    aligned[...] = w
    print("# W is %d bytes past a 64-byte boundary; the copy %d" % (w.ctypes.data % 64, aligned.ctypes.data % 64))
    run = lambda weight: r(x, gain, weight)
    for _ in range(2):
        print("numpy W:   min %.2f ms  median %.2f ms" % timed(run, w))
        print("aligned W: min %.2f ms  median %.2f ms" % timed(run, aligned))


if __name__ == "__main__":
    main()
