#!/usr/bin/env bash
# The main job on the bundled example: build, check the RMSNorm+MatMul program and its
# hand-fused uGraph (Mirage Fig. 3b), run it, confirm both compute the same function, then
# optimize the plain program: search, cost model, CPU code generation, measurement.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/build.sh"
mg="${BUILD_DIR:-$root/build}/mugraph"
ex="$root/examples"
"$mg" check "$ex/rms_norm_matmul.fused.mu"
"$mg" run "$ex/rms_norm_matmul.fused.mu"
"$mg" compare "$ex/rms_norm_matmul.mu" "$ex/rms_norm_matmul.fused.mu"
# Optimize the plain program end to end on this machine's CPU within 30 s in all, no search flags
# (the space is planned from the program): search (45% of it), rank the candidates with the cost
# model, JIT-compile and time the top 8 next to the program, certify the winner (on this project's
# 2-core machine, 2026-11-26: a fused kernel, 1.12x the program, VERIFIED); the report,
# best.mu/.json, best_cpu.cc and the search results land in build/optimize_rms_norm_matmul. A
# second run is answered from the result cache (MUGRAPH_NO_CACHE=1 searches again).
"$mg" optimize "$ex/rms_norm_matmul.mu" --target cpu --time-budget 30 --quiet \
  --out "${BUILD_DIR:-$root/build}/optimize_rms_norm_matmul"
# The same from Python (issue 21): build RMSNorm+MatMul with mugraph.Graph, superoptimize it on
# the CPU (answered from the result cache on a second run), call it on torch tensors.
PYTHONPATH="${BUILD_DIR:-$root/build}/python" "${VENV:-$root/.venv}/bin/python" "$root/examples/python/quickstart.py"
# torch.compile with mugraph as the backend on a Llama-style decoder layer: the report lists the
# regions replaced; the output is checked against eager PyTorch (cached on a second run).
PYTHONPATH="${BUILD_DIR:-$root/build}/python" "${VENV:-$root/.venv}/bin/python" "$root/examples/python/compile_decoder.py"
