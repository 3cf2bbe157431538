#!/usr/bin/env python3
"""Writes results/checkmate_milp_vgg16.json: checkmate_milp and moccasin
(each of its solvers) on the Checkmate VGG16 training graph at 8 budgets
evenly spaced from the memory lower bound to the NoRemat peak (the goals:
checkmate_milp proven optimal within 10 minutes on two cores; moccasin
proven optimal at all 8 at least 5x faster), with each
one's time ratio to checkmate_milp. One `remat solve` per (entry, budget),
run one after the other so that each has the cores to itself.

  scripts/checkmate_milp_vgg16.py [--remat build/remat] [--out FILE]
      [--algorithms checkmate_milp,moccasin:solver=cbc,...] [-p k=v ...]

An entry is an algorithm with its own parameters after colons. -p
parameters go to every entry; threads=2 unless -p threads=N.
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys

import rematbench
from rematbench import client, script

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GRAPH = "../shared/peer-graphs/checkmate2020/VGG16_256_224x224_train.json"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--remat", default="build/remat")
    ap.add_argument("--out", default="results/checkmate_milp_vgg16.json")
    ap.add_argument("--timeout", type=script.positive, default=600)
    ap.add_argument("--algorithms", default=(
        "checkmate_milp,moccasin:solver=cbc,moccasin:solver=gecode,moccasin"))
    # default=None, not ["threads=2"]: argparse appends to a list default,
    # so -p threads=1 used to give threads=2 as well (and CBC took the last).
    ap.add_argument("-p", "--param", action="append", default=None,
                    help="parameter of every algorithm (threads=2 unless given)")
    args = ap.parse_args()
    given = args.param or []
    if not any(p.split("=", 1)[0] == "threads" for p in given):
        given = ["threads=2"] + given
    # --remat is relative to the source tree, where remat runs; no cache, so
    # that every time is a run of its own.
    remat = client.Remat(os.path.join(ROOT, args.remat), ROOT, name="checkmate_milp_vgg16",
                     cache=False)
    info = remat.info(GRAPH)
    lb, peak = info["lower_bound_bytes"], info["noremat_peak_bytes"]
    budgets = rematbench.budget_grid(lb, peak, 8)
    params = [x for p in given for x in ("--param", p)]
    algorithms = args.algorithms.split(",")
    runs = {}
    for entry in algorithms:
        algorithm, *own = entry.split(":")
        own = [x for p in own for x in ("--param", p)]
        solve = ["solve", "--algorithm", algorithm, "--graph", GRAPH,
                 *params, *own, "--timeout", f"{args.timeout:g}"]
        runs[entry] = []
        for budget in budgets:
            r = remat.call(solve + ["--budget", str(budget), "--json"])
            run = {k: r.get(k) for k in ("budget_bytes", "status", "optimal",
                                         "solve_seconds", "cost", "peak_bytes",
                                         "message")}
            run["optimal"] = bool(run["optimal"])
            run.update(r.get("details", {}))
            runs[entry].append(run)
            print(entry, budget, run["status"], run["optimal"],
                  f"{run['solve_seconds']:.1f} s", file=sys.stderr)
    comparison = []
    milp = runs.get("checkmate_milp")
    for entry, entry_runs in runs.items():
        if entry == "checkmate_milp" or milp is None:
            continue
        for m, c in zip(milp, entry_runs):
            comparison.append({
                "entry": entry,
                "budget_bytes": m["budget_bytes"],
                "checkmate_milp_seconds": m["solve_seconds"],
                "seconds": c["solve_seconds"],
                "speedup": m["solve_seconds"] / c["solve_seconds"],
                "both_optimal": m["optimal"] and c["optimal"],
                "same_cost": m["cost"] == c["cost"]})
    totals = {entry: sum(r["solve_seconds"] for r in entry_runs)
              for entry, entry_runs in runs.items()}

    def output(*cmd):
        return subprocess.run(cmd, cwd=ROOT, text=True,
                              capture_output=True).stdout.strip()
    commit = output("git", "rev-parse", "--short=7", "HEAD")
    if output("git", "status", "--porcelain", "--untracked-files=no"):
        commit += "-dirty"
    doc = {
        "description": (
            f"{', '.join(algorithms)} on the Checkmate VGG16 training graph "
            f"({info['nodes']} nodes) at 8 budgets evenly spaced from the memory "
            f"lower bound ({lb}) to the NoRemat peak ({peak}); written by "
            f"scripts/checkmate_milp_vgg16.py; each run: remat solve --algorithm A "
            f"--graph {GRAPH} {' '.join(params)} --timeout {args.timeout:g} "
            f"[entry's parameters] --budget B --json; speedup = checkmate_milp "
            f"seconds / the entry's seconds at the same budget"),
        "context": {
            "commit": commit,
            "remat": args.remat,
            "cbc": output("dpkg-query", "-W", "-f", "${Version}",
                          "coinor-libcbc-dev"),
            "gecode": output("dpkg-query", "-W", "-f", "${Version}",
                             "libgecode-dev"),
            "host": platform.node(),
            "cpus": os.cpu_count(),
            "load_average_at_end": os.getloadavg()[0],
            "date": datetime.date.today().isoformat(),
        },
        "runs": runs,
        "total_seconds": totals,
        "comparison": comparison,
    }
    with open(os.path.join(ROOT, args.out), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    script.run(main)
