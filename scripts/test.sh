#!/usr/bin/env bash
# Set-up, build, and the whole test suite (slow-labelled suites included),
# then the robustness runs (README.md, "Robustness"): with
# REMAT_TEST_SANITIZERS=1 the suite again under ASan+UBSan (build-asan/,
# slow suites left out), and the fuzz targets over their committed corpus
# and briefly fuzzing (build-fuzz/). REMAT_TEST_QUICK=1 stops after the
# Release suite.
set -euo pipefail
cd "$(dirname "$0")/.."
# The PyTorch exporter and replayer tests need torch: the test command
# installs it, so they run wherever the suite runs.
REMAT_EXTRA_PACKAGES="python3-torch python3-torchvision ${REMAT_EXTRA_PACKAGES:-}" \
  scripts/setup.sh
scripts/build.sh
(cd build && ctest --output-on-failure -j"$(nproc)" --timeout 1200)
[[ "${REMAT_TEST_QUICK:-}" == 1 ]] && exit 0

seconds() { echo $(( $(date +%s) - $1 )); }
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

# ASan+UBSan (REMAT_TEST_SANITIZERS=1): every suite but the slow ones
# (exact_test and the PyTorch script tests take minutes under the
# sanitizers and exercise no reader). Opt-in until one full run is clean.
if [[ "${REMAT_TEST_SANITIZERS:-}" == 1 ]]; then
  start=$(date +%s)
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Release \
    -DREMAT_SANITIZE=address,undefined "${launcher[@]}" >/dev/null
  cmake --build build-asan -j"$(nproc)"
  (cd build-asan &&
    ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    ctest --output-on-failure -j"$(nproc)" --timeout 1200 -LE slow)
  echo "test.sh: ASan+UBSan build and suite: $(seconds "$start") s"
fi

# Fuzzing: the committed corpus as tests, then each target for 7 s.
start=$(date +%s)
scripts/fuzz.sh 7
(cd build-fuzz && ctest --output-on-failure -j"$(nproc)" -L fuzz)
echo "test.sh: fuzz build, corpus and 8 x 7 s fuzzing: $(seconds "$start") s"
