#!/usr/bin/env bash
# CPU benchmark (issue 7): for the six paper benchmarks, mugraph's best kernel graph vs the
# unfused program, both run by our CPU backend, vs PyTorch eager on the CPU (best of f16 and f32
# tensors), all measured in this one run on this machine. Shapes are the examples' (paper
# shapes; none reduced). Prints a table of times and ratios; writes build/bench_cpu/<name>/.
#
#   bench/cpu/run.sh [--time-budget S] [--runs N] [--only NAME]...
#
# Installs python3-torch (Debian) when missing; Debian's python is /usr/bin/python3.
set -euo pipefail
# Fresh measurements every run: never answers from the result cache.
export MUGRAPH_NO_CACHE=1
root="$(cd "$(dirname "$0")/../.." && pwd)"
budget=60
runs=20
names=()
while [ $# -gt 0 ]; do
  case "$1" in
    --time-budget) budget="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --only) names+=("$2"); shift 2 ;;
    *) echo "unknown option $1" >&2; exit 1 ;;
  esac
done
"$root/scripts/build.sh" >/dev/null
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get install -y python3-torch >/dev/null
fi
mg="${BUILD_DIR:-$root/build}/mugraph"
out="${BUILD_DIR:-$root/build}/bench_cpu"
mkdir -p "$out"
# shellcheck source=bench/search_options.sh
source "$root/bench/search_options.sh"
echo "# mugraph CPU benchmark, $(date -u +%Y-%m-%d), $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
echo "# command: bench/cpu/run.sh --time-budget $budget --runs $runs${names:+ (only ${names[*]})}"
printf "%-18s %12s %12s %12s %10s %10s %8s  %s\n" benchmark program-us best-us torch-us \
  vs-program vs-torch spearman chosen
[ ${#names[@]} -gt 0 ] || names=(rms_norm_matmul gated_mlp gqa lora ntrans qknorm_attention)
for name in "${names[@]}"; do
  [ -n "${opts[$name]+set}" ] || { echo "unknown benchmark $name" >&2; exit 1; }
  # shellcheck disable=SC2086
  # --accept-unproved: attention (no bound yet) and QKNorm (sqrt identities) certify PASSED or
  # UNPROVED; the benchmark measures their fused kernels anyway, and the table shows the verdict.
  "$mg" optimize "$root/examples/$name.mu" --target cpu ${opts[$name]} --time-budget "$budget" \
    --runs "$runs" --quiet --accept-unproved --out "$out/$name" >"$out/$name.log" 2>&1 || {
    echo "$name: mugraph optimize failed, see $out/$name.log"; continue; }
  /usr/bin/python3 "$root/bench/cpu/torch_ref.py" "$name" --runs "$runs" >"$out/$name.torch.json"
  /usr/bin/python3 - "$out/$name/report.json" "$out/$name.torch.json" "$name" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); t = json.load(open(sys.argv[2]))
prog = r["program"]["measured_s"]
best = prog
for v in r.get("variants") or []:
    if v["label"] == r["chosen"]:
        best = v["measured_s"]
us = lambda x: "n/a" if x is None else "%.1f us" % (x * 1e6)
verdict = r.get("certified") or "program"
print("%-18s %12.1f %12.1f %12.1f %9.2fx %9.2fx %8.2f  %s [%s] (torch %s, BLAS %s: f16 %s, f32 %s)" % (
    sys.argv[3], prog * 1e6, best * 1e6, t["best_s"] * 1e6, prog / best, t["best_s"] / best,
    r["spearman"], r["chosen"], verdict, t["torch"], t.get("blas", "?"), us(t["f16_s"]),
    us(t["f32_s"])))
PY
done
