#!/usr/bin/env bash
# gpu_run_test.sh: bench/gpu/run.sh fails the run when the GPU tests fail, or skip on a GPU
# machine (issue 20: `|| true` hid them), and goes on to the benchmarks when they pass. Runs the
# script in a scratch checkout with stub binaries: .gpu/gpu_test prints gtest lines and exits
# with $STUB_RC; nvidia-smi is a stub on PATH; the benchmark step is cut short by a stub
# search_options.sh that exits 42 (so "went on" is visible without a GPU).
set -uo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bench/gpu" "$tmp/.gpu/lib" "$tmp/bin"
cp "$src/bench/gpu/run.sh" "$tmp/bench/gpu/run.sh"
echo 'exit 42' > "$tmp/bench/search_options.sh"
printf '#!/bin/sh\necho "stub GPU, 1.0, 80 GiB"\n' > "$tmp/bin/nvidia-smi"
printf '#!/bin/sh\nexit 0\n' > "$tmp/.gpu/mugraph"
echo "$tmp" > "$tmp/.gpu/built_at"
chmod +x "$tmp/bin/nvidia-smi" "$tmp/.gpu/mugraph"
fail=0
# case NAME GTEST_LINE RC WANT_RC WANT_PATTERN
case_() {
  printf '#!/bin/sh\necho "%s"\nexit %s\n' "$2" "$3" > "$tmp/.gpu/gpu_test"
  chmod +x "$tmp/.gpu/gpu_test"
  out=$(PATH="$tmp/bin:$PATH" OUT="$tmp/out" bash "$tmp/bench/gpu/run.sh" 2>&1)
  rc=$?
  if [ "$rc" != "$4" ] || ! grep -Eq -- "$5" <<<"$out"; then
    echo "FAIL $1: exit $rc (want $4), output:"; echo "$out"; fail=1
  else
    echo "ok   $1: exit $rc, $(grep -E -- "$5" <<<"$out" | head -1)"
  fi
}
case_ failing-test "[  FAILED  ] GpuExecution.EveryExampleMatchesTheInterpreter" 1 1 \
  "GPU tests FAILED \(exit 1\)"
case_ skipped-test "[  SKIPPED ] GpuExecution.EveryExampleMatchesTheInterpreter" 0 1 \
  "GPU tests SKIPPED on a GPU machine"
case_ passing-tests "[  PASSED  ] 4 tests." 0 42 "PASSED"
exit $fail
