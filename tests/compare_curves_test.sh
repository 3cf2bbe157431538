#!/usr/bin/env bash
# scripts/compare_curves.py: identical files compare equal (exit 0); a
# deliberately degraded copy is flagged (exit 1) for the algorithm checked.
set -euo pipefail
remat=$1
source_dir=$2
source "$source_dir/scripts/env.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
compare=("$REMAT_PYTHON" "$source_dir/scripts/compare_curves.py")
# Runs compare_curves.py with the remaining arguments, its JSON to
# $work/out.json and stderr to $work/err; fails unless it exits with $1.
expect_exit() {
  local want=$1 status=0
  shift
  "${compare[@]}" "$@" --json > "$work/out.json" 2> "$work/err" || status=$?
  test "$status" -eq "$want"
}
"$remat" sweep --graphs chain:n=8,"$source_dir"/tests/fixtures/skip_connections.json \
  --algorithms noremat,checkpoint_last --budgets 4 --out "$work/a.json" >/dev/null

"${compare[@]}" "$work/a.json" "$work/a.json" --check all >/dev/null

# Degrade checkpoint_last: every cost 20% higher.
"$REMAT_PYTHON" - "$work/a.json" "$work/b.json" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))
for run in results["runs"]:
    if run["algorithm"] == "checkpoint_last":
        for p in run["points"]:
            if p["cost"] is not None:
                p["cost"] = int(p["cost"] * 1.2)
                p["overhead"] *= 1.2
json.dump(results, open(sys.argv[2], "w"))
PY
expect_exit 1 "$work/a.json" "$work/b.json" --check checkpoint_last
"$REMAT_PYTHON" - "$work/out.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
flagged = {r["algorithm"] for r in rows if r["regression"]}
assert flagged == {"checkpoint_last"}, flagged
for r in rows:
    if r["algorithm"] == "checkpoint_last":
        assert r["dominates"] == "A", r
        assert abs(r["geomean_slowdown"] - 1.2) < 0.05, r
PY
# Unchecked algorithms never fail the run.
"${compare[@]}" "$work/a.json" "$work/b.json" --check noremat >/dev/null

# A checked algorithm whose runs the new file lost fails the gate; one that
# is in neither file is bad input.
"$REMAT_PYTHON" - "$work/a.json" "$work/c.json" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))
results["runs"] = [r for r in results["runs"]
                   if r["algorithm"] != "checkpoint_last"]
json.dump(results, open(sys.argv[2], "w"))
PY
expect_exit 1 "$work/a.json" "$work/c.json" --check checkpoint_last
"$REMAT_PYTHON" - "$work/out.json" <<'PY'
import json, sys
missing = json.load(open(sys.argv[1]))["missing"]
assert {m["algorithm"] for m in missing} == {"checkpoint_last"}, missing
assert len(missing) == 2, missing  # one run per graph
PY
"${compare[@]}" "$work/a.json" "$work/c.json" --check noremat >/dev/null
expect_exit 2 "$work/a.json" "$work/a.json" --check revolvee
grep -q "revolvee: no run of that algorithm" "$work/err"
echo "compare_curves: ok"
