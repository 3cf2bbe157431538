#!/usr/bin/env python3
"""Compare the tradeoff curves of two rematbench results files.

For each (graph, algorithm with parameters) present in both files A (the
baseline) and B: which curve dominates, the mean overhead difference between
the curves, the smallest feasible budget of each, and the geometric-mean
slowdown (cost B / cost A) at the budgets both evaluated. A curve is the
best feasible overhead at or below each budget, as scripts/plot_tradeoff.py
draws it.

    scripts/compare_curves.py old.json new.json --check revolve --tolerance 0.01

Exit status: 0, or 1 if an algorithm named with --check got worse than the
tolerance allows in B or lost a run B does not have (usable in CI against
regressions), 2 on bad input (a --check name with no run in either file).
"""
import argparse
import json
import signal
import sys

import rematbench.results
from rematbench import script
from rematbench.curves import compare_run, run_key, worse


def bad_input(message):
    """One line on stderr and exit 2: bad input, never a "regression"."""
    rematbench.results.bad_input("compare_curves", message)


def load(path):
    return rematbench.results.load("compare_curves", path)


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet under `| head`
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Exit status: 0, 1 if a --check algorithm got worse or lost "
               "a run, 2 on bad input.")
    parser.add_argument("a", help="baseline results file")
    parser.add_argument("b", help="results file to compare with the baseline")
    parser.add_argument("--check", action="append", default=[],
                        metavar="ALGORITHM",
                        help="fail (exit 1) if this algorithm got worse "
                        "(repeatable; 'all' for every algorithm)")
    parser.add_argument("--tolerance", type=script.nonnegative, default=0.01,
                        help="relative slack before a change counts as worse "
                        "(default 0.01)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args()

    results_a, results_b = load(args.a), load(args.b)
    try:
        runs_a = {run_key(r): r for r in results_a["runs"]}
        runs_b = {run_key(r): r for r in results_b["runs"]}
        rows = []
        for key in sorted(set(runs_a) & set(runs_b)):
            row = {"graph": key[0], "algorithm": key[1]}
            row.update(compare_run(runs_a[key]["points"],
                                   runs_b[key]["points"]))
            checked = "all" in args.check or \
                runs_a[key]["algorithm"] in args.check or key[1] in args.check
            row["regression"] = worse(row, args.tolerance) if checked else None
            rows.append(row)
    except (KeyError, TypeError, AttributeError, ValueError,
            ZeroDivisionError) as e:
        # A run or point without the fields of results/SCHEMA.md.
        bad_input(f"{args.a} or {args.b}: malformed run or point "
                  f"({type(e).__name__}: {str(e)[:120]})")
    runs = list(runs_a.items()) + list(runs_b.items())
    known = {r["algorithm"] for _, r in runs} | {k[1] for k, _ in runs}
    for name in args.check:
        if name != "all" and name not in known:
            bad_input(f"--check {name}: no run of that algorithm in "
                      f"{args.a} or {args.b}")
    # A checked run the new file lost cannot be judged better: it fails.
    missing = [{"graph": k[0], "algorithm": k[1]}
               for k, r in sorted(runs_a.items()) if k not in runs_b and
               ("all" in args.check or r["algorithm"] in args.check or
                k[1] in args.check)]

    if args.json:
        print(json.dumps({"a": args.a, "b": args.b, "rows": rows,
                          "missing": missing}, indent=2))
    else:
        def fmt(v, spec):
            return "-" if v is None else format(v, spec)
        print(f"{'graph':<28} {'algorithm':<24} {'better':<9} "
              f"{'mean dOvh':>9} {'minB A':>12} {'minB B':>12} "
              f"{'slowdown':>8}  regression")
        for r in rows:
            print(f"{script.shown(r['graph'])[:28]:<28} "
                  f"{script.shown(r['algorithm'])[:24]:<24} "
                  f"{r['dominates']:<9} "
                  f"{fmt(r['mean_overhead_difference'], '+.4f'):>9} "
                  f"{fmt(r['min_feasible_budget_a'], 'd'):>12} "
                  f"{fmt(r['min_feasible_budget_b'], 'd'):>12} "
                  f"{fmt(r['geomean_slowdown'], '.4f'):>8}  "
                  f"{r['regression'] or ''}")
        for m in missing:
            print(f"{script.shown(m['graph'])[:28]:<28} "
                  f"{script.shown(m['algorithm'])[:24]:<24} "
                  f"regression: checked, missing from {args.b}")
        only = (set(runs_a) ^ set(runs_b)) - \
            {(m["graph"], m["algorithm"]) for m in missing}
        if only:
            print(f"({len(only)} run(s) present in only one file are skipped)")
    return 1 if missing or any(r["regression"] for r in rows) else 0


if __name__ == "__main__":
    script.run(main)
