#!/usr/bin/env bash
# Fuzzes every reader (tests/fuzz): builds the libFuzzer targets with clang,
# ASan and UBSan into build-fuzz/, runs each for SECONDS (default 60) from
# the committed seed corpus, and prints executions per second and coverage.
#   scripts/fuzz.sh [SECONDS] [TARGET...]
# New interesting inputs collect in build-fuzz/corpus/<target>/ (not the
# repository); a crash, hang (> 5 s) or sanitizer report leaves its input in
# build-fuzz/artifacts/ and makes the script exit 1. Copy such an input to
# tests/fuzz/corpus/<target>/ once fixed: the corpus runs as tests.
# The Python side's results reader has its own: scripts/fuzz_results_reader.py.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  targets=(graph_json kusumoto checkmate remat2 schedule corpus generator budget
    json_shapes)
fi
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B build-fuzz -DREMAT_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++ "${launcher[@]}" >/dev/null
cmake --build build-fuzz -j"$(nproc)" \
  --target "${targets[@]/#/fuzz_}" >/dev/null
mkdir -p build-fuzz/artifacts
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
status=0
printf '%-11s %8s %10s %8s %6s %6s %7s\n' target seconds runs exec/s cov ft corpus
for t in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus/$t"
  log="build-fuzz/fuzz_$t.log"
  # -rss_limit_mb: the targets set a 64 MiB graph limit, so more is a leak.
  if ! "build-fuzz/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=5 \
      -rss_limit_mb=1024 -max_len=65536 -print_final_stats=1 \
      -artifact_prefix="build-fuzz/artifacts/$t-" \
      "build-fuzz/corpus/$t" "tests/fuzz/corpus/$t" >"$log" 2>&1; then
    echo "fuzz $t: FAILED, see $log and build-fuzz/artifacts/" >&2
    status=1
  fi
  stat() { grep -o "stat::$1: *[0-9]*" "$log" | grep -o '[0-9]*$' | tail -1; }
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo 0)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo 0)
  printf '%-11s %8s %10s %8s %6s %6s %7s\n' "$t" "$seconds" \
    "$(stat number_of_executed_units)" "$(stat average_exec_per_sec)" \
    "$cov" "$ft" "$(ls "build-fuzz/corpus/$t" | wc -l)"
done
exit $status
