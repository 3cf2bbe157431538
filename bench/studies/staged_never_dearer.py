#!/usr/bin/env python3
"""Whether the staged exact methods (checkmate_milp, moccasin) answer
dearer than a heuristic anywhere in sweeps: at every (graph, budget) of
the given results files, each staged method's point against the cheapest
feasible point of the heuristics (every algorithm the registry does not
mark exact, offloading schedules left out: the staged classes compute and
free only). Their warm start takes every such heuristic, so a staged
answer dearer than one is a bug, and a point where one fits and the
staged method answers nothing is reported too.

    remat sweep --corpus graphs/corpus/default.json --algorithms all \\
        --budgets 8 --timeout 10 --out /tmp/default.json
    $REMAT_PYTHON bench/studies/staged_never_dearer.py /tmp/default.json \\
        -o results/staged_never_dearer/cpu

Writes <out>.json (one row per staged point: graph, budget, algorithm,
status, cost, the best heuristic and its cost, verdict) and <out>.md
(counts, and every row that is not `never dearer`). Exit status 1 when a
staged point is dearer than a heuristic.
"""

import argparse

import rematbench
from rematbench import client, files, results, script

STAGED = ("checkmate_milp", "moccasin")
TOLERANCE = 1e-9  # relative: costs are sums of doubles


def heuristic_names():
    return {a.name for a in rematbench.algorithms() if not a.exact}


def fits(point):
    """A valid schedule within the budget without offloading: a feasible
    point, or the best schedule of one that timed out."""
    return (point["status"] in ("feasible", "timeout") and
            point.get("valid") is True and not point.get("transfer_bytes")
            and point["peak_bytes"] <= point["budget_bytes"])


def compare(sweep, source):
    """Rows for every staged point of `sweep` (a results document)."""
    heuristics = heuristic_names()
    best = {}  # (graph, budget) -> (cost, algorithm)
    staged = []
    for run in sweep["runs"]:
        for p in run["points"]:
            key = (run["graph"], p["budget_bytes"])
            if run["algorithm"] in STAGED:
                staged.append((run["algorithm"], key, p))
            elif run["algorithm"] in heuristics and fits(p) and \
                    (key not in best or p["cost"] < best[key][0]):
                best[key] = (p["cost"], run["algorithm"])
    rows = []
    for algorithm, (graph, budget), p in staged:
        cost, who = best.get((graph, budget), (None, None))
        if cost is None:
            verdict = "no heuristic fits"
        elif not fits(p):
            verdict = "no answer where a heuristic fits"
        elif p["cost"] > cost * (1 + TOLERANCE):
            verdict = "dearer"
        else:
            verdict = "never dearer"
        rows.append({"source": source, "graph": graph, "budget_bytes": budget,
                     "algorithm": algorithm, "status": p["status"],
                     "cost": p.get("cost"), "best_heuristic": who,
                     "best_heuristic_cost": cost, "verdict": verdict,
                     "message": p.get("message")})
    return rows


def markdown(rows, sources):
    counts = {}
    for r in rows:
        counts.setdefault(r["algorithm"], {}).setdefault(r["verdict"], 0)
        counts[r["algorithm"]][r["verdict"]] += 1
    verdicts = ["never dearer", "dearer", "no answer where a heuristic fits",
                "no heuristic fits"]
    out = ["# Staged exact methods against the heuristics", "",
           f"Sweeps: {', '.join(sources)}; "
           "`bench/studies/staged_never_dearer.py`.", "",
           client.table(["algorithm"] + verdicts, [
               [name] + [counts[name].get(v, 0) for v in verdicts]
               for name in sorted(counts)])]
    odd = [r for r in rows if r["verdict"] in verdicts[1:3]]
    if odd:
        out += ["", client.table(
            ["graph", "budget", "algorithm", "status", "cost",
             "best heuristic", "its cost", "verdict"],
            [[r["graph"], r["budget_bytes"], r["algorithm"], r["status"],
              r["cost"], r["best_heuristic"], r["best_heuristic_cost"],
              r["verdict"]] for r in odd])]
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sweeps", nargs="+", help="remat sweep results files")
    parser.add_argument("-o", "--out", required=True,
                        help="output path without extension (.json, .md)")
    args = parser.parse_args()
    rows = []
    for path in args.sweeps:
        rows += compare(results.load("staged_never_dearer", path), path)
    files.write_json(args.out + ".json", {
        "format": "rematbench-staged-never-dearer", "version": 1,
        "context": files.run_context(sweeps=args.sweeps), "rows": rows},
        indent=1)
    files.write_text(args.out + ".md", markdown(rows, args.sweeps))
    return 1 if any(r["verdict"] == "dearer" for r in rows) else 0


if __name__ == "__main__":
    script.run(main)
