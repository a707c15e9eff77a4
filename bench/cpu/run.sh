#!/usr/bin/env bash
# CPU benchmark (issues 7, 25): for the six paper benchmarks, mugraph's best kernel graph vs the
# unfused program, both run by our CPU backend, vs PyTorch 2.x from PyPI (the project's .venv,
# scripts/venv.sh) eager and torch.compile, each the best of f16, bf16 and f32 tensors, all
# measured in this one run on this machine; plus the achieved bandwidth of mugraph's best
# against this machine's measured copy bandwidth (bench/cpu/torch_ref.py --ceilings). Shapes are
# the examples' (paper shapes; none reduced). Prints a table; writes build/bench_cpu/<name>/.
#
# The searches run with no search flags (the staged defaults of `mugraph optimize`, as a user
# runs it); --mirage-space gives each benchmark the space flags of bench/search_options.sh
# instead (Mirage's space: one graph-defined kernel, fixed block-op budgets).
#
#   bench/cpu/run.sh [--time-budget S] [--runs N] [--only NAME]... [--mirage-space]
set -euo pipefail
# Fresh measurements every run: never answers from the result cache.
export MUGRAPH_NO_CACHE=1
root="$(cd "$(dirname "$0")/../.." && pwd)"
budget=60
runs=20
names=()
mirage=0
while [ $# -gt 0 ]; do
  case "$1" in
    --time-budget) budget="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --only) names+=("$2"); shift 2 ;;
    --mirage-space) mirage=1; shift ;;
    *) echo "unknown option $1" >&2; exit 1 ;;
  esac
done
"$root/scripts/build.sh" >/dev/null   # also makes .venv with PyPI's torch (scripts/venv.sh)
py="${VENV:-$root/.venv}/bin/python"
mg="${BUILD_DIR:-$root/build}/mugraph"
out="${BUILD_DIR:-$root/build}/bench_cpu"
mkdir -p "$out"
all=(rms_norm_matmul gated_mlp gqa lora ntrans qknorm_attention)
declare -A opts=()
for n in "${all[@]}"; do opts[$n]=""; done
if [ "$mirage" = 1 ]; then
  # shellcheck source=bench/search_options.sh
  source "$root/bench/search_options.sh"
fi
echo "# mugraph CPU benchmark, $(date -u +%Y-%m-%d), $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
flags=""
[ "$mirage" = 1 ] && flags=" --mirage-space"
echo "# command: bench/cpu/run.sh --time-budget $budget --runs $runs$flags${names:+ (only ${names[*]})}"
"$py" "$root/bench/cpu/torch_ref.py" --ceilings >"$out/ceilings.json"
"$py" -c "import json; c = json.load(open('$out/ceilings.json')); print('# ceilings: copy %.1f GB/s, f32 matmul %.1f GFLOP/s (torch %s, %d threads)' % (c['copy_bytes_per_s'] / 1e9, c['f32_flops_per_s'] / 1e9, c['torch'], c['threads']))"
# Arithmetic peaks of this CPU (bench/cpu/peak.cc, built for the host as the JIT builds kernels):
# mugraph computes in f32 (FMAs); PyTorch's bf16 paths use bf16 dot products.
g++ -O3 -march=native -fopenmp "$root/bench/cpu/peak.cc" -o "$out/peak"
"$out/peak" | awk '{v[$1] = $2} END {printf "# peaks (all cores): f32 FMA %s GFLOP/s, bf16 dot product %s GFLOP/s\n", v["f32_fma_gflops"], v["bf16_dot_gflops"]}'

printf "%-18s %10s %10s %10s %10s %9s %9s %9s %7s %6s  %s\n" benchmark program-us best-us \
  eager-us compile-us vs-prog vs-eager vs-best GB/s %copy chosen
[ ${#names[@]} -gt 0 ] || names=("${all[@]}")
for name in "${names[@]}"; do
  [ -n "${opts[$name]+set}" ] || { echo "unknown benchmark $name" >&2; exit 1; }
  # shellcheck disable=SC2086
  # --accept-unproved: attention (no bound yet) and QKNorm (sqrt identities) certify PASSED or
  # UNPROVED; the benchmark measures their fused kernels anyway, and the table shows the verdict.
  "$mg" optimize "$root/examples/$name.mu" --target cpu ${opts[$name]} --time-budget "$budget" \
    --runs "$runs" --quiet --accept-unproved --out "$out/$name" >"$out/$name.log" 2>&1 || {
    echo "$name: mugraph optimize failed, see $out/$name.log"; continue; }
  "$py" "$root/bench/cpu/torch_ref.py" "$name" --runs "$runs" >"$out/$name.torch.json"
  "$py" - "$out/$name/report.json" "$out/$name.torch.json" "$out/ceilings.json" "$name" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); t = json.load(open(sys.argv[2])); c = json.load(open(sys.argv[3]))
prog = r["program"]["measured_s"]
best = prog
for v in r.get("variants") or []:
    if v["label"] == r["chosen"]:
        best = v["measured_s"]
us = lambda x: "n/a" if x is None else "%.1f" % (x * 1e6)
if best <= 0:  # the budget ran out before anything was timed: say so, never divide by zero
    print("%-18s  not measured: the time budget ran out before timing (see its .log)" % sys.argv[4])
    sys.exit(0)
ratio = lambda x: "n/a" if x is None else "%.2fx" % (x / best)
gbs = r["chosen_bytes"] / best / 1e9
verdict = r.get("certified") or "program"
print("%-18s %10.1f %10.1f %10s %10s %8.2fx %9s %9s %7.1f %5.0f%%  %s [%s] (torch %s best: %s)" % (
    sys.argv[4], prog * 1e6, best * 1e6, us(t.get("eager_s")), us(t.get("compiled_s")),
    prog / best, ratio(t.get("eager_s")), ratio(t["best_s"]), gbs,
    100 * gbs * 1e9 / c["copy_bytes_per_s"], r["chosen"], verdict, t["torch"], t["best"]))
PY
done
