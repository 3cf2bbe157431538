#!/usr/bin/env python3
"""Check a sweep against one bar: no strong method may look broken.

Reads one rematbench results file (a sweep with the papers' methods and the
simple baselines) and reports, as Markdown:
  1. points where a method from the papers (dp_exact, dp_approx,
     checkmate_milp, checkmate_lp, moccasin, twremat, revolve, rotor, dtr)
     has no feasible
     schedule while chen_greedy or checkpoint_last fits, with the method's
     own message (its reason);
  2. methods without a feasible schedule at the NoRemat peak (status
     unsupported excepted);
  3. solves that ran past their time limit by more than 10% or 5 s,
     whichever is larger.

    scripts/method_strength.py results/method_strength/sweep.json \\
        --out results/method_strength/report.md

Exit status: 0 (a report, not a gate), 2 on bad input.
"""
import argparse
import collections
import signal
import sys

import rematbench.results
from rematbench import files, script

PAPER_METHODS = ("dp_exact", "dp_approx", "checkmate_milp", "checkmate_lp",
                 "moccasin", "twremat", "revolve", "rotor", "dtr")
BASELINES = ("chen_greedy", "checkpoint_last")


def fits(point):
    """A valid schedule within the budget, whatever the status (a timeout
    that carries one counts)."""
    return point is not None and point.get("valid") is True and \
        point["peak_bytes"] <= point["budget_bytes"]


# Statuses in which the method states its own limit rather than failing.
DECLINED = ("unsupported", "too_large")


def report(results):
    limit = results["context"]["timeout_seconds"]
    allowed = limit + max(0.1 * limit, 5.0)
    peaks = {g["name"]: g["noremat_peak_bytes"] for g in results["graphs"]}
    # (graph, budget) -> algorithm -> point; algorithms with parameters
    # other than their defaults are left out (the runs of a default sweep).
    table = collections.defaultdict(dict)
    slow = []
    solves = 0
    for run in results["runs"]:
        for p in run["points"]:
            solves += 1
            if p["solve_seconds"] > allowed:
                slow.append((run["graph"], run["algorithm"], p))
            if not run["params"]:
                table[(run["graph"], p["budget_bytes"])][run["algorithm"]] = p
    weaker = []
    at_peak = []
    declined = collections.Counter()
    for (graph, budget), row in sorted(table.items()):
        baseline = next((b for b in BASELINES if fits(row.get(b))), None)
        for method in PAPER_METHODS:
            point = row.get(method)
            if point is None or fits(point):
                continue
            if point["status"] in DECLINED:
                declined[(method, point["status"])] += 1
                continue
            if baseline:
                weaker.append((graph, budget / peaks[graph], method, baseline,
                               point))
            if budget == peaks[graph]:
                at_peak.append((graph, method, point))
    context = results["context"]
    lines = [
        f"Sweep: {len(results['graphs'])} graphs, {solves} solves, time limit "
        f"{limit:g} s; code {context.get('git_commit', context.get('commit', '?'))}"
        f", {context.get('cpu_count', '?')} CPUs, load average "
        f"{context.get('load_average', '?')} at the start.",
        "",
        "A schedule counts when it is valid and within the budget, whatever "
        "its status (a timeout that carries one counts). Declined by the "
        "method's own stated limit (not counted below): "
        + (", ".join(f"{m} {st} {n}" for (m, st), n in sorted(declined.items()))
           or "none") + ".",
        "",
        f"## 1. A paper's method without a schedule within the budget where a "
        f"simple baseline has one: {len(weaker)}",
        "",
    ]
    if weaker:
        lines += ["| graph | budget / NoRemat peak | method | status | fits "
                  "instead | the method's reason |", "|---|---|---|---|---|---|"]
        for graph, ratio, method, baseline, p in weaker:
            reason = p["message"].replace("|", "/")
            lines.append(f"| {graph} | {ratio:.2f} | {method} | {p['status']} "
                         f"| {baseline} | {reason} |")
    lines += ["", f"## 2. Not feasible at the NoRemat peak: {len(at_peak)}", ""]
    for graph, method, p in at_peak:
        lines.append(f"- {graph}, {method}: {p['status']}: {p['message']}")
    lines += ["", f"## 3. Solves past their time limit plus max(10%, 5 s) "
              f"(> {allowed:g} s): {len(slow)}", ""]
    for graph, algorithm, p in slow:
        lines.append(f"- {graph}, {algorithm} at {p['budget_bytes']}: "
                     f"{p['solve_seconds']:.1f} s ({p['status']})")
    longest = max((p["solve_seconds"] for run in results["runs"]
                   for p in run["points"]), default=0)
    lines += ["", f"Longest solve: {longest:.1f} s.", ""]
    # One entry a line: a name that holds a newline or an escape sequence
    # is shown escaped.
    return "\n".join(script.shown(line) for line in lines)


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("results", help="a rematbench results file")
    parser.add_argument("--out", help="also write the report here")
    args = parser.parse_args()
    try:
        text = report(rematbench.results.load("method_strength", args.results))
    except (KeyError, TypeError, ValueError, AttributeError,
            ZeroDivisionError) as e:
        raise SystemExit(f"method_strength: {args.results}: malformed results "
                         f"({e!r})")
    if args.out:
        files.write_text(args.out, text)
    sys.stdout.write(text)


if __name__ == "__main__":
    try:
        script.run(main)
    except SystemExit as e:
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            sys.exit(2)
        raise
