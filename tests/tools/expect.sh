#!/usr/bin/env bash
# expect.sh RC PATTERN CMD...: runs CMD, passes iff it exits with RC and its combined output
# matches the extended regex PATTERN (empty: any output).
rc_want=$1 pattern=$2
shift 2
out=$("$@" 2>&1)
rc=$?
echo "$out"
if [ "$rc" != "$rc_want" ]; then echo "expected exit code $rc_want, got $rc"; exit 1; fi
if [ -n "$pattern" ] && ! grep -Eq -- "$pattern" <<<"$out"; then
  echo "output does not match: $pattern"; exit 1
fi
