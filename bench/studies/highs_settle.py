#!/usr/bin/env python3
"""What HiGHS does alone, given time, with the staged MILP checkmate_milp
builds: the measurements behind settle_nonzeros_per_second
(results/solver_choice/settle.md).

For each GRAPH@BUDGET@SECONDS point: `build/bench/micro/staged_milp_files write`
(the model and warm start as checkmate_milp builds them), then the HiGHS
command line of the build's Python environment (highsbox) on it from that
start, with mip_rel_gap 0 and random seed 0, one thread, and its solving
report read into one Markdown table row: nonzeros, the start's objective,
HiGHS's primal and dual bounds, gap and time (objectives in the model's
units: cost over its cost scale).

    bench/studies/highs_settle.py chain:n=16@10@40 unet_l4_c16_b2_i64_module@6527123@40
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

from rematbench import script

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
REPORT = {"primal": "Primal bound", "dual": "Dual bound", "gap": "Gap",
          "time": "Timing"}


def highs_command():
    import highsbox
    dist = os.path.join(os.path.dirname(highsbox.__file__), "highs_dist")
    return os.path.join(dist, "bin", "highs"), os.path.join(dist, "lib")


def report(log):
    """The fields of HiGHS's solving report (the first value on each
    field's line)."""
    tail = log[log.rindex("Solving report"):]
    out = {}
    for key, label in REPORT.items():
        m = re.search(rf"^\s+{label}\s+(\S+)", tail, re.M)
        out[key] = m.group(1) if m else "-"
    return out


def fail(message):
    """One line on stderr and exit status 2."""
    print(f"highs_settle: {message}", file=sys.stderr)
    sys.exit(2)


def settle(point, tools, workdir):
    graph, budget, seconds = point.rsplit("@", 2)
    prefix = os.path.join(workdir, "model")
    write = subprocess.run([tools, "write", graph, budget, prefix],
                           capture_output=True, text=True)
    if write.returncode != 0:
        why = (write.stderr.strip() or "no model").splitlines()[-1]
        fail(f"{point}: {why}")
    with open(prefix + ".json") as f:
        model = json.load(f)
    options = os.path.join(workdir, "options.txt")
    with open(options, "w") as f:
        f.write("mip_rel_gap = 0\nrandom_seed = 0\n")
    highs, lib = highs_command()
    run = subprocess.run(
        [highs, "--model_file", prefix + ".mps", "--read_solution_file",
         prefix + ".start.sol", "--options_file", options, "--time_limit",
         seconds, "--threads", "1"], capture_output=True, text=True,
        env=dict(os.environ, LD_LIBRARY_PATH=lib),
        cwd=workdir)  # (where HiGHS writes its Highs.log)
    if "Solving report" not in run.stdout:
        fail(f"{point}: HiGHS gave no solving report (exit "
             f"{run.returncode})")
    r = report(run.stdout)
    return (f"| {graph} | {budget} | {model['nonzeros']} | "
            f"{model['start_algorithm']} {model['start_objective']:g} | "
            f"{r['primal']} | {r['dual']} | {r['gap']} | {r['time']} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("points", nargs="+", metavar="GRAPH@BUDGET@SECONDS")
    ap.add_argument("--tools", default=os.path.join(
        ROOT, "build", "bench", "micro", "staged_milp_files"))
    args = ap.parse_args()
    for p in args.points:
        if p.count("@") < 2:
            fail(f"'{p}' is not GRAPH@BUDGET@SECONDS")
    for i, p in enumerate(args.points):
        with tempfile.TemporaryDirectory() as work:
            row = settle(p, args.tools, work)
        if i == 0:  # (after the first row is sure: no table without one)
            print("| graph | budget | nonzeros | start | primal | dual | "
                  "gap | time (s) |")
            print("|---|---:|---:|---|---:|---:|---:|---:|")
        print(row, flush=True)
    return 0


if __name__ == "__main__":
    script.run(main)
