"""XLA's own CPU execution of the test-data models (tests/data/hlo/make_hlo.py's functions, on
their seeded inputs), timed the way `mugraph model`'s runtime oracle times a state: warm-up
calls for at least 20 ms, then the minimum over N samples, each sample repeating the call for
about 2 ms (block_until_ready on every call).

    .venv/bin/python bench/model/xla_ref.py [--runs N] NAME...

Prints one line per model: NAME SECONDS_PER_CALL."""
import argparse
import importlib.util
import pathlib
import time

import jax

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("make_hlo", ROOT / "tests/data/hlo/make_hlo.py")
make_hlo = importlib.util.module_from_spec(spec)
spec.loader.exec_module(make_hlo)


def time_model(name, runs):
    fn = jax.jit(make_hlo.CASES[name][0])
    args = make_hlo.inputs(name)
    call = lambda: jax.block_until_ready(fn(*args))
    call()  # compile
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 0.02:
        call()
    t0 = time.perf_counter()
    call()
    one = time.perf_counter() - t0
    calls = max(1, min(1000, int(0.002 / max(one, 1e-9))))
    best = one
    for _ in range(runs):
        t0 = time.perf_counter()
        for _ in range(calls):
            call()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("names", nargs="+")
    a = ap.parse_args()
    assert jax.devices()[0].platform == "cpu", "XLA should run on the CPU here"
    for name in a.names:
        print(name, "%.9f" % time_model(name, a.runs), flush=True)


if __name__ == "__main__":
    main()
