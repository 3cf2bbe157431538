#!/usr/bin/env bash
# Everything rematbench needs on a fresh Debian machine, a no-op when all is
# there: the C++ side from Debian's archive (installed as root, or with
# sudo), then the project's Python environment (scripts/env.sh: .venv in
# the source tree, ignored by git) with the packages pinned in
# python/requirements.txt: torch, torchvision, numpy, matplotlib, pytest
# and the module's build tools. Used by scripts/run.sh and scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

packages=(
  cmake g++ make pkg-config git
  nlohmann-json3-dev libfmt-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev coinor-libcbc-dev
  libgecode-dev  # moccasin's interval model (solver=gecode|auto)
  libopenmpi-dev openmpi-bin
  python3 python3-venv python3-dev  # the base of .venv, and its headers
  clang libclang-rt-dev  # scripts/fuzz.sh: libFuzzer and sanitizers
  libomp-dev  # OpenMP for clang (the TSan build of scripts/test.sh)
  chromium  # headless, for the report test (scripts/report_check.py)
)
missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
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
fi

# The Python environment, on Debian's Python 3.11 (the PyTorch wheels on
# the project's machines are built for it). A copy of the requirements it
# was made from marks it done; changed requirements install again.
requirements=python/requirements.txt
stamp=$REMAT_VENV/rematbench-requirements.txt
if ! cmp -s "$requirements" "$stamp" 2>/dev/null; then
  start=$(date +%s)
  [[ -x "$REMAT_PYTHON" ]] || /usr/bin/python3 -m venv "$REMAT_VENV"
  echo "setup.sh: installing $requirements into $REMAT_VENV" >&2
  "$REMAT_PYTHON" -m pip install -q -r "$requirements"
  cp "$requirements" "$stamp"
  echo "setup.sh: Python environment: $(( $(date +%s) - start )) s" >&2
fi
