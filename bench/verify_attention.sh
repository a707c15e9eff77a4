#!/usr/bin/env bash
# Certifies softmax attention at several shapes with the group-ring test (issue 27, item 1):
# O = softmax(Q K / 8) V (no max subtraction, the Lax form) against its FlashDecoding-style
# split-KV form in two kernels (the shape of examples/gqa.split_kv.mu), generated per shape.
# Prints one row per shape: verdict, tests, per-test bound, achieved delta, seconds, peak MiB.
#   bench/verify_attention.sh [MUGRAPH]      (default build/mugraph)
#   ONLY=K: run only the K-th shape (1-based); KEEP=DIR: write the programs to DIR and keep them.
# Results: bench/results/verify.md.
set -euo pipefail
mg=${1:-build/mugraph}
if [ -n "${KEEP:-}" ]; then
  dir=$KEEP
  mkdir -p "$dir"
else
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
fi
n=0

# H heads, M query rows, Dh head dim, N keys; S splits of the keys (grid y), F loop iterations
# per split, Z query blocks in kernel 1 (grid z), Z2 in kernel 2.
write() {
  local H=$1 M=$2 Dh=$3 N=$4 S=$5 F=$6 Z=$7 Z2=$8
  local T=$((N / (S * F)))
  local in="input Q : f16[$H, $M, $Dh]
input K : f16[$H, $Dh, $N]
input V : f16[$H, $N, $Dh]"
  cat >"$dir/ref.mu" <<EOF
$in
QK = matmul(Q, K)
S = scale(QK, factor=1/8)
E = exp(S)
D = sum(E, dim=2, group=$N)
P = div(E, D)
O = matmul(P, V)
output O
EOF
  cat >"$dir/cand.mu" <<EOF
$in
NP, DP = graph_defined(Q, K, V, grid=[$H, $S, $Z], forloop=$F) {
  q = input_iterator(Q, imap={x:0, z:1}, fmap=phi)
  k = input_iterator(K, imap={x:0, y:2}, fmap=2)
  v = input_iterator(V, imap={x:0, y:1}, fmap=1)
  qk = matmul(q, k)
  s = scale(qk, factor=1/8)
  e = exp(s)
  d = sum(e, dim=2, group=$T)
  n = matmul(e, v)
  nacc = accumulator(n, fmap=phi)
  dacc = accumulator(d, fmap=phi)
  output_saver(nacc, omap={x:0, y:2, z:1})
  output_saver(dacc, omap={x:0, y:2, z:1})
}
O = graph_defined(NP, DP, grid=[$H, $Z2, 1], forloop=$S) {
  np = input_iterator(NP, imap={x:0, y:1}, fmap=2)
  dp = input_iterator(DP, imap={x:0, y:1}, fmap=2)
  n = accumulator(np, fmap=phi)
  d = accumulator(dp, fmap=phi)
  o = div(n, d)
  output_saver(o, omap={x:0, y:1})
}
output O
EOF
}

printf '%-28s %-10s %5s %10s %10s %8s %8s\n' "shape (H, M, Dh, N)" verdict tests per-test delta seconds MiB
run() {
  n=$((n + 1))
  if [ -n "${ONLY:-}" ] && [ "$ONLY" != "$n" ]; then return; fi
  write "$@"
  local out rc t0 t1
  t0=$(date +%s.%N)
  out=$(/usr/bin/time -f "MAXRSS %M" "$mg" verify "$dir/ref.mu" "$dir/cand.mu" 2>&1) && rc=0 || rc=$?
  t1=$(date +%s.%N)
  local verdict tests eps delta kb
  verdict=$(sed -n 's/^verdict: \([A-Z ]*\) (.*/\1/p' <<<"$out" | tr ' ' '_')
  tests=$(sed -n 's/^tests: \([0-9]*\) passed.*/\1/p' <<<"$out")
  eps=$(sed -n 's/.*(per test \([^,]*\),.*/\1/p' <<<"$out")
  delta=$(sed -n 's/^delta: \([^ ]*\) achieved.*/\1/p' <<<"$out")
  kb=$(sed -n 's/^MAXRSS \([0-9]*\)/\1/p' <<<"$out")
  printf '%-28s %-10s %5s %10s %10s %8.1f %8d\n' "($1, $2, $3, $4)" "${verdict:-?}(rc $rc)" \
    "${tests:-?}" "${eps:--}" "${delta:--}" "$(echo "$t1 - $t0" | bc)" $((${kb:-0} / 1024))
}
run 2 256 64 4096 8 8 2 4    # examples/gqa.mu
run 8 64 128 4096 8 8 2 4    # more heads, head dim 128
run 32 1 128 4096 8 8 1 1    # decode: one query per head, 32 heads
run 4 128 64 1024 4 4 2 2    # 1024 keys
run 1 16 256 512 4 2 1 1     # head dim 256, 512 keys
