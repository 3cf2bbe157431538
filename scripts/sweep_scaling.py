#!/usr/bin/env python3
"""Measures how `remat sweep` scales over threads and MPI ranks.

Usage: scripts/sweep_scaling.py [--remat build/remat]
           [--out results/scaling/scaling.json] [--corpus FILE]
           [--algorithms all] [--budgets 8] [--timeout 10]
           [--tasks 10000] [--ranks 8] [--skip-corpus] [--skip-dispatch]

1. Corpus: the sweep of the corpus (default graphs/corpus/default.json)
   as 1 rank x 1 thread, 1 rank x 2 threads and 2 ranks x 1 thread
   (`mpirun -n 2`), one after the other; wall times and the speed-ups over
   1 x 1 (ratios from this one run).
2. Dispatch: TASKS budget-oblivious noremat tasks on chain:n=8 (one graph
   per task, a manifest of TASKS copies) over RANKS ranks
   (`mpirun --oversubscribe`), once with rank 0 only dispatching
   (--lead-threads 0: every task goes through a message round trip) and once
   with rank 0 solving too; and in one process for comparison. Throughput
   is tasks_run / tasks_seconds from the results' context (the running
   phase, without start-up and graph loading).

Every run's load average (before and after) is recorded: the machine may
be shared, and timings taken under load are slower. Writes one JSON file.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from rematbench import files, script

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]


def timed(command, out):
    before = files.load_average()
    start = time.monotonic()
    done = subprocess.run(command, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    seconds = time.monotonic() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)}: exit {done.returncode}\n"
                         f"{done.stderr[-2000:]}")
    with open(out, encoding="utf-8") as f:
        context = json.load(f)["context"]
    return {
        "command": " ".join(command),
        "wall_seconds": round(seconds, 3),
        "tasks_run": context["tasks_run"],
        "tasks_seconds": round(context["tasks_seconds"], 3),
        "tasks_per_second": round(context["tasks_run"] /
                                  max(context["tasks_seconds"], 1e-9), 1),
        "tasks_by_rank": context["tasks_by_rank"],
        "load_average_before": before,
        "load_average_after": files.load_average(),
    }


def same_figures(a, b):
    return subprocess.run(
        [sys.executable, os.path.join(HERE, "same_figures.py"), a, b],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def corpus_runs(o, work):
    sweep = [o.remat, "sweep", "--corpus", o.corpus, "--algorithms",
             o.algorithms, "--budgets", str(o.budgets), "--timeout",
             str(o.timeout)]
    runs = {}
    for name, prefix, threads in (("1x1", [], 1), ("1x2", [], 2),
                                  ("2x1", MPIRUN + ["-n", "2"], 1)):
        out = os.path.join(work, f"corpus_{name}.json")
        runs[name] = timed(prefix + sweep + ["--threads", str(threads),
                                             "--out", out], out)
        print(f"corpus {name}: {runs[name]['wall_seconds']} s", file=sys.stderr)
    base = runs["1x1"]["wall_seconds"]
    return {
        "corpus": o.corpus,
        "algorithms": o.algorithms,
        "budgets": o.budgets,
        "timeout_seconds": o.timeout,
        "runs": runs,
        "speedup_1_rank_2_threads": round(base / runs["1x2"]["wall_seconds"], 3),
        "speedup_2_ranks_1_thread": round(base / runs["2x1"]["wall_seconds"], 3),
        "same_figures_1x2": same_figures(os.path.join(work, "corpus_1x1.json"),
                                         os.path.join(work, "corpus_1x2.json")),
        "same_figures_2x1": same_figures(os.path.join(work, "corpus_1x1.json"),
                                         os.path.join(work, "corpus_2x1.json")),
    }


def dispatch_runs(o, work):
    manifest = os.path.join(work, "chains.json")
    with open(manifest, "w", encoding="utf-8") as f:
        json.dump({"format": "rematbench-corpus", "version": 1,
                   "graphs": [{"spec": "chain:n=8"}] * o.tasks}, f)
    sweep = [o.remat, "sweep", "--corpus", manifest, "--algorithms",
             "noremat", "--budgets", "1", "--threads", "1"]
    runs = {}
    for name, prefix, extra in (
            ("one_process", [], []),
            (f"{o.ranks}_ranks_dispatch_only", MPIRUN + ["-n", str(o.ranks)],
             ["--lead-threads", "0"]),
            (f"{o.ranks}_ranks", MPIRUN + ["-n", str(o.ranks)], [])):
        out = os.path.join(work, f"dispatch_{name}.json")
        runs[name] = timed(prefix + sweep + extra + ["--out", out], out)
        print(f"dispatch {name}: {runs[name]['tasks_per_second']} tasks/s",
              file=sys.stderr)
    only = runs[f"{o.ranks}_ranks_dispatch_only"]
    return {
        "tasks": o.tasks,
        "ranks": o.ranks,
        "runs": runs,
        "dispatched_tasks_per_second": only["tasks_per_second"],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--remat", default=os.path.join(ROOT, "build", "remat"))
    parser.add_argument("--out", default=os.path.join(ROOT, "results",
                                                      "scaling",
                                                      "scaling.json"))
    parser.add_argument("--corpus", default=os.path.join(
        ROOT, "graphs", "corpus", "default.json"))
    parser.add_argument("--algorithms", default="all")
    parser.add_argument("--budgets", type=script.positive_count, default=8)
    parser.add_argument("--timeout", type=script.positive, default=10)
    parser.add_argument("--tasks", type=script.positive_count, default=10000)
    parser.add_argument("--ranks", type=script.positive_count, default=8)
    parser.add_argument("--skip-corpus", action="store_true")
    parser.add_argument("--skip-dispatch", action="store_true")
    o = parser.parse_args()
    o.remat = os.path.abspath(o.remat)
    o.corpus = os.path.abspath(o.corpus)
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=12",
                             "HEAD"], stdout=subprocess.PIPE, text=True,
                            check=False).stdout.strip()
    report = {
        "format": "rematbench-scaling",
        "version": 1,
        "context": files.run_context(git_commit=commit),
    }
    with tempfile.TemporaryDirectory(prefix="remat_scaling_") as work:
        if not o.skip_dispatch:
            report["dispatch"] = dispatch_runs(o, work)
        if not o.skip_corpus:
            report["corpus"] = corpus_runs(o, work)
    report["context"]["load_average_after"] = files.load_average()
    files.write_json(o.out, report, indent=2)
    print(f"wrote {o.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    script.run(main)
