#!/usr/bin/env bash
# Set-up, build, the package installed into the project's Python
# environment, and the whole test suite (slow-labelled suites included,
# Python tests under pytest),
# then the robustness runs (README.md, "Robustness"): the core, algorithm
# and harness suites again under ASan+UBSan (build-asan/;
# REMAT_TEST_SANITIZERS=all: every suite but the slow ones, 0: none), the
# threaded sweep under TSan (build-tsan/; REMAT_TEST_TSAN=0: skipped), and
# the fuzz targets over their committed corpus and briefly fuzzing
# (build-fuzz/). REMAT_TEST_QUICK=1 stops after the Release suite.
set -euo pipefail
cd "$(dirname "$0")/.."
# Set-up makes the Python environment with torch (scripts/env.sh), so the
# PyTorch tests run wherever the suite runs; the Python tests import the
# package installed into it from build/.
scripts/setup.sh
scripts/build.sh
scripts/install.sh
(cd build && ctest --output-on-failure -j"$(nproc)" --timeout 1200)
[[ "${REMAT_TEST_QUICK:-}" == 1 ]] && exit 0

seconds() { echo $(( $(date +%s) - $1 )); }
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

# ASan+UBSan, by default: the core, algorithm and harness suites (the
# simulator, every registered algorithm through the conformance suite, the
# sweep and the command line end to end), which fit CI's time limit (README,
# "Robustness": 11 min to build, 1.5 min to run on 2 cores).
# REMAT_TEST_SANITIZERS=all runs the whole suite but the slow label there;
# REMAT_TEST_SANITIZERS=0 skips the stage.
sanitizers=${REMAT_TEST_SANITIZERS:-1}
if [[ "$sanitizers" != 0 ]]; then
  start=$(date +%s)
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Release \
    -DREMAT_SANITIZE=address,undefined "${launcher[@]}" >/dev/null
  export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1
  export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
  if [[ "$sanitizers" == all ]]; then
    cmake --build build-asan -j"$(nproc)"
    # The Python tests import the package installed into .venv, the
    # Release build's, so they are not run again here.
    (cd build-asan &&
      ctest --output-on-failure -j"$(nproc)" --timeout 1200 -LE slow \
        -E '^python[.]')
  else
    suites=(core_test algorithms_test harness_test)
    cmake --build build-asan -j"$(nproc)" --target remat "${suites[@]}"
    for suite in "${suites[@]}"; do
      "build-asan/tests/$suite" --gtest_brief=1
    done
  fi
  echo "test.sh: ASan+UBSan build and suites: $(seconds "$start") s"
fi

# TSan, by default (REMAT_TEST_TSAN=0 skips it; about 2 minutes on 2
# idle cores): the threaded sweep (its OpenMP tasks, journal writer and
# progress ticker) built with clang and LLVM's libomp; libomp itself is not
# instrumented, so its own memory is left out
# (ignore_noninstrumented_modules).
if [[ "${REMAT_TEST_TSAN:-1}" != 0 ]]; then
  start=$(date +%s)
  cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER=clang++ -DREMAT_SANITIZE=thread "${launcher[@]}" \
    >/dev/null
  cmake --build build-tsan -j"$(nproc)" --target remat harness_test
  export TSAN_OPTIONS="halt_on_error=1 ignore_noninstrumented_modules=1"
  build-tsan/tests/harness_test --gtest_brief=1 \
    --gtest_filter='Sweep*:Preparation*:*Journal*'
  graphs=chain:n=16,resnet:depth=18,batch=2,image=32
  graphs+=,tests/fixtures/skip_connections.json
  graphs+=,transformer:layers=2,d_model=32,heads=2,seq=16,batch=2
  build-tsan/remat sweep --threads 4 --budgets 4 --timeout 60 \
    --graphs "$graphs" \
    --algorithms noremat,chen_greedy,chen_sqrtn,revolve,rotor,twremat,dtr,dp_approx,vdnn,swap_remat \
    -o build-tsan/sweep.json >/dev/null
  unset TSAN_OPTIONS
  echo "test.sh: TSan build and threaded sweep: $(seconds "$start") s"
fi

# Fuzzing: the committed corpus as tests, then each target for 7 s.
start=$(date +%s)
scripts/fuzz.sh 7
(cd build-fuzz && ctest --output-on-failure -j"$(nproc)" -L fuzz)
echo "test.sh: fuzz build, corpus and 8 x 7 s fuzzing: $(seconds "$start") s"
