#!/usr/bin/env python3
"""mugraph's CPU kernels beside a busy neighbour (issue 25 item 3).

Times each uGraph (default: the unfused RMSNorm+MatMul and Gated MLP examples, 7 and 4 OpenMP
regions per call) through the package's CPU JIT, with all cores, on a quiet machine and with
`taskset -c 0 yes` running on core 0, under mugraph's OpenMP wait setting (GOMP_SPINCOUNT=1000,
runtime::init_openmp) and under libgomp's own default (GOMP_SPINCOUNT=300000), each case in a
fresh process (libgomp reads the setting when it loads). Prints the median and p90 of --runs
calls per case. --spins S,S,... times other GOMP_SPINCOUNT values as well (each in its own
process, quiet and busy).

  PYTHONPATH=build/python .venv/bin/python bench/cpu/busy_neighbour.py [--runs N] [--spins S,...] [FILE.mu ...]
"""
import argparse
import json
import os
import subprocess
import sys
import time

MUGRAPH_SPINS = "1000"  # runtime::init_openmp's GOMP_SPINCOUNT (src/runtime/cpu_jit.cc)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def child(paths, runs):
    import numpy as np
    import mugraph as mg
    from mugraph import _mugraph
    out = {}
    for p in paths:
        g = mg.load(p)
        k = _mugraph.CpuKernel(g)
        rng = np.random.default_rng(0)
        ins = [(rng.random(i[2]) * 0.1).astype(np.float16) for i in g.inputs()]
        outs = [np.zeros(o[2], np.float16) for o in g.outputs()]
        ip, op = [a.ctypes.data for a in ins], [a.ctypes.data for a in outs]
        for _ in range(3):
            k.run(ip, op)
        ts = []
        for _ in range(runs):
            t0 = time.perf_counter()
            k.run(ip, op)
            ts.append(time.perf_counter() - t0)
        ts.sort()
        out[p] = (ts[len(ts) // 2], ts[min(len(ts) - 1, (len(ts) * 9) // 10)])
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", default=[os.path.join(ROOT, "examples", n) for n in
                                                 ("rms_norm_matmul.mu", "gated_mlp.mu")])
    ap.add_argument("--runs", type=int, default=60)
    ap.add_argument("--spins", default="", help="more GOMP_SPINCOUNT values to time, comma-separated")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.files, a.runs)
        return
    if (os.cpu_count() or 1) < 2:
        sys.exit("busy_neighbour: needs 2 or more cores")
    print("# mugraph CPU kernels beside a busy neighbour, %s, %d cores" %
          (time.strftime("%Y-%m-%d", time.gmtime()), os.cpu_count()))
    print("# command: bench/cpu/busy_neighbour.py --runs %d%s; busy = `taskset -c 0 yes`" %
          (a.runs, " --spins " + a.spins if a.spins else ""))
    print("%-22s %-24s %-6s %10s %10s" % ("uGraph", "OpenMP wait", "load", "median-us", "p90-us"))
    cases = [("mugraph (spin %s)" % MUGRAPH_SPINS, None)]
    cases += [("spin %d" % int(v), str(int(v))) for v in a.spins.split(",") if v.strip()]
    cases.append(("libgomp default (300000)", "300000"))
    for label, spin in cases:
        for busy in (False, True):
            env = dict(os.environ)
            env.pop("OMP_WAIT_POLICY", None)
            env.pop("GOMP_SPINCOUNT", None)
            if spin:
                env["GOMP_SPINCOUNT"] = spin
            hog = subprocess.Popen(["taskset", "-c", "0", "yes"], stdout=subprocess.DEVNULL) if busy else None
            try:
                time.sleep(0.3 if busy else 0)
                r = subprocess.run([sys.executable, __file__, "--child", "--runs", str(a.runs)] + a.files,
                                   env=env, capture_output=True, text=True, check=True)
            finally:
                if hog:
                    hog.kill()
                    hog.wait()
            for p, (med, p90) in json.loads(r.stdout.strip().splitlines()[-1]).items():
                print("%-22s %-24s %-6s %10.0f %10.0f" % (os.path.basename(p), label,
                                                          "busy" if busy else "quiet", med * 1e6, p90 * 1e6))


if __name__ == "__main__":
    main()
