#!/usr/bin/env bash
# progress_test.sh MUGRAPH EXAMPLES: the search's progress line (issue 21 item 6). On a terminal
# (script(1) gives the command one) it is one line rewritten in place ("\r\033[K"), with the
# elapsed time, prefixes/s, tasks done, candidates and the best model time; --quiet hides it; when stderr is not a
# terminal nothing periodic is printed.
set -uo pipefail
mg=$1 ex=$2
fail() { echo "FAIL: $*"; exit 1; }
command -v script >/dev/null || { echo "script(1) not found (bsdutils): skipped"; exit 77; }
cmd="$mg search $ex/rms_norm_matmul.mu --max-kernel-ops 1 --max-block-ops 9 --threads 1"
# 8 s: the line appears once the search has run a second past building its oracle.
tty_out=$(script -qec "$cmd --time-budget 8" /dev/null 2>&1)
grep -q $'\r\033\\[K' <<<"$tty_out" || { echo "$tty_out" | tail -5; fail "no in-place progress line on a terminal"; }
grep -Eq 'search: [0-9.]+ s, ~[0-9]+ prefixes \([0-9]+/s\), tasks [0-9]+/[0-9]+, [0-9]+ candidates' <<<"$tty_out" \
  || fail "the progress line lacks elapsed, prefixes/s, tasks or candidates"
# Once a candidate is found: the cost model's best so far (a wide terminal: the line is cut to
# the terminal's width).
wide=$(script -qec "stty cols 200; $cmd --time-budget 6" /dev/null 2>&1)
grep -Eq ', [1-9][0-9]* candidates, best model [0-9.]+ us' <<<"$wide" \
  || { echo "$wide" | tr '\r' '\n' | tail -3; fail "no 'best model' once candidates were found"; }
quiet=$(script -qec "$cmd --time-budget 3 --quiet" /dev/null 2>&1)
grep -q 'prefixes (' <<<"$quiet" && fail "--quiet still shows the progress line"
piped=$($cmd --time-budget 3 2>&1 >/dev/null)
grep -q 'prefixes (' <<<"$piped" && fail "progress lines on a stderr that is not a terminal"
echo "progress line: ok"
