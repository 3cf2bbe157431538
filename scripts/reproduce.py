#!/usr/bin/env python3
"""Reproduce published tables of rematerialization papers with rematbench.

    scripts/reproduce.py kusumoto2019|kumar2019|checkmate2020|chen2016|dtr2021|rotor2019|
                        offload2016|all
        [--remat build/remat] [--out results/reproductions] [--quick]

Every "ours" figure comes from running the `remat` binary (`remat solve
--json`, `remat graph info --json`, `remat graph convert`) through
rematbench.client; the published figures are typed in, with their
source (docs/papers.md, "Published figures"), in
scripts/reproductions/<paper>.py. For each paper
the script writes results/reproductions/<paper>/solves.json (every command it
ran and the JSON it printed) and results/reproductions/<paper>.md. The
Markdown does not depend on timings except in columns marked "(s)", so
regenerating it gives the same file otherwise.

--quick runs each reproduction on small graphs (for tests); its Markdown says so.
Peer graphs are read from ../shared/peer-graphs (--shared); without them the
parts that need them are skipped with a note in the Markdown.
"""
import argparse
import os
import sys
import time

from rematbench import client, files, script
from reproductions import PAPERS  # the package scripts/reproductions/
from reproductions.common import ROOT


def bad_usage(message):
    """Exit 2 (bad usage) with one line, as remat does; 1 means failure."""
    print(message, file=sys.stderr)
    sys.exit(2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paper", choices=list(PAPERS) + ["all"])
    ap.add_argument("--remat", default=os.path.join(ROOT, "build", "remat"))
    ap.add_argument("--out", default=os.path.join(ROOT, "results", "reproductions"))
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(ROOT), "shared"))
    ap.add_argument("--quick", action="store_true", help="small graphs only (tests)")
    ap.add_argument("--jobs", type=script.positive_count, default=2, help="solves run at once")
    ap.add_argument("--milp-seconds", type=script.nonnegative, default=None,
                    help="time limit per checkmate_milp solve in the Checkmate "
                         "reproduction (default 30, 5 with --quick; 0: not run)")
    args = ap.parse_args()
    if not os.access(args.remat, os.X_OK):
        bad_usage(f"reproduce: {args.remat} is not an executable "
                         "(build it with scripts/build.sh or pass --remat)")
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        # Found now, not after minutes of solves when the files are written.
        bad_usage(f"reproduce: --out {args.out} exists and is not a "
                  "directory")
    args.remat = os.path.abspath(args.remat)
    if args.milp_seconds is None:
        args.milp_seconds = 5 if args.quick else 30
    papers = list(PAPERS) if args.paper == "all" else [args.paper]
    for p in papers:
        start = time.time()
        remat = client.Remat(args.remat, ROOT, args.jobs, name="reproduce")
        lines = PAPERS[p](remat, args)
        files.write_json(os.path.join(args.out, p, "solves.json"),
                         {"format": "rematbench-reproduction", "version": 1,
                          "paper": p, "git_commit": client.git_commit(ROOT),
                          "remat": os.path.relpath(remat.path, ROOT),
                          "calls": remat.calls()}, indent=1, sort_keys=True)
        files.write_text(os.path.join(args.out, p + ".md"),
                         "\n".join(lines).rstrip() + "\n")
        print(f"{p}: {os.path.join(args.out, p + '.md')} "
              f"({len(remat.log)} remat calls, {time.time() - start:.0f} s)")


if __name__ == "__main__":
    script.run(main)
