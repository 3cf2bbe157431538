#!/usr/bin/env bash
# Smoke test of scripts/plot_tradeoff.py on a real sweep: it must write one
# PNG per graph, and refuse a file that is not a results file with status 2.
set -euo pipefail
remat=$1
source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$remat" sweep --graphs chain:n=6,"$source_dir"/tests/fixtures/diamond.json \
  --algorithms noremat,checkpoint_last --budgets 4 --out "$work/r.json" >/dev/null
/usr/bin/python3 "$source_dir/scripts/plot_tradeoff.py" "$work/r.json" \
  --out "$work/plots" --formats png >/dev/null
test -s "$work/plots/chain_n=6.png"
test -s "$work/plots/diamond.png"
echo '{"format": "other"}' > "$work/bad.json"
status=0
/usr/bin/python3 "$source_dir/scripts/plot_tradeoff.py" "$work/bad.json" \
  --out "$work/plots" 2>/dev/null || status=$?
test "$status" -eq 2
echo "plot_tradeoff: ok"
