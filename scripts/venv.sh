#!/usr/bin/env bash
# Makes the project's virtual environment .venv (VENV overrides) if it is missing, and installs
# python/requirements.txt into it from PyPI whenever that file changed since the last install.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${VENV:-$root/.venv}"
req="$root/python/requirements.txt"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
stamp="$venv/.mugraph-requirements"
if ! cmp -s "$req" "$stamp" 2>/dev/null; then
  echo "installing python/requirements.txt into $venv (pip, PyPI)" >&2
  "$venv/bin/python" -m pip install -q --upgrade pip
  "$venv/bin/python" -m pip install -q -r "$req"
  cp "$req" "$stamp"
fi
