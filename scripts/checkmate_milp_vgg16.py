#!/usr/bin/python3
"""Writes results/checkmate_milp_vgg16.json: checkmate_milp on the Checkmate
VGG16 training graph at 8 budgets evenly spaced from the memory lower bound
to the NoRemat peak (issue 7's goal: each proven optimal within 10 minutes
on two cores). One `remat solve` per budget, run one after the other so
that each has both cores.

  scripts/checkmate_milp_vgg16.py [--remat build/remat] [--out FILE] [-p k=v ...]
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys

import rematbench_client as rc

ROOT = rc.ROOT
GRAPH = "../shared/peer-graphs/checkmate2020/VGG16_256_224x224_train.json"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--remat", default="build/remat")
    ap.add_argument("--out", default="results/checkmate_milp_vgg16.json")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("-p", "--param", action="append", default=["threads=2"],
                    help="checkmate_milp parameter (threads=2 is given)")
    args = ap.parse_args()
    # --remat is relative to the source tree, where remat runs.
    remat = rc.Remat(os.path.join(ROOT, args.remat), name="checkmate_milp_vgg16")
    info = remat.info(GRAPH)
    lb, peak = info["lower_bound_bytes"], info["noremat_peak_bytes"]
    budgets = rc.budget_grid(lb, peak, 8)
    params = [x for p in args.param for x in ("--param", p)]
    solve = ["solve", "--algorithm", "checkmate_milp", "--graph", GRAPH,
             *params, "--timeout", f"{args.timeout:g}"]
    runs = []
    for budget in budgets:
        r = remat.call(solve + ["--budget", str(budget), "--json"])
        run = {k: r.get(k) for k in ("budget_bytes", "status", "optimal",
                                     "solve_seconds", "cost", "peak_bytes",
                                     "message")}
        run["optimal"] = bool(run["optimal"])
        run.update(r.get("details", {}))
        runs.append(run)
        print(budget, run["status"], run["optimal"],
              f"{run['solve_seconds']:.1f} s", file=sys.stderr)
    def output(*cmd):
        return subprocess.run(cmd, cwd=ROOT, text=True,
                              capture_output=True).stdout.strip()
    commit = output("git", "rev-parse", "--short=7", "HEAD")
    if output("git", "status", "--porcelain", "--untracked-files=no"):
        commit += "-dirty"
    doc = {
        "description": (
            f"checkmate_milp on the Checkmate VGG16 training graph "
            f"({info['nodes']} nodes) at 8 budgets evenly spaced from the memory "
            f"lower bound ({lb}) to the NoRemat peak ({peak}); written by "
            f"scripts/checkmate_milp_vgg16.py; each run: remat "
            f"{' '.join(solve)} --budget B --json"),
        "context": {
            "commit": commit,
            "remat": args.remat,
            "cbc": output("dpkg-query", "-W", "-f", "${Version}",
                          "coinor-libcbc-dev"),
            "host": platform.node(),
            "load_average_at_end": os.getloadavg()[0],
            "date": datetime.date.today().isoformat(),
        },
        "runs": runs,
    }
    with open(os.path.join(ROOT, args.out), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
