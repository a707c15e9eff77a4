#!/usr/bin/env bash
# Installs the Debian packages mugraph needs to build and test, if any is missing.
# Idempotent and quiet when everything is already there.
set -euo pipefail
# Open MPI (libopenmpi-dev, openmpi-bin): the distributed search (mpirun -np N mugraph search);
# mugraph itself runs without it (it loads MPI only when launched as several ranks).
# Abseil (libabsl-dev): the e-graph's hash-consing table (absl::flat_hash_map).
pkgs=(cmake ninja-build g++ python3 libgtest-dev nlohmann-json3-dev libcli11-dev libz3-dev
      libabsl-dev libopenmpi-dev openmpi-bin libsqlite3-dev pybind11-dev python3-dev python3-venv)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# The CUDA toolkit is not a Debian package: it is at /usr/local/cuda on this project's machines
# (CI included). Without it the CUDA compile tests skip, each saying why.
if [ ! -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null; then
  echo "note: nvcc not found (CUDA toolkit): the CUDA compile tests will skip" >&2
fi
