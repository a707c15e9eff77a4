#!/usr/bin/env bash
# The main job on the bundled example: build, then check the RMSNorm+MatMul program and its
# hand-fused uGraph (Mirage Fig. 3b), run it, and confirm both compute the same function.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/build.sh"
mg="${BUILD_DIR:-$root/build}/mugraph"
ex="$root/examples"
"$mg" check "$ex/rms_norm_matmul.fused.mu"
"$mg" run "$ex/rms_norm_matmul.fused.mu"
"$mg" compare "$ex/rms_norm_matmul.mu" "$ex/rms_norm_matmul.fused.mu"
