#!/usr/bin/env bash
# remat sweep --journal / --resume: a sweep killed with SIGKILL mid-way and
# resumed has the figures of an uninterrupted run and solves no journaled
# task twice (scripts/sweep_kill_bench.py); a truncated last journal line is
# ignored with a note; a corrupt earlier line and a journal of another
# configuration are refused with one line and exit 2.
set -euo pipefail
remat=$1
source_dir=$2
source "$source_dir/scripts/env.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
same=("$REMAT_PYTHON" "$source_dir/scripts/same_figures.py")
args=(--graphs "resnet:depth=18,batch=8,image=64,chain:n=16,$source_dir/tests/fixtures/skip_connections.json"
  --algorithms noremat,revolve,twremat,dp_approx,rotor,exact_search,checkpoint_last
  --threads 1 --timeout 600)

"$REMAT_PYTHON" "$source_dir/scripts/sweep_kill_bench.py" --remat "$remat" \
  --trials 2 --latest 0.7 --out "$work/kill.json" -- "${args[@]}" --budgets 6 2>/dev/null
"$REMAT_PYTHON" - "$work/kill.json" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))["summary"]
assert summary["ok"] and summary["killed_mid_run"] >= 1, summary
PY

cd "$work"
"$remat" sweep "${args[@]}" --budgets 6 --out ref.json >/dev/null 2>&1
journal=ref.json.journal
tasks=$(($(wc -l < "$journal") - 1))
cp "$journal" whole.journal

# A truncated last line (what a kill mid-write leaves): noted, cut off, and
# its task solved again.
head -c -25 whole.journal > a.json.journal
"$remat" sweep "${args[@]}" --budgets 6 --out a.json --resume >/dev/null 2>err.txt
grep -q "a.json.journal:$((tasks + 1)): ignoring the incomplete last line" err.txt
"${same[@]}" ref.json a.json >/dev/null
"$REMAT_PYTHON" - a.json "$tasks" <<'PY'
import json, sys
context = json.load(open(sys.argv[1]))["context"]
assert context["resumed_tasks"] == int(sys.argv[2]) - 1, context["resumed_tasks"]
PY
test "$(($(wc -l < a.json.journal) - 1))" -eq "$tasks"

# A corrupt line before the last: refused, nothing written.
sed '3s/.*/{"key": oops/' whole.journal > b.json.journal
status=0
"$remat" sweep "${args[@]}" --budgets 6 --out b.json --resume >/dev/null 2>err.txt || status=$?
test "$status" -eq 2
test "$(wc -l < err.txt)" -eq 1
grep -q "b.json.journal:3: corrupt journal line" err.txt
test ! -e b.json

# A journal of another configuration: refused.
cp whole.journal c.json.journal
status=0
"$remat" sweep "${args[@]}" --budgets 5 --out c.json --resume >/dev/null \
  2>err.txt || status=$?
test "$status" -eq 2
test "$(wc -l < err.txt)" -eq 1
grep -q "from another configuration (budgets_per_graph differs" err.txt
cmp c.json.journal whole.journal
echo "sweep resume: ok"
