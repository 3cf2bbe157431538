#!/usr/bin/env bash
# Installs the Debian packages rematbench needs; a no-op when all are there.
# Run as root (or with sudo available). Used by scripts/run.sh and
# scripts/test.sh, so a fresh machine needs nothing else.
set -euo pipefail

packages=(
  cmake g++ make pkg-config git
  libboost-graph-dev nlohmann-json3-dev libfmt-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev coinor-libcbc-dev
  libgecode-dev  # moccasin's interval model (solver=gecode|auto)
  libopenmpi-dev openmpi-bin
  python3 python3-matplotlib python3-numpy
  python3-dev python3-pybind11 pybind11-dev  # the Python module (python/)
  clang libclang-rt-dev  # scripts/fuzz.sh: libFuzzer and sanitizers
  libomp-dev  # OpenMP for clang (the TSan build of scripts/test.sh)
)
# Extra packages for a caller that needs more (scripts/export_torch.py sets
# REMAT_EXTRA_PACKAGES="python3-torch python3-torchvision").
read -r -a extra <<< "${REMAT_EXTRA_PACKAGES:-}"
packages+=("${extra[@]}")
# Under CI (CI=true, as CI services set it) the whole suite runs, including
# the PyTorch exporter and replayer tests, which fail without torch there.
if [[ "${CI:-}" == "true" ]]; then
  packages+=(python3-torch python3-torchvision)
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "setup.sh: installing ${missing[*]}" >&2
sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || {
    echo "setup.sh: need root to install: ${missing[*]}" >&2
    exit 1
  }
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
