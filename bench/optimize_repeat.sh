#!/usr/bin/env bash
# Issue 27, item 5: do `mugraph optimize`'s timings repeat? Runs the same optimize N times on a
# quiet machine and N times next to a busy neighbour (`yes > /dev/null` pinned to core 0), and
# prints per run the chosen variant, its reported speedup over the program (median of the
# per-round time ratios), the program's median and spread and the rounds timed; then whether
# every pick agrees and every speedup is within +-15% of the median speedup.
#
#   bench/optimize_repeat.sh [--runs 5] [--example lora|rms_norm_matmul]
#
# lora (default): a search that finishes (no time limit), so every run measures the same
# variants. rms_norm_matmul: the README's main command (--time-budget 20): the search is cut by
# time, so the variants themselves may differ between runs.
# Hold the build lock so that builds and tests of others do not run alongside:
#   flock /tmp/mugraph-build.lock bash bench/optimize_repeat.sh
set -euo pipefail
# Fresh measurements every run: never answers from the result cache.
export MUGRAPH_NO_CACHE=1
root="$(cd "$(dirname "$0")/.." && pwd)"
mg="${BUILD_DIR:-$root/build}/mugraph"
runs=5
example=lora
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --example) example="$2"; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 1 ;;
  esac
done
case "$example" in
  lora) flags=(--max-kernel-ops 2 --max-graph-defined 0) ;;
  rms_norm_matmul) flags=(--max-kernel-ops 1 --max-block-ops 9 --time-budget 20) ;;
  *) echo "unknown example $example" >&2; exit 1 ;;
esac
[ -x "$mg" ] || { echo "no $mg: build first (cmake --build build --target mugraph)" >&2; exit 1; }
out="$(mktemp -d /tmp/mugraph-optimize-repeat.XXXXXX)"
busy_pid=""
stop_busy() { if [ -n "$busy_pid" ]; then kill "$busy_pid" 2>/dev/null || true; wait "$busy_pid" 2>/dev/null || true; busy_pid=""; fi; }
trap stop_busy EXIT
echo "# mugraph optimize repeatability, $(date), $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg); other processes over 20% CPU: $(ps -eo pcpu=,comm= | awk '$1 > 20 {printf "%s (%s%%) ", $2, $1}')"
echo "# command: mugraph optimize examples/$example.mu --target cpu ${flags[*]} --quiet, $runs runs quiet + $runs runs busy"
printf "%-6s %3s %-8s %9s %14s %15s %7s %7s %7s\n" mode run chosen speedup program-us program-spread rounds wall-s load1
for mode in quiet busy; do
  for i in $(seq 1 "$runs"); do
    if [ "$mode" = busy ]; then
      taskset -c 0 yes >/dev/null &
      busy_pid=$!
    fi
    t0=$(date +%s.%N)
    "$mg" optimize "$root/examples/$example.mu" --target cpu "${flags[@]}" --quiet \
      --out "$out/$mode$i" >"$out/$mode$i.log" 2>&1 || { echo "run failed: $out/$mode$i.log"; exit 1; }
    t1=$(date +%s.%N)
    stop_busy
    load="$(cut -d' ' -f1 /proc/loadavg)"  # 1-minute load average after the run (2 = both cores busy)
    python3 - "$out/$mode$i/report.json" "$mode" "$i" "$(echo "$t1 - $t0" | bc)" "$load" <<'PY' | tee -a "$out/table.txt"
import json, sys
r = json.load(open(sys.argv[1]))
p = r["program"]
print("%-6s %3s %-8s %8.2fx %14.1f %14.1f%% %7d %7.1f %7s" % (
    sys.argv[2], sys.argv[3], r["chosen"], r["chosen_speedup"], p["measured_s"] * 1e6,
    p["spread"] * 100, r["rounds"], float(sys.argv[4]), sys.argv[5]))
PY
  done
done
python3 - "$out/table.txt" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.startswith(("quiet", "busy"))]
picks = {r[2] for r in rows}
speed = [float(r[3].rstrip("x")) for r in rows]
med = statistics.median(speed)
worst = max(abs(s / med - 1) for s in speed)
agree = len(picks) == 1
within = worst <= 0.15
print("picks: %s -> %s" % (", ".join(sorted(picks)), "all agree" if agree else "DISAGREE"))
print("speedups: %.2fx..%.2fx, median %.2fx, worst %.1f%% from the median -> %s" % (
    min(speed), max(speed), med, worst * 100, "within +-15%" if within else "NOT within +-15%"))
print("criterion (same pick, speedups within +-15%%): %s" % ("MET" if agree and within else "NOT MET"))
PY
echo "# logs and reports: $out"
