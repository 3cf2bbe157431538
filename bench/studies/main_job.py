#!/usr/bin/env python3
"""The main job's steps timed one after the other, as `scripts/run.sh` runs
them after its set-up and build: the default sweep (every algorithm on
graphs/corpus/default.json), the plots and the report.

    $REMAT_PYTHON bench/studies/main_job.py [--budgets 8] [--timeout 10]
        [--out results/main_job] [--keep DIR]

Writes <out>/cpu.json (results/SCHEMA.md): the wall time of each step
and in all (issue 32's goal is under 5 minutes on two idle cores), the
load average before and after, the share of CPU time the host took away
(steal), the commit, and per algorithm the summed solve time and the
points by status, so that a change's share of the time can be read off.
The sweep's own output goes to a temporary folder (--keep DIR keeps it).
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time

from rematbench import files, script

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def timed(command):
    started = time.monotonic()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return round(time.monotonic() - started, 1)


def cpu_times():
    """The machine's CPU time counters (/proc/stat's first line), to tell
    how much of a run the host took away (steal) on a shared machine."""
    try:
        with open("/proc/stat") as f:
            return [int(x) for x in f.readline().split()[1:]]
    except OSError:
        return None


def steal_fraction(before, after):
    if not before or not after or len(before) < 8:
        return None
    total = sum(after) - sum(before)
    return round((after[7] - before[7]) / total, 3) if total > 0 else None


def per_algorithm(sweep):
    seconds = collections.Counter()
    statuses = collections.defaultdict(collections.Counter)
    for run in sweep["runs"]:
        for point in run["points"]:
            seconds[run["algorithm"]] += point.get("solve_seconds") or 0
            statuses[run["algorithm"]][point["status"]] += 1
    return {name: {"solve_seconds": round(seconds[name], 1),
                   "points": dict(sorted(statuses[name].items()))}
            for name in sorted(seconds, key=lambda n: -seconds[n])}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budgets", type=script.positive_count, default=8,
                        help="budgets per graph (run.sh's default 8)")
    parser.add_argument("--timeout", type=script.positive, default=10,
                        help="seconds per task (run.sh's default 10)")
    parser.add_argument("--remat", default=os.path.join(ROOT, "build", "remat"))
    parser.add_argument("--out", default=os.path.join(ROOT, "results",
                                                      "main_job"))
    parser.add_argument("--keep", help="keep the sweep, plots and report here")
    args = parser.parse_args()
    if not os.access(args.remat, os.X_OK):
        print(f"main_job: {args.remat}: no remat binary (build first)",
              file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory() as scratch:
        work = args.keep or scratch
        os.makedirs(work, exist_ok=True)
        sweep_path = os.path.join(work, "sweep.json")
        load_before = files.load_average()
        cpu_before = cpu_times()
        steps = {
            "sweep": timed([
                args.remat, "sweep", "--corpus",
                os.path.join(ROOT, "graphs", "corpus", "default.json"),
                "--algorithms", "all", "--budgets", str(args.budgets),
                "--timeout", f"{args.timeout:g}", "--out", sweep_path]),
            "plots": timed([
                sys.executable, os.path.join(ROOT, "scripts",
                                             "plot_tradeoff.py"),
                sweep_path, "--out", os.path.join(work, "plots"),
                "--remat", args.remat]),
            "report": timed([
                sys.executable, os.path.join(ROOT, "scripts", "report.py"),
                sweep_path, "-o", os.path.join(work, "report.html")]),
        }
        steal = steal_fraction(cpu_before, cpu_times())
        with open(sweep_path) as f:
            sweep = json.load(f)
    commit = subprocess.run(["git", "-C", ROOT, "describe", "--always",
                             "--dirty"], capture_output=True, text=True)
    doc = {
        "format": "rematbench-main-job",
        "version": 1,
        "context": files.run_context(
            commit=commit.stdout.strip(), budgets=args.budgets,
            timeout_seconds=args.timeout, load_average_before=load_before,
            cpu_steal_fraction=steal),
        "seconds": {**steps, "total": round(sum(steps.values()), 1)},
        "algorithms": per_algorithm(sweep),
    }
    os.makedirs(args.out, exist_ok=True)
    files.write_json(os.path.join(args.out, "cpu.json"), doc, indent=1)
    print(json.dumps(doc["seconds"]))
    return 0


if __name__ == "__main__":
    script.run(main)
