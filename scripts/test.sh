#!/usr/bin/env bash
# Builds (installing dependencies if needed) and runs every test with ctest (extra arguments go to
# ctest), then the sanitizer step, scripts/sanitize.sh (ASan + UBSan build in ${BUILD_DIR}-asan);
# SANITIZE=0 skips it. For a quick loop: ctest --test-dir build -LE slow.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/build.sh"
ctest --test-dir "${BUILD_DIR:-$root/build}" --output-on-failure -j "$(nproc)" "$@"
if [ "${SANITIZE:-1}" != 0 ]; then "$root/scripts/sanitize.sh"; fi
