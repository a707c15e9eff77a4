#!/usr/bin/env bash
# Whole-model benchmark (issue 22, item 7): each test-data model (tests/data/hlo, JAX's HLO
# text at the reduced shapes make_hlo.py gives) through `mugraph model` with the four strategies
# on the CPU runtime oracle, against the imported program run unfused (the same binary, timed
# side by side with each strategy's best: the `confirmed` speedup) and against XLA's own CPU
# execution of the same function (JAX from PyPI, bench/model/xla_ref.py, timed in this run the
# way the oracle times a state; it includes JAX's per-call dispatch). Prints a markdown table;
# writes build/bench_model/<name>/ (report.txt, report.json, the states). Every model of
# tests/data/hlo/make_hlo.py's CASES unless --only names some (about 30 minutes on 2 cores).
#
#   bench/model/run.sh [--region-budget S] [--search-budget S] [--only NAME]...
set -euo pipefail
export MUGRAPH_NO_CACHE=1
root="$(cd "$(dirname "$0")/../.." && pwd)"
region=8
search=300
names=()
while [ $# -gt 0 ]; do
  case "$1" in
    --region-budget) region="$2"; shift 2 ;;
    --search-budget) search="$2"; shift 2 ;;
    --only) names+=("$2"); shift 2 ;;
    *) echo "unknown option $1" >&2; exit 1 ;;
  esac
done
"$root/scripts/build.sh" >/dev/null
py="${VENV:-$root/.venv}/bin/python"
"$py" -c "import jax" 2>/dev/null || "$py" -m pip install -q "jax[cpu]"
# Every model of the test data (make_hlo.py's CASES; the refused ones are not models).
[ ${#names[@]} -gt 0 ] || mapfile -t names < <("$py" -c '
import importlib.util, sys
spec = importlib.util.spec_from_file_location("m", sys.argv[1] + "/tests/data/hlo/make_hlo.py")
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
print("\n".join(m.CASES))' "$root")
mg="${BUILD_DIR:-$root/build}/mugraph"
out="${BUILD_DIR:-$root/build}/bench_model"
mkdir -p "$out"
for n in "${names[@]}"; do
  echo "== $n" >&2
  "$mg" model "$root/tests/data/hlo/$n.hlo" --region-budget "$region" --search-budget "$search" \
    --max-region-ops 6 --out "$out/$n" --quiet >"$out/$n.txt" 2>&1 ||
    { cat "$out/$n.txt"; echo "mugraph model $n failed" >&2; exit 1; }
done
"$py" "$root/bench/model/xla_ref.py" "${names[@]}" >"$out/xla.txt"
"$py" - "$out" "${names[@]}" <<'EOF'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
xla = dict(l.split() for l in (out / "xla.txt").read_text().splitlines())
us = lambda s: "%.1f" % (s * 1e6)
print("| model | ops | nodes | program us | " + " | ".join(
    "%s us (x, confirmed) | %s s" % (s, s) for s in ("pick-first", "greedy", "beam", "mcts")) +
    " | XLA CPU us | best vs XLA | region search s |")
print("|" + "---|" * 15)
for n in sys.argv[2:]:
    r = json.loads((out / n / "report.json").read_text())
    res = {x["strategy"]: x for x in r["results"]}
    prog = r["results"][0]["start_seconds"]
    fastest = max(r["results"], key=lambda x: x["confirmed_speedup"] if x["beats_program"] else 1)
    t_best = prog / (fastest["confirmed_speedup"] if fastest["beats_program"] else 1)
    cells = []
    for s in ("pick-first", "greedy", "beam", "mcts"):
        x = res[s]
        mark = "" if x["beats_program"] else " =" if x["regions_replaced"] else ""
        cells.append("%s (%.2fx%s) | %.1f" % (us(x["best_seconds"]), x["confirmed_speedup"], mark, x["seconds"]))
    print("| %s | %d | %d | %s | %s | %s | %.2fx | %.0f |" % (
        n, r["ops"], r["alternative_nodes"], us(prog), " | ".join(cells), us(float(xla[n])),
        float(xla[n]) / t_best, r["search_seconds"]))
EOF
