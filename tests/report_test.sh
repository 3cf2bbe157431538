#!/usr/bin/env bash
# scripts/report.py: a malformed results file gives exit 2, one line and no
# output file; known answers for the Pareto front and the best-method table
# on a tiny inline results file; the report of a small sweep (and of the
# inline file, with timeouts, errors and refused points, against a baseline)
# opened in headless Chromium by scripts/report_check.py: drawn without a
# console error or an outside request, every method of the results file
# with a trace, a screenshot that is not blank.
# Without chromium or vl-convert-python it is skipped (77); under CI=true,
# where scripts/setup.sh installs both, it fails instead.
set -euo pipefail
remat=$1
source_dir=$2
if [ -z "${REMAT_PYTHON:-}" ]; then
  source "$source_dir/scripts/env.sh"
fi
py=$REMAT_PYTHON
report=("$py" "$source_dir/scripts/report.py" --remat "$remat")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

missing() {
  if [ "${CI:-}" = true ]; then
    echo "report: $1 (required under CI=true)" >&2
    exit 1
  fi
  echo "report: skipped: $1"
  exit 77
}
"$py" -c "import vl_convert" 2>/dev/null ||
  missing "the Python module vl_convert is missing (python/requirements.txt)"

# Bad input: exit 2, one line on stderr, no file written.
echo '{"format": "other"}' > "$work/other.json"
echo '{"format": "rematbench-results", "graphs": [{"name": "g"}],
       "runs": [{"graph": "g", "algorithm": "noremat"}]}' > "$work/broken.json"
printf '\x00\x01binary' > "$work/binary.json"
for bad in other.json broken.json binary.json missing.json; do
  status=0
  "${report[@]}" "$work/$bad" -o "$work/bad.html" 2> "$work/err" >/dev/null ||
    status=$?
  test "$status" -eq 2 || { echo "report: $bad: exit $status, not 2" >&2; exit 1; }
  test "$(wc -l < "$work/err")" -eq 1 ||
    { echo "report: $bad: stderr is not one line:" >&2; cat "$work/err" >&2; exit 1; }
  test ! -e "$work/bad.html"
done
test -z "$(find "$work" -name '.report-*')"  # no temporary left behind

"$remat" sweep --graphs chain:n=16,"$source_dir"/tests/fixtures/skip_connections.json \
  --algorithms noremat,checkpoint_last,chen_greedy,revolve,rotor,exact_search \
  --budgets 4 --timeout 10 --out "$work/sweep.json" >/dev/null
"${report[@]}" "$work/sweep.json" -o "$work/sweep.html" >/dev/null

# Known answers on an inline file, written for the browser check below too.
PYTHONPATH="$source_dir/scripts${PYTHONPATH:+:$PYTHONPATH}" "$py" - "$work" <<'EOF'
import json
import os
import sys

import report

work = sys.argv[1]


def point(budget, status, overhead=None, peak=None, valid=None, **extra):
    cost = None if overhead is None else round(overhead * 100)
    return dict(budget_bytes=budget, status=status, overhead=overhead,
                peak_bytes=peak, valid=valid, cost=cost,
                makespan=extra.pop("makespan", cost), solve_seconds=0.01,
                message=extra.pop("message", ""), **extra)


graph = dict(name="g", nodes=5, edges=4, static_bytes=0, base_cost=100,
             lower_bound_bytes=10, noremat_peak_bytes=100,
             longest_path_cost=100, content_hash="0")
runs = [
    dict(graph="g", algorithm="revolve", params={}, points=[
        point(10, "timeout", 1.4, 10, True),          # best so far
        point(40, "feasible", 1.2, 30, True),
        point(70, "timeout", message="no schedule"),  # no schedule
        point(100, "infeasible", 1.0, 120, True)]),   # over its budget
    dict(graph="g", algorithm="checkpoint_last", params={}, points=[
        point(10, "feasible", 7.5, 10, True),
        point(40, "feasible", 7.5, 10, True),
        point(70, "feasible", 7.5, 10, True),
        point(100, "feasible", 7.5, 10, True)]),
    dict(graph="g", algorithm="exact_search", params={}, points=[
        point(10, "too_large", message="more than 40 nodes"),
        point(40, "feasible", 1.1, 40, True, optimal=True),
        point(70, "feasible", 1.05, 60, True, lower_bound_cost=105),
        point(100, "error", message="crashed: signal 11")]),
    dict(graph="g", algorithm="vdnn", params={"policy": "all"}, points=[
        point(10, "unsupported", message="no grad_of"),
        point(40, "infeasible"),
        point(70, "feasible", 1.0, 60, True, makespan=103,
              transfer_bytes=50),                     # placed by its time
        point(100, "feasible", 1.0, 60, True, makespan=103,
              transfer_bytes=50)]),
]
# A shape and a colour per registry position, none repeated.
assert len(set(report.SHAPES)) == len(report.SHAPES) == len(report.COLORS)
front = report.pareto_front(graph, runs, "time")
assert [(b, round(y, 4)) for b, y, _ in front] == [
    (10, 1.4), (40, 1.1), (70, 1.03), (100, 1.03)], front
assert front[0][2] == ["revolve"] and front[2][2] == ["vdnn (policy=all)"], front
compute = report.pareto_front(graph, runs, "compute")
assert [(b, y) for b, y, _ in compute][2:] == [(70, 1.0), (100, 1.0)], compute

table = report.best_table(graph, runs, "time")
assert [r["budget"] for r in table] == [10, 40, 70, 100]
assert [r["ranked"][0][2] for r in table] == [
    "revolve", "exact_search", "vdnn (policy=all)", "vdnn (policy=all)"]
assert [r["optimum"] for r in table] == [None, 110, 105, None], table
assert [(r["fits"], r["methods"]) for r in table] == [
    (2, 4), (3, 4), (3, 4), (2, 4)], table
html = report.table_html(graph, runs)
# The gap of the best to the proven optimum; none for a schedule that
# moves values (the optima are over computes and frees).
assert "<td>1.1000</td><td>+0.00%</td>" in html, html
assert "<td>1.0500</td><td>-</td>" in html, html

results = {"format": "rematbench-results", "version": 1,
           "context": {"git_commit": "test"}, "graphs": [graph], "runs": runs}
with open(os.path.join(work, "inline.json"), "w") as f:
    json.dump(results, f)
# The baseline: revolve was better, exact_search lost its budget 70.
older = json.loads(json.dumps(results))
older["runs"][0]["points"][1].update(overhead=1.1, cost=110, makespan=110)
older["runs"][2]["points"][2]["lower_bound_cost"] = None
with open(os.path.join(work, "older.json"), "w") as f:
    json.dump(older, f)
EOF
"${report[@]}" "$work/inline.json" --baseline "$work/older.json" \
  -o "$work/inline.html" >/dev/null
grep -q "Against the baseline" "$work/inline.html"
grep -q "<tr class='worse'><td>worse</td><td>g</td><td>revolve</td>" "$work/inline.html"
# Self-contained: no tag of the page names a file outside it (scripts
# and styles are inline; links are anchors within the page).
"$py" - "$work/inline.html" <<'EOF'
import sys
from html.parser import HTMLParser


class Tags(HTMLParser):
    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("src", "href") and not (value or "").startswith("#"):
                sys.exit(f"report: <{tag} {name}={value!r}> leaves the file")


Tags().feed(open(sys.argv[1], encoding="utf-8").read())
EOF

command -v chromium >/dev/null || command -v chromium-browser >/dev/null ||
  missing "no chromium (Debian: apt-get install chromium)"
for name in sweep inline; do
  status=0
  "$py" "$source_dir/scripts/report_check.py" "$work/$name.html" --full-page \
    --screenshot "$work/$name.png" > "$work/$name.check.json" || status=$?
  if [ "$status" -ne 0 ]; then
    echo "report: report_check $name.html: exit $status" >&2
    cat "$work/$name.check.json" >&2
    exit 1
  fi
  "$py" - "$work/$name.check.json" "$work/$name.json" <<'EOF'
import json
import sys

check = json.load(open(sys.argv[1]))
results = json.load(open(sys.argv[2]))
assert check["console_errors"] == [] and check["requests"] == [], check
assert check["load_seconds"] is not None, check
# Blank would be one colour; the charts draw a dozen and more.
assert check["screenshot_colors"] >= 12, check["screenshot_colors"]
for graph in results["graphs"]:
    drawn = check["charts"][graph["name"]]
    for run in results["runs"]:
        if run["graph"] != graph["name"]:
            continue
        params = ",".join(f"{k}={v}" for k, v in sorted(run["params"].items()))
        label = run["algorithm"] + (f" ({params})" if params else "")
        # Every method has its row in the status strip ...
        assert label in drawn["status"], (graph["name"], label, drawn)
        # ... and a curve and points wherever it has a schedule in budget.
        if any(p["status"] in ("feasible", "timeout") and p.get("valid")
               and p["peak_bytes"] <= p["budget_bytes"]
               for p in run["points"]):
            assert label in drawn["steps"], (graph["name"], label, drawn)
            assert label in drawn["points"], (graph["name"], label, drawn)
EOF
done
echo "report: ok"
