#!/usr/bin/env bash
# MCFuser's Tables II and III on this machine (issue 23): every chain tuned by `mugraph tune`
# and compared with the unfused program and PyTorch eager from PyPI in the same run
# (bench/mcfuser/chains.py says how). Prints a markdown table; writes build/bench_mcfuser/.
#
#   bench/mcfuser/run.sh [--only NAME]... [--runs N]
set -euo pipefail
export MUGRAPH_NO_CACHE=1
root="$(cd "$(dirname "$0")/../.." && pwd)"
"$root/scripts/build.sh" >/dev/null   # also makes .venv with PyPI's torch (scripts/venv.sh)
py="${VENV:-$root/.venv}/bin/python"
out="${BUILD_DIR:-$root/build}/bench_mcfuser"
mkdir -p "$out"
# A copy of the binary: a rebuild while the benchmark runs does not change what it measures.
cp "${BUILD_DIR:-$root/build}/mugraph" "$out/mugraph"
mg="$out/mugraph"
echo "# mugraph tune (MCFuser tiling search), $(date -u +%Y-%m-%d), $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
echo "# command: bench/mcfuser/run.sh $*"
exec "$py" "$root/bench/mcfuser/chains.py" "$mg" "$out" "$@"
