#!/usr/bin/env python3
"""Kills a sweep with SIGKILL at random moments and checks every resume.

Usage: scripts/sweep_kill_bench.py [--remat build/remat] [--trials 10]
           [--seed N] [--latest F] [--out FILE] -- SWEEP ARGUMENTS...

Runs `remat sweep SWEEP ARGUMENTS` once uninterrupted (the reference, T
seconds), then per trial: starts the same sweep with a fresh journal, kills
it (SIGKILL, its whole process group) after a delay drawn uniformly from
(0, LATEST x T) (--latest, default 1), checks that no results file or a complete one was left, resumes it
with --resume, and checks that
  - the resumed results have the reference's figures (scripts/same_figures.py:
    everything but the context, solve_seconds and schedule_file),
  - the journal holds every task exactly once: no task that had finished
    (was journaled) before the kill was solved again, none is missing.
Writes a JSON report (--out) with the machine's load, and exits 1 if any
trial failed. Use sweep arguments whose figures do not depend on timing
(time limits nothing reaches).
"""

import argparse
import collections
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

from rematbench import files, script

HERE = os.path.dirname(os.path.abspath(__file__))


def sweep(remat, args, out, extra=()):
    return [remat, "sweep", *args, "--out", out, *extra]


def run(command, cwd):
    done = subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)}: exit {done.returncode}\n"
                         f"{done.stderr}")
    return done


def journal_keys(path):
    """Task keys of a journal's complete entry lines."""
    keys = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for line in lines[1:]:
        try:
            keys.append(json.dumps(json.loads(line)["key"], sort_keys=True))
        except (ValueError, KeyError, TypeError):
            pass  # the incomplete last line of a killed run
    return keys


def trial(remat, args, work, reference, delay):
    out = os.path.join(work, "r.json")
    journal = out + ".journal"
    for path in (out, journal):
        if os.path.exists(path):
            os.remove(path)
    process = subprocess.Popen(sweep(remat, args, out), cwd=work,
                               stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL,
                               start_new_session=True)
    time.sleep(delay)
    killed = process.poll() is None
    if killed:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    result = {"delay_seconds": round(delay, 3), "killed": killed}
    result["results_file_left"] = os.path.exists(out)
    if os.path.exists(out):  # only ever a complete file (renamed into place)
        with open(out, encoding="utf-8") as f:
            json.load(f)
    before = journal_keys(journal) if os.path.exists(journal) else []
    result["tasks_journaled_at_kill"] = len(before)
    resumed = run(sweep(remat, args, out, ["--resume"]), work)
    result["resume_notes"] = [line for line in resumed.stderr.splitlines()
                              if line.startswith("remat:")]
    after = journal_keys(journal)
    counts = collections.Counter(after)
    result["tasks"] = len(counts)
    result["tasks_solved_twice"] = sum(1 for c in counts.values() if c > 1)
    result["journaled_tasks_lost"] = len(set(before) - set(after))
    with open(out, encoding="utf-8") as f:
        context = json.load(f)["context"]
    result["resumed_tasks"] = context["resumed_tasks"]
    same = subprocess.run(
        [sys.executable, os.path.join(HERE, "same_figures.py"), reference, out],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    result["same_figures"] = same.returncode == 0
    if not result["same_figures"]:
        result["differences"] = same.stdout.splitlines()[-5:]
    result["ok"] = (result["same_figures"]
                    and result["tasks_solved_twice"] == 0
                    and result["journaled_tasks_lost"] == 0
                    and result["resumed_tasks"] == len(set(before))
                    and result["tasks"] == len(after))
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--remat", default=os.path.join(HERE, "..", "build",
                                                        "remat"))
    parser.add_argument("--trials", type=script.positive_count, default=10)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--latest", type=script.positive, default=1.0,
                        help="latest kill, as a fraction of the reference "
                        "run's time")
    parser.add_argument("--out", help="JSON report (default: stdout)")
    parser.add_argument("sweep_args", nargs="+")
    options = parser.parse_args()
    remat = os.path.abspath(options.remat)
    seed = options.seed if options.seed is not None else random.randrange(10**6)
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="remat_kill_") as work:
        reference = os.path.join(work, "reference.json")
        start = time.monotonic()
        run(sweep(remat, options.sweep_args, reference), work)
        seconds = time.monotonic() - start
        trials = []
        for i in range(options.trials):
            trials.append(trial(remat, options.sweep_args, work, reference,
                                rng.uniform(0, options.latest * seconds)))
            print(f"trial {i + 1}/{options.trials}: "
                  f"{json.dumps(trials[-1])}", file=sys.stderr)
    report = {
        "format": "rematbench-kill-resume",
        "version": 1,
        "context": {**files.run_context(), "seed": seed},
        "reference_seconds": round(seconds, 3),
        "trials": trials,
        "summary": {
            "trials": len(trials),
            "killed_mid_run": sum(t["killed"] for t in trials),
            "all_same_figures": all(t["same_figures"] for t in trials),
            "tasks_solved_twice": sum(t["tasks_solved_twice"] for t in trials),
            "journaled_tasks_lost": sum(t["journaled_tasks_lost"]
                                        for t in trials),
            "ok": all(t["ok"] for t in trials),
        },
    }
    text = json.dumps(report, indent=2) + "\n"
    if options.out:
        files.write_text(options.out, text)
    else:
        sys.stdout.write(text)
    print(f"{len(trials)} trials, {report['summary']['killed_mid_run']} "
          f"killed mid-run: {'ok' if report['summary']['ok'] else 'FAILED'}",
          file=sys.stderr)
    return 0 if report["summary"]["ok"] else 1


if __name__ == "__main__":
    script.run(main)
