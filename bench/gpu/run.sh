#!/usr/bin/env bash
# GPU benchmark and GPU tests (issue 6), in one device call. Two steps:
#
#   bench/gpu/run.sh --pack          here (no GPU needed): build, then copy the stripped
#                                    mugraph and gpu_test binaries, libz3 and Abseil's
#                                    shared libraries into .gpu/
#                                    (git-ignored), for the device tool to carry
#   bash bench/gpu/run.sh [--time-budget S] [--runs N] [--target h100|h200]
#                         [--test-filter GTEST_FILTER] [--step-timeout S] [--only "NAME ..."]
#                         [--python] [--mcfuser]
#                                    on the GPU machine (device tool: carry [".gpu"]): runs the
#                                    GPU execution tests, then for the six paper benchmarks at
#                                    paper shapes `mugraph optimize --target T` (search, then
#                                    program and top variants checked and timed on the GPU as
#                                    CUDA graphs) and PyTorch eager / torch.compile (CUDA graphs,
#                                    bench/gpu/torch_ref.py); prints one table of ratios and the
#                                    achieved bandwidth against the measured copy bandwidth.
#                                    Writes everything under $OUT (or build/bench_gpu).
#                                    --python: then builds the Python package's extension for
#                                    that machine's python3 (from the carried static libraries)
#                                    and runs python/tests/test_cuda.py (CUDA tensors, torch's
#                                    stream, CUDA graphs, the torch.compile backend on the GPU).
#                                    --mcfuser: after the GPU tests, MCFuser's Tables II and III
#                                    (bench/mcfuser/chains.py --target T: `tune` on the GPU vs
#                                    PyTorch eager and torch.compile) instead of the six benchmarks;
#                                    the table also goes to $OUT/mcfuser.md.
#
# The binaries carry absolute paths to examples/ and tests/data/ of this checkout; on the GPU
# machine the script links the checkout to that same path.
set -euo pipefail
# Fresh measurements every run: never answers from the result cache.
export MUGRAPH_NO_CACHE=1
root="$(cd "$(dirname "$0")/../.." && pwd)"
if [ "${1:-}" = "--pack" ]; then
  "$root/scripts/build.sh" >/dev/null
  rm -rf "$root/.gpu" && mkdir -p "$root/.gpu/lib"
  strip --strip-debug -o "$root/.gpu/mugraph" "$root/build/mugraph"
  strip --strip-debug -o "$root/.gpu/gpu_test" "$root/build/tests/gpu_test"
  cp -L "$(ldd "$root/build/mugraph" | awk '/libz3/ {print $3}')" "$root/.gpu/lib/"
  # Abseil's shared libraries (the e-graph's table), which the GPU machine may lack.
  for l in $(ldd "$root/build/mugraph" | awk '/libabsl/ {print $3}'); do cp -L "$l" "$root/.gpu/lib/"; done
  # For --python: every library of the build (no debug info), linked as one group, so a new
  # layer cannot be left out (a fixed list once missed libmg_rewrite.a: the import failed).
  mkdir -p "$root/.gpu/static"
  for a in "$root"/build/src/*/libmg_*.a; do
    strip --strip-debug -o "$root/.gpu/static/$(basename "$a")" "$a"
  done
  cp -L /usr/lib/x86_64-linux-gnu/libsqlite3.so.0 "$root/.gpu/lib/"
  echo "$root" > "$root/.gpu/built_at"
  du -sh "$root/.gpu"
  exit 0
fi
budget=120
runs=50
target=h100
filter="*"
step=600
only="rms_norm_matmul gated_mlp gqa lora ntrans qknorm_attention"
python=0
mcfuser=0
while [ $# -gt 0 ]; do
  case "$1" in
    --time-budget) budget="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --target) target="$2"; shift 2 ;;
    --test-filter) filter="$2"; shift 2 ;;   # gtest filter for the GPU tests (all by default)
    --step-timeout) step="$2"; shift 2 ;;    # seconds for each step (tests, each optimize, torch)
    --only) only="$2"; shift 2 ;;            # the benchmarks to run (space-separated names)
    --python) python=1; shift ;;
    --mcfuser) mcfuser=1; shift ;;
    *) echo "unknown option $1" >&2; exit 1 ;;
  esac
done
[ -x "$root/.gpu/mugraph" ] || { echo "no .gpu/: run bench/gpu/run.sh --pack first and carry .gpu" >&2; exit 1; }
built_at="$(cat "$root/.gpu/built_at")"
if [ "$built_at" != "$root" ]; then mkdir -p "$(dirname "$built_at")"; ln -sfn "$root" "$built_at"; fi
export LD_LIBRARY_PATH="$root/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
out="${OUT:-$root/build/bench_gpu}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/device.txt"
echo "== GPU execution tests"
# A failing GPU test fails the run (a broken driver makes them fail, not skip: see
# tests/codegen/gpu_execution_test.cc), before any benchmark: timings of wrong kernels mean
# nothing.
set +e
timeout "$step" "$root/.gpu/gpu_test" --gtest_filter="$filter" >"$out/gpu_test.log" 2>&1
tests_rc=$?
set -e
grep -E "^\[ *(OK|FAILED|SKIPPED|PASSED) *\]" "$out/gpu_test.log" || true
if [ "$tests_rc" -ne 0 ]; then
  echo "GPU tests FAILED (exit $tests_rc), see $out/gpu_test.log; no benchmark run" >&2
  exit 1
fi
if grep -qE "^\[ *SKIPPED *\]" "$out/gpu_test.log"; then
  echo "GPU tests SKIPPED on a GPU machine, see $out/gpu_test.log; no benchmark run" >&2
  exit 1
fi
if [ "$mcfuser" = 1 ]; then
  echo "# MCFuser chains on $(cat "$out/device.txt"), $(date -u +%Y-%m-%d), command: bench/gpu/run.sh --mcfuser --target $target --runs $runs --time-budget $budget"
  # Tuned kernels and reports under /tmp: only the table comes back in $OUT.
  set -o pipefail
  python3 "$root/bench/mcfuser/chains.py" "$root/.gpu/mugraph" /tmp/bench_mcfuser --target "$target" \
    --runs "$runs" --tune-budget "$budget" --step-timeout "$step" | tee "$out/mcfuser.md"
  exit $?
fi
# shellcheck source=bench/search_options.sh
source "$root/bench/search_options.sh"
timeout "$step" python3 "$root/bench/gpu/torch_ref.py" rms_norm_matmul --runs 5 --ceilings > "$out/ceilings.json"
echo "# mugraph GPU benchmark, $(date -u +%Y-%m-%d), $(cat "$out/device.txt")"
echo "# command: bench/gpu/run.sh --time-budget $budget --runs $runs --target $target"
printf "%-18s %11s %11s %11s %11s %9s %9s %8s %8s  %s\n" benchmark program-us best-us \
  eager-us compile-us vs-prog vs-torch GB/s %copy chosen
for name in $only; do
  # shellcheck disable=SC2086
  timeout "$step" "$root/.gpu/mugraph" optimize "$root/examples/$name.mu" --target "$target" ${opts[$name]} \
    --time-budget "$budget" --runs "$runs" --quiet --out "$out/$name" >"$out/$name.log" 2>&1 || {
    echo "$name: mugraph optimize failed, see $name.log"; tail -5 "$out/$name.log"; continue; }
  timeout "$step" python3 "$root/bench/gpu/torch_ref.py" "$name" --runs "$runs" >"$out/$name.torch.json" || {
    echo "$name: torch_ref.py failed or timed out"; continue; }
  python3 - "$out/$name/report.json" "$out/$name.torch.json" "$out/ceilings.json" "$name" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); t = json.load(open(sys.argv[2])); c = json.load(open(sys.argv[3]))
if not r["measured"]:  # why, in optimize's own words (a cut budget, no driver, ...)
    import os
    txt = os.path.join(os.path.dirname(sys.argv[1]), "report.txt")
    why = [l[6:].strip() for l in open(txt) if l.startswith("note: ") and
           ("measur" in l and ("cut" in l or "nothing" in l))] if os.path.exists(txt) else []
    print("%-18s not measured: %s" % (sys.argv[4], why[0] if why else "see %s.log" % sys.argv[4]))
    sys.exit()
prog = r["program"]["measured_s"]
best = prog
for v in r.get("variants") or []:
    if v["label"] == r["chosen"]:
        best = v["measured_s"]
us = lambda x: "n/a" if x is None else "%.1f" % (x * 1e6)
gbs = r["chosen_bytes"] / best / 1e9
print("%-18s %11.1f %11.1f %11s %11s %8.2fx %8.2fx %8.0f %7.0f%%  %s" % (
    sys.argv[4], prog * 1e6, best * 1e6, us(t["eager_s"]), us(t["compiled_s"]), prog / best,
    t["best_s"] / best, gbs, 100 * gbs * 1e9 / c["copy_bytes_per_s"], r["chosen"]))
PY
done
echo "# ceilings: copy $(python3 -c "import json;c=json.load(open('$out/ceilings.json'));print('%.0f GB/s, f16 matmul %.0f TFLOP/s' % (c['copy_bytes_per_s']/1e9, c['f16_flops_per_s']/1e12))")"
if [ "$python" = 1 ]; then
  echo "== Python package on CUDA tensors (python/tests/test_cuda.py)"
  py="$(mktemp -d)"
  mkdir -p "$py/mugraph"
  cp "$root"/python/mugraph/*.py "$py/mugraph/"
  ext="$(python3 -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")"
  s="$root/.gpu/static"
  timeout "$step" g++ -std=c++20 -O1 -fPIC -shared -fvisibility=hidden -I"$root/src" \
    -isystem "$(python3 -c "import sysconfig; print(sysconfig.get_paths()['include'])")" \
    -isystem "$(python3 -c "import pybind11; print(pybind11.get_include())")" \
    "$root/python/src/module.cc" -o "$py/mugraph/_mugraph$ext" \
    -Wl,--start-group "$s"/libmg_*.a -Wl,--end-group \
    -L"$root/.gpu/lib" -l:libsqlite3.so.0 -l:libz3.so.4 \
    $(cd "$root/.gpu/lib" && for l in libabsl*.so*; do [ -e "$l" ] && printf -- '-l:%s ' "$l"; done) -ldl
  set +e
  PYTHONPATH="$py" timeout "$step" python3 -m pytest -q -s -rs -p no:cacheprovider \
    "$root/python/tests/test_cuda.py" 2>&1 | tee "$out/pytest_cuda.log"
  rc="${PIPESTATUS[0]}"
  set -e
  if [ "$rc" = 0 ] && tail -1 "$out/pytest_cuda.log" | grep -q "skipped"; then
    echo "Python CUDA tests SKIPPED on a GPU machine" >&2
    rc=1
  fi
  exit "$rc"
fi
