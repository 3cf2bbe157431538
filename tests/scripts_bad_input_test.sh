#!/usr/bin/env bash
# The results-reading scripts on bad input: exit 2 and one line on stderr,
# never a traceback, no output file, and never exit 1 (which compare_curves.py and
# same_figures.py keep for a real regression or difference).
set -euo pipefail
remat=$1
source_dir=$2
source "$source_dir/scripts/env.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$remat" sweep --graphs chain:n=4 --algorithms noremat --budgets 2 \
  --out "$work/good.json" >/dev/null
printf '{"format": "rematbench-results", "runs": [' > "$work/truncated.json"
head -c 3000 /dev/urandom > "$work/binary.json"
printf '\x89PNG\r\n\x1a\n\xff\xfe' >> "$work/binary.json"
echo '[1, 2, 3]' > "$work/list.json"
echo '{"format": "rematbench-results", "runs": [{"graph": 1}], "graphs": []}' \
  > "$work/malformed.json"
mkfifo "$work/fifo"
failed=0
# Runs a script with a time limit; fails the test unless it exits 2 with one
# line on stderr and no traceback.
expect_refusal() {
  local limit=$1 script=$2
  shift 2
  local status=0 lines
  timeout "$limit" "$REMAT_PYTHON" "$source_dir/scripts/$script" "$@" \
    >/dev/null 2>"$work/err" || status=$?
  lines=$(wc -l < "$work/err")
  if [[ $status -ne 2 || $lines -ne 1 ]] || grep -q Traceback "$work/err"; then
    echo "FAIL: $script $*: exit $status, $lines lines:" >&2
    cat "$work/err" >&2
    failed=1
  fi
}
for script in compare_curves.py same_figures.py; do
  for bad in missing.json truncated.json binary.json list.json malformed.json \
             fifo .; do
    for order in first second; do
      if [[ $order == first ]]; then args=("$work/$bad" "$work/good.json")
      else args=("$work/good.json" "$work/$bad"); fi
      expect_refusal 20 "$script" "${args[@]}"
    done
  done
done
# The scripts that read one results file: the same bad inputs.
for script in plot_tradeoff.py method_strength.py replay_sweep.py report.py; do
  for bad in missing.json truncated.json binary.json list.json malformed.json \
             fifo .; do
    expect_refusal 60 "$script" "$work/$bad" --out "$work/out"
    if [[ -e $work/out ]]; then
      echo "FAIL: $script $work/$bad: wrote $work/out" >&2
      rm -rf "$work/out"
      failed=1
    fi
  done
done
# report.py's --baseline: the same bad inputs.
for bad in missing.json truncated.json binary.json list.json malformed.json \
           fifo .; do
  expect_refusal 60 report.py "$work/good.json" --baseline "$work/$bad" \
    -o "$work/out"
  if [[ -e $work/out ]]; then
    echo "FAIL: report.py --baseline $work/$bad: wrote $work/out" >&2
    rm -rf "$work/out"
    failed=1
  fi
done
# reproduce.py's --out naming a regular file: refused before any solve.
echo keep > "$work/regular"
expect_refusal 20 reproduce.py kusumoto2019 --quick --remat "$remat" \
  --out "$work/regular"
grep -qx keep "$work/regular" || { echo "FAIL: reproduce.py wrote over" \
  "$work/regular" >&2; failed=1; }
# Good input still compares equal (exit 0).
"$REMAT_PYTHON" "$source_dir/scripts/compare_curves.py" "$work/good.json" \
  "$work/good.json" --check all >/dev/null
"$REMAT_PYTHON" "$source_dir/scripts/same_figures.py" "$work/good.json" \
  "$work/good.json" >/dev/null
exit $failed
