#!/usr/bin/env bash
# Configures and builds rematbench (Release) into build/. Re-running the
# configure step every time keeps the commit recorded in results current.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
