#!/usr/bin/env bash
# Configures and builds rematbench (Release) into build/, the module for
# the project's Python (scripts/env.sh). Every build records the source
# tree's commit for results files (harness/git_commit.cmake), configured
# again or not.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
cmake -S . -B build -G "Unix Makefiles" -DCMAKE_BUILD_TYPE=Release \
  -DPython_EXECUTABLE="$REMAT_PYTHON" -DREMAT_BUILD_TESTS=ON >/dev/null
cmake --build build -j"$(nproc)"
