#!/usr/bin/env bash
# The CPU matmul alone (bench/cpu/matmul.cc) on the shapes runtime/cpu/mugraph_cpu.h quotes, beside
# this CPU's f32 FMA peak (bench/cpu/peak.cc), in one run. Results: bench/results/cpu.md.
#
#   bench/cpu/matmul.sh [--runs N] [--b-offset BYTES] [M N K ...]
# --b-offset: B starts that many bytes past a 64-byte boundary (as a NumPy array's may).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${BUILD_DIR:-$root/build}/bench_cpu"
mkdir -p "$out"
runs=(--runs 30)
offset=()
while [ $# -ge 2 ]; do
  case "$1" in
    --runs) runs=(--runs "$2"); shift 2 ;;
    --b-offset) offset=(--b-offset "$2"); shift 2 ;;
    *) break ;;
  esac
done
runs+=("${offset[@]}")
[ $# -gt 0 ] || set -- 16 4096 4096  8 4096 4096  1 4096 4096  16 4096 256  16 4096 272  16 256 4096  32 4096 1024  64 4096 1024  256 1024 1024
g++ -std=c++20 -O3 -march=native -fopenmp -I"$root/src/runtime/cpu" "$root/bench/cpu/matmul.cc" -o "$out/matmul"
g++ -O3 -march=native -fopenmp "$root/bench/cpu/peak.cc" -o "$out/peak"
echo "# mugraph CPU matmul (f16 in, f16 out, f32 compute), $(date -u +%Y-%m-%d), $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
echo "# command: bench/cpu/matmul.sh ${runs[*]} $*"
"$out/peak" | sed 's/^/# peak: /'
"$out/matmul" "${runs[@]}" "$@"
