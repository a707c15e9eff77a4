#!/usr/bin/env bash
# result_cache_test.sh MUGRAPH DATA_DIR WORK_DIR: the result cache of `mugraph optimize`
# (issue 21 item 5), through the CLI, in a fresh MUGRAPH_CACHE_DIR.
#   1. the second optimize of a program is served from the cache: no search, the same best.mu,
#      <= 100 ms inside the command, and far less wall time than the first;
#   2. --no-cache, another target, other search options or other timing options miss;
#   3. two processes optimizing at once both succeed, one entry results;
#   4. a corrupt file warns and searches (exit 0), never crashes;
#   5. cache ls / show / rm / clear, and their errors.
set -uo pipefail
mg=$1 data=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
export MUGRAPH_CACHE_DIR="$work/cache"
unset MUGRAPH_NO_CACHE
fail() { echo "FAIL: $*"; exit 1; }
# run OUT WHAT CMD...: runs CMD with its output in OUT; on a non-zero exit, prints the exit code
# and the output (a failure in CI must say why) and fails.
run() {
  local out=$1 what=$2 rc
  shift 2
  "$@" >"$out" 2>&1
  rc=$?
  [ "$rc" -eq 0 ] || { cat "$out"; fail "$what (exit $rc)"; }
}
prog="$data/search/lora.mu"
flags=(--max-kernel-ops 2 --max-graph-defined 0 --top 3 --runs 2 --quiet)
ms() { echo $(( $(date +%s%N) / 1000000 )); }

# 1. First run searches and stores; the second is a hit.
t0=$(ms)
run "$work/o1.txt" "first optimize" "$mg" optimize "$prog" "${flags[@]}" --out "$work/o1"
t1=$(ms)
run "$work/o2.txt" "second optimize" "$mg" optimize "$prog" "${flags[@]}" --out "$work/o2"
t2=$(ms)
first=$((t1 - t0)) second=$((t2 - t1))
echo "first optimize $first ms, second $second ms"
grep -q "from the result cache" "$work/o1.txt" && fail "the first run claims a cache hit"
grep -q "^search: " "$work/o1.txt" || { cat "$work/o1.txt"; fail "the first run did not search"; }
grep -q "from the result cache in [0-9]* ms" "$work/o2.txt" || { cat "$work/o2.txt"; fail "no hit on the second run"; }
inside=$(sed -n 's/.*from the result cache in \([0-9]*\) ms.*/\1/p' "$work/o2.txt")
[ "$inside" -le 100 ] || fail "the hit took $inside ms inside the command (> 100)"
[ $((second * 3)) -lt "$first" ] || fail "the hit ($second ms) is not much faster than the search ($first ms)"
[ -d "$work/o2/search" ] && fail "a hit wrote search/ although nothing was searched"
for f in best.mu best.json best_cpu.cc report.txt report.json; do
  cmp -s "$work/o1/$f" "$work/o2/$f" || fail "the hit's $f differs from the first run's"
done

# 2. Misses: --no-cache, MUGRAPH_NO_CACHE, another target, other options.
run "$work/n.txt" "--no-cache optimize" "$mg" optimize "$prog" "${flags[@]}" --no-cache
grep -q "from the result cache" "$work/n.txt" && fail "--no-cache was served from the cache"
MUGRAPH_NO_CACHE=1 run "$work/n2.txt" "MUGRAPH_NO_CACHE optimize" "$mg" optimize "$prog" "${flags[@]}"
grep -q "from the result cache" "$work/n2.txt" && fail "MUGRAPH_NO_CACHE=1 was served from the cache"
run "$work/n3.txt" "optimize with other options" "$mg" optimize "$prog" --max-kernel-ops 1 --max-graph-defined 0 --top 3 --runs 2 --quiet
grep -q "from the result cache" "$work/n3.txt" && fail "other search options were served from the cache"
run "$work/n4.txt" "optimize --target h100" "$mg" optimize "$prog" "${flags[@]}" --target h100
grep -q "from the result cache" "$work/n4.txt" && fail "another target was served from the cache"
run "$work/n5.txt" "optimize --runs 3" "$mg" optimize "$prog" --max-kernel-ops 2 --max-graph-defined 0 --top 3 --runs 3 --quiet
grep -q "from the result cache" "$work/n5.txt" && fail "other timing options (--runs) were served from the cache"
"$mg" cache ls >"$work/ls.txt" 2>&1 || fail "cache ls"
cat "$work/ls.txt"
grep -q ": 4 entries" "$work/ls.txt" || fail "expected 4 entries (cpu, cpu with other search options, with other --runs, h100)"

# 3. Two processes at once on a fresh cache: both succeed, one entry.
export MUGRAPH_CACHE_DIR="$work/cache2"
"$mg" optimize "$prog" "${flags[@]}" >"$work/p1.txt" 2>&1 &
a=$!
"$mg" optimize "$prog" "${flags[@]}" >"$work/p2.txt" 2>&1 &
b=$!
wait $a || { cat "$work/p1.txt"; fail "concurrent optimize 1"; }
wait $b || { cat "$work/p2.txt"; fail "concurrent optimize 2"; }
grep -qi "warning" "$work/p1.txt" "$work/p2.txt" && { cat "$work/p1.txt" "$work/p2.txt"; fail "a concurrent run warned"; }
"$mg" cache ls | grep -q ": 1 entry" || fail "two concurrent runs of one program should leave 1 entry"

# 4. A corrupt file: a warning naming it, a search, exit 0; `cache ls` is a clear error.
export MUGRAPH_CACHE_DIR="$work/cache3"
mkdir -p "$MUGRAPH_CACHE_DIR"
head -c 4096 /dev/urandom >"$MUGRAPH_CACHE_DIR/results.sqlite"
run "$work/c.txt" "optimize over a corrupt cache" "$mg" optimize "$prog" "${flags[@]}"
grep -q "warning: result cache '.*results.sqlite'.*searching without the cache" "$work/c.txt" || { cat "$work/c.txt"; fail "no warning for a corrupt cache"; }
grep -q "^chosen: " "$work/c.txt" || fail "no result over a corrupt cache"
"$mg" cache ls >"$work/cls.txt" 2>&1 && fail "cache ls on a corrupt file exited 0"
grep -q "^error: result cache" "$work/cls.txt" || { cat "$work/cls.txt"; fail "cache ls: no clear error"; }

# 5. show / rm / clear.
export MUGRAPH_CACHE_DIR="$work/cache"
key=$("$mg" cache ls | awk 'NR > 2 {print $1; exit}')
[ -n "$key" ] || fail "no key in cache ls"
"$mg" cache show "${key:0:6}" >"$work/show.txt" 2>&1 || fail "cache show"
grep -q "^== report.txt" "$work/show.txt" && grep -q "^== best.mu" "$work/show.txt" || fail "cache show lacks the report or best.mu"
"$mg" cache show ffffffffffff >"$work/e.txt" 2>&1 && fail "cache show of an unknown key exited 0"
grep -q "no entry with key" "$work/e.txt" || fail "cache show: no clear error"
"$mg" cache rm ab >"$work/e2.txt" 2>&1 && fail "cache rm with a 2-digit key exited 0"
grep -q "at least 4 hex digits" "$work/e2.txt" || fail "cache rm: no clear error for a short key"
"$mg" cache rm "$key" | grep -q "removed 1 entry" || fail "cache rm"
"$mg" cache ls | grep -q ": 3 entries" || fail "cache rm left the entry"
"$mg" cache clear >/dev/null || fail "cache clear"
"$mg" cache ls | grep -q ": 0 entries" || fail "cache clear left entries"
"$mg" cache show >/dev/null 2>&1 && fail "cache show without a key exited 0"
echo "result cache: ok"
