#!/usr/bin/env bash
# The main job on the bundled example: build, check the RMSNorm+MatMul program and its
# hand-fused uGraph (Mirage Fig. 3b), run it, confirm both compute the same function, then
# let the search find fused kernels for the plain program on its own.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/build.sh"
mg="${BUILD_DIR:-$root/build}/mugraph"
ex="$root/examples"
"$mg" check "$ex/rms_norm_matmul.fused.mu"
"$mg" run "$ex/rms_norm_matmul.fused.mu"
"$mg" compare "$ex/rms_norm_matmul.mu" "$ex/rms_norm_matmul.fused.mu"
# Superoptimize the plain program: search for single fused kernels (30 s budget; the summary,
# every verified candidate and the certified best uGraph land in build/search_rms_norm_matmul).
"$mg" search "$ex/rms_norm_matmul.mu" --max-kernel-ops 1 --max-block-ops 9 --time-budget 30 \
  --out "${BUILD_DIR:-$root/build}/search_rms_norm_matmul"
