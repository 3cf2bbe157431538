#!/usr/bin/env bash
# Configures and builds rematbench (Release) into build/. Every build
# records the source tree's commit for results files
# (harness/git_commit.cmake), configured again or not.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
