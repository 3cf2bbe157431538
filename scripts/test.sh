#!/usr/bin/env bash
# Set-up, build, and the whole test suite (slow-labelled suites included).
set -euo pipefail
cd "$(dirname "$0")/.."
# The PyTorch exporter and replayer tests need torch: the test command
# installs it, so they run wherever the suite runs.
REMAT_EXTRA_PACKAGES="python3-torch python3-torchvision ${REMAT_EXTRA_PACKAGES:-}" \
  scripts/setup.sh
scripts/build.sh
cd build
ctest --output-on-failure -j"$(nproc)" --timeout 1200
