#!/usr/bin/env python3
"""rematbench's eager plans of a torch_options run made again by the code
as it is now, to tell whether a change made any plan worse at the same
budget. For each zoo model of the file: the trace torch_options.py makes
(the same model, batch and plan arguments), twice, then a plan of each
trace at every `rematbench_eager` row's planned budget.

A plan's predicted overhead comes from op times measured in its trace, so
two traces of the same code predict differently; their difference is the
noise. A row is `worse` where the first trace's prediction is above the
row's by more than twice the model's noise (the median over its budgets
of the two traces' difference) and 0.5% of it, `better` where below it
by as much, else `same`; and `over` where a predicted peak is above the
budget. Since the row's prediction came from other op times, the
algorithm that won the row is also planned at its budget on the first
trace: `same_trace` is `worse` where the plan now is predicted dearer
than that algorithm's on the same op times by more than the search's
settled margin (SETTLED_OVERHEAD: it stops once a schedule that close
to no recomputation fits), else `no worse`; `-` where that algorithm
fits nothing there as a program.

    $REMAT_PYTHON bench/studies/torch_options_replan.py \\
        results/torch_options/cpu.json -o results/torch_options/replan

Writes <out>.json (one row per budget) and <out>.md (counts, then every
row). Exit status 1 when a row is `worse` on the same trace or `over`.
"""

import argparse
import json
import os
import statistics
import sys
import time

import torch

import rematbench
import rematbench.torch as rt
from rematbench import client, files, results, script
from rematbench.torch.options import HEURISTICS
from rematbench.torch.search import SETTLED_OVERHEAD

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_options import zoo_case  # noqa: E402

FLOOR = 0.005  # the least difference taken for more than noise


def traced(name, timeout):
    """torch_options.py's first plan of zoo model `name`: its trace."""
    model, batch, _, _ = zoo_case(name, "bench").build()
    torch.manual_seed(0)
    return rt.plan(model, batch.example, batch.loss_fn, budget=1.0,
                   algorithms=HEURISTICS, timeout=timeout, repeats=2,
                   threads=1)


def predicted(plan, budget):
    """(algorithm, predicted overhead, predicted peak) of `plan` at
    `budget`, or (None, the error) where it fits nothing there."""
    try:
        p = plan.at(budget)
    except rematbench.Error as e:
        return None, str(e).splitlines()[0][:200], None
    return p.algorithm, p.predicted_overhead, p.predicted_peak_bytes


def predicted_with(plan, budget, algorithm):
    """The predicted overhead of `algorithm`'s schedule at `budget` on
    `plan`'s trace, judged as a program, or None where it fits nothing
    there."""
    try:
        p = plan.at(budget)
        p.use(algorithm)
    except rematbench.Error:
        return None
    return p.predicted_overhead


def same_trace(row):
    """The plan now against the row's algorithm on the same trace."""
    if row["new_algorithm"] is None or row["old_algorithm_now"] is None:
        return "-"
    return "worse" if row["new_overhead"] > \
        row["old_algorithm_now"] * SETTLED_OVERHEAD else "no worse"


def verdicts(rows):
    """Each row's verdict from its old and two new predictions (the
    module docstring's rule), per model."""
    by_model = {}
    for r in rows:
        by_model.setdefault(r["model"], []).append(r)
    for model_rows in by_model.values():
        spreads = [abs(r["new_overhead"] - r["repeat_overhead"])
                   for r in model_rows if r["new_algorithm"] and
                   r["repeat_algorithm"]]
        noise = statistics.median(spreads) if spreads else 0.0
        for r in model_rows:
            r["noise"] = noise
            if r["new_algorithm"] is None:
                r["verdict"] = "no plan"
                continue
            tolerance = max(2 * noise, FLOOR * r["old_overhead"])
            if r["new_peak_bytes"] > r["budget_bytes"]:
                r["verdict"] = "over"
            elif r["new_overhead"] > r["old_overhead"] + tolerance:
                r["verdict"] = "worse"
            elif r["new_overhead"] < r["old_overhead"] - tolerance:
                r["verdict"] = "better"
            else:
                r["verdict"] = "same"
    return rows


def replan(doc, models, timeout):
    old = {}
    for r in doc["rows"]:
        if r["method"] == "rematbench_eager" and \
                r.get("planned_budget_bytes") and r.get("algorithm") and \
                (not models or r["model"] in models):
            old.setdefault(r["model"], {}).setdefault(
                r["planned_budget_bytes"], r)
    rows = []
    for name, by_budget in old.items():
        t = time.perf_counter()
        first, second = traced(name, timeout), traced(name, timeout)
        for budget, r in sorted(by_budget.items(), reverse=True):
            a, o, peak = predicted(first, budget)
            b, o2, _ = predicted(second, budget)
            rows.append({
                "model": name, "setting": r["setting"],
                "budget_bytes": budget, "old_algorithm": r["algorithm"],
                "old_overhead": r["predicted_overhead"],
                "new_algorithm": a,
                "new_overhead": o if a else None,
                "new_peak_bytes": peak,
                "repeat_algorithm": b,
                "repeat_overhead": o2 if b else None,
                "old_algorithm_now": predicted_with(first, budget,
                                                    r["algorithm"]),
                "error": None if a else o})
            rows[-1]["same_trace"] = same_trace(rows[-1])
        print(f"torch_options_replan: {name}: {len(by_budget)} budgets, "
              f"{time.perf_counter() - t:.0f} s", file=sys.stderr,
              flush=True)
    return verdicts(rows)


def markdown(doc):
    rows = doc["rows"]
    counts, same = {}, {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
        same[r["same_trace"]] = same.get(r["same_trace"], 0) + 1

    def ratio(x):
        return "" if x is None else f"{x:.4f}"
    return "\n".join([
        "# rematbench's eager plans of a torch_options run, made again",
        "",
        f"{doc['context']['date']}, torch {doc['context']['torch']}; "
        f"`{doc['context']['command_line']}` (do not edit by hand); "
        f"against {doc['context']['source']} (made at "
        f"{doc['context']['source_commit']}).",
        "",
        "Verdicts: " + ", ".join(f"{n} {v}" for v, n in
                                 sorted(counts.items())) + ".",
        "On the same trace, against the algorithm that won then: " +
        ", ".join(f"{n} {v}" for v, n in sorted(same.items())) + ".",
        "",
        client.table(
            ["model", "setting", "budget", "then", "predicted then",
             "now", "predicted now", "again", "noise", "verdict",
             "then's algorithm now", "same trace"],
            [[r["model"], r["setting"], r["budget_bytes"],
              r["old_algorithm"], ratio(r["old_overhead"]),
              r["new_algorithm"] or r["error"], ratio(r["new_overhead"]),
              ratio(r["repeat_overhead"]), ratio(r["noise"]), r["verdict"],
              ratio(r["old_algorithm_now"]), r["same_trace"]]
             for r in rows]),
        ""])


def load(path):
    """A torch_options.py results file, or exit 2 with one line."""
    try:
        with open(path) as f:
            doc = json.load(f)
        if doc.get("format") != "rematbench-torch-options":
            raise ValueError(f"format {doc.get('format')!r}, not "
                             f"rematbench-torch-options")
        return doc
    except (OSError, ValueError, AttributeError) as e:
        results.bad_input("torch_options_replan", f"{path}: {e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", help="a torch_options.py results file")
    ap.add_argument("--models", default="",
                    help="only these zoo models, comma-separated")
    ap.add_argument("--solve-timeout", type=script.positive, default=20,
                    help="the plans' time limit (torch_options.py's "
                         "default)")
    ap.add_argument("-o", "--out", required=True,
                    help="output path without extension (.json, .md)")
    args = ap.parse_args()
    source = load(args.results)
    torch.set_num_threads(1)
    models = [m for m in args.models.split(",") if m]
    rows = replan(source, models, args.solve_timeout)
    doc = {"format": "rematbench-torch-options-replan", "version": 2,
           "context": files.run_context(
               torch=torch.__version__, source=args.results,
               source_commit=source["context"].get("git_commit")),
           "rows": rows}
    files.write_json(args.out + ".json", doc, indent=1)
    files.write_text(args.out + ".md", markdown(doc))
    bad = [r for r in rows
           if r["verdict"] == "over" or r["same_trace"] == "worse"]
    print(f"torch_options_replan: {len(rows)} budgets, {len(bad)} worse "
          f"on the same trace or over", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    script.run(main)
