#!/usr/bin/env bash
# scripts/reproduce.py in quick mode: every paper's Markdown and results file
# are written, with the peer graphs when ../shared exists and with a visible
# skip note when it does not.
#   tests/reproduce_test.sh <remat binary> <source dir>
set -euo pipefail
remat=$1
src=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
source "$src/scripts/env.sh"
py=$REMAT_PYTHON

check() {  # check <out dir>
  for p in kusumoto2019 kumar2019 checkmate2020 chen2016 dtr2021 rotor2019 \
      offload2016; do
    test -s "$1/$p.md" || { echo "FAIL: $p.md missing"; exit 1; }
    test -s "$1/$p/solves.json" || { echo "FAIL: $p/solves.json missing"; exit 1; }
    grep -q '^| ' "$1/$p.md" || grep -q 'Skipped' "$1/$p.md" ||
      { echo "FAIL: $p.md has no table"; exit 1; }
    grep -q 'Quick mode' "$1/$p.md" || { echo "FAIL: $p.md lacks the quick-mode note"; exit 1; }
  done
  grep -q '| `noremat` |' "$1/checkmate2020.md" || { echo "FAIL: checkmate table"; exit 1; }
  grep -q 'twremat\|TwRemat' "$1/kumar2019.md" || { echo "FAIL: kumar table"; exit 1; }
  grep -q '^| 0.5 |' "$1/dtr2021.md" || { echo "FAIL: dtr2021 table"; exit 1; }
  grep -q '^Goal met on [0-9]* of 2 graphs' "$1/dtr2021.md" ||
    { echo "FAIL: dtr2021 goal table"; exit 1; }
  grep -q '^| vDNN_all' "$1/offload2016.md" || { echo "FAIL: offload2016 vDNN table"; exit 1; }
  grep -q 'met at every point' "$1/offload2016.md" ||
    { echo "FAIL: offload2016 goal not met"; exit 1; }
}

# Without peer graphs: the Kusumoto part is skipped with a note.
"$py" "$src/scripts/reproduce.py" all --quick --remat "$remat" --out "$out/none" \
  --shared "$out/no-such-dir" > /dev/null
check "$out/none"
grep -q 'Skipped' "$out/none/kusumoto2019.md" || { echo "FAIL: no skip note"; exit 1; }

# With them, if present.
shared="$src/../shared"
if [ -d "$shared/peer-graphs/kusumoto2019" ]; then
  "$py" "$src/scripts/reproduce.py" kusumoto2019 --quick --remat "$remat" \
    --out "$out/peer" > /dev/null
  grep -q '| VGG19 |' "$out/peer/kusumoto2019.md" || { echo "FAIL: kusumoto table"; exit 1; }
  "$py" "$src/scripts/reproduce.py" rotor2019 --quick --remat "$remat" \
    --out "$out/peer" > /dev/null
  grep -q '^| VGG19 | 4 |' "$out/peer/rotor2019.md" || { echo "FAIL: rotor2019 table"; exit 1; }
  # Regenerating gives the same Markdown, timing columns aside.
  "$py" "$src/scripts/reproduce.py" kusumoto2019 --quick --remat "$remat" \
    --out "$out/peer2" > /dev/null
  strip() { sed '/## DP solve times/,$d' "$1"; }
  diff <(strip "$out/peer/kusumoto2019.md") <(strip "$out/peer2/kusumoto2019.md") ||
    { echo "FAIL: Markdown differs between two runs"; exit 1; }
  # The exact-versus-approximate DP grid: written, and no budget
  # where the exact DP's least extra time exceeds the approximate DP's.
  "$py" "$src/scripts/kusumoto_dp_grid.py" --quick --remat "$remat" \
    --out "$out/grid/kusumoto_dp_grid" > /dev/null
  grep -q '^| VGG19 |' "$out/grid/kusumoto_dp_grid.md" || { echo "FAIL: grid summary"; exit 1; }
  test -s "$out/grid/kusumoto_dp_grid.json" || { echo "FAIL: grid JSON missing"; exit 1; }
  if grep -q 'VIOLATED' "$out/grid/kusumoto_dp_grid.md"; then
    echo "FAIL: exact DP above approximate DP"; exit 1
  fi
else
  echo "note: ../shared/peer-graphs absent, Kusumoto graphs not tested"
fi
echo "reproduce_test: ok"
