#!/usr/bin/env bash
# Installs the rematbench package (`pip install .`, pyproject.toml) into the
# project's Python environment (scripts/env.sh), reusing build/ so that
# after scripts/build.sh nothing is compiled again. The Python tests and
# the scripts import this installed package.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
# (--config-settings spelled out: Debian's venv has pip 23.0, before -C.)
CMAKE_GENERATOR="Unix Makefiles" "$REMAT_PYTHON" -m pip install -q \
  --no-build-isolation --no-deps --config-settings=build-dir=build \
  --config-settings=cmake.define.REMAT_BUILD_TESTS=ON \
  --config-settings=cmake.define.Python_EXECUTABLE="$REMAT_PYTHON" .
