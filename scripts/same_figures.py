#!/usr/bin/env python3
"""Checks that two results files hold the same figures.

Usage: scripts/same_figures.py OLD.json NEW.json

A refactoring that leaves behaviour unchanged must reproduce every figure of
a sweep: the graphs' summaries and, per (graph, algorithm, parameters,
budget), the status, peak, cost, overhead, length, bounds, message and
details. Fields that describe the run rather than its answers are skipped:
the context, `solve_seconds` and `schedule_file`. Fields that only the new
file has are listed, not compared (a new figure is not a changed one). Timed-out
points are compared too: run both sweeps with limits that nothing reaches.
Exit status: 0 same figures, 1 a difference, 2 unreadable input.
"""

import json
import sys

import rematbench.results
from rematbench import script

RUN_FIELDS = ("solve_seconds", "schedule_file")


def load(path):
    return rematbench.results.load("same_figures", path)


def points(doc):
    out = {}
    for run in doc["runs"]:
        params = json.dumps(run.get("params", {}), sort_keys=True)
        for p in run["points"]:
            out[(run["graph"], run["algorithm"], params, p["budget_bytes"])] = p
    return out


def main(argv):
    if len(argv) != 3:
        sys.exit(print(__doc__, file=sys.stderr) or 2)
    old, new = load(argv[1]), load(argv[2])
    try:
        return compare(old, new)
    except (KeyError, TypeError, AttributeError) as e:
        # A graph, run or point without the fields of results/SCHEMA.md.
        sys.exit(print(f"{argv[1]} or {argv[2]}: malformed results "
                       f"({type(e).__name__}: {str(e)[:120]})",
                       file=sys.stderr) or 2)


def compare(old, new):
    differences, added = [], set()
    graphs_new = {g["name"]: g for g in new["graphs"]}
    for g in old["graphs"]:
        h = graphs_new.get(g["name"], {})
        added |= {f"graphs.{k}" for k in set(h) - set(g)}
        if any(h.get(k) != v for k, v in g.items()):
            differences.append(f"graph {script.shown(g['name'])}: summary "
                               "differs")
    if len(graphs_new) != len(old["graphs"]):
        differences.append("the files have different graphs")
    a, b = points(old), points(new)
    for key in sorted(set(a) | set(b), key=str):
        if key not in a or key not in b:
            differences.append(f"{key}: only in {'new' if key in b else 'old'}")
            continue
        p, q = dict(a[key]), dict(b[key])
        for field in RUN_FIELDS:
            p.pop(field, None)
            q.pop(field, None)
        details_new = q.pop("details", {})
        details_old = p.pop("details", {})
        added |= {f"details.{k}" for k in set(details_new) - set(details_old)}
        added |= set(q) - set(p)
        q = {k: v for k, v in q.items() if k in p}
        details_new = {k: v for k, v in details_new.items() if k in details_old}
        if p != q or details_old != details_new:
            changed = sorted(k for k in set(p) | set(q) if p.get(k) != q.get(k))
            changed += sorted(f"details.{k}" for k in details_old
                              if details_old[k] != details_new.get(k))
            differences.append(f"{key}: {', '.join(changed)}")
    print(f"{len(a)} points compared; fields only in the new file: "
          f"{', '.join(sorted(added)) or 'none'}")
    for d in differences:
        print("DIFFERENT", d)
    print("same figures" if not differences else
          f"{len(differences)} differences")
    return 1 if differences else 0


if __name__ == "__main__":
    script.run(main, sys.argv)
