#!/usr/bin/env bash
# Installs dependencies (scripts/deps.sh: Debian packages; scripts/venv.sh: .venv from PyPI), then configures and builds mugraph incrementally in
# build/ (override with BUILD_DIR). Extra arguments go to cmake's configure step.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
"$root/scripts/deps.sh"
"$root/scripts/venv.sh"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja "${launcher[@]}" \
    -DPython_EXECUTABLE="${VENV:-$root/.venv}/bin/python" "$@" >/dev/null
fi
cmake --build "$build" -j "$(nproc)"
