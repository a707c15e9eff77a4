#!/usr/bin/env bash
# pip_install_test.sh PYTHON ROOT: `pip install .` (issue 21 item 1) from a copy of the checkout
# into a fresh directory, then the installed package (not the build tree's) used from elsewhere:
# parse, superoptimize on the CPU, run on numpy arrays against numpy's float64 result.
set -euo pipefail
py=$1 root=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A copy without build trees (pip builds in its own temporary directory anyway).
tar -C "$root" --exclude=./build --exclude='./build-*' --exclude=./.venv --exclude=./.git \
  --exclude=./.gpu -cf - . | (mkdir -p "$work/src" && tar -C "$work/src" -xf -)
"$py" -m pip install -q --no-deps --target "$work/site" "$work/src"
cd "$work"
PYTHONPATH="$work/site" MUGRAPH_CACHE_DIR="$work/cache" "$py" - <<'PY'
import numpy as np
import mugraph as mg
assert mg.__file__.startswith(__import__("os").getcwd()), mg.__file__  # the installed copy
g = mg.parse("""input X : f32[8, 16]
input W : f32[16, 4]
Y = matmul(X, W)
Z = exp(Y)
output Z
""")
r = mg.superoptimize(g, target="cpu", time_budget=10, max_kernel_ops=2, max_graph_defined=0)
rng = np.random.default_rng(0)
x, w = rng.uniform(-1, 1, (8, 16)).astype(np.float32), rng.uniform(-1, 1, (16, 4)).astype(np.float32)
(z,) = r(x, w)
want = np.exp(x.astype(np.float64) @ w)
err = np.abs(z - want).max() / np.abs(want).max()
assert err < 1e-5, err
print("pip install: ok (%s, %s, max rel err %.1e)" % (r.chosen, r.verdict, err))
PY
