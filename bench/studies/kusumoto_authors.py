#!/usr/bin/env python3
"""rematbench's Kusumoto DPs beside the authors' own code, timed at the
budgets of scripts/kusumoto_dp_grid.py on their seven graphs.

    $REMAT_PYTHON bench/studies/kusumoto_authors.py --authors DIR
        [--grid results/kusumoto_dp_grid.json] [--repeat 1]
        [--out results/kusumoto_dp_grid/authors] [--quick]

DIR holds the authors' two binaries, built from pfnet-research/recompute
outside this checkout (never commit its code):

    g++ -std=c++11 -O3 mksch/DP.cpp mksch/dag_dp.cpp -o DIR/DP    # exact
    g++ -std=c++11 -O3 mksch/DP2.cpp mksch/dag_dp.cpp -o DIR/DP2  # approximate

At every budget of the grid file (both of its grids; each budget once per
graph), `remat solve -a dp_exact` and the authors' `DP -b BUDGET`, then
`dp_approx` and `DP2`, one process at a time, taking turns which goes first.
The time is each process's CPU time (user + system, from the kernel's
accounting of the finished child), the whole process: reading the graph,
enumerating the lower sets and every DP run. The authors' code runs one
time-centric DP at the budget and answers a schedule or IMPOSSIBLE by its
own memory estimate; `remat` answers with its default strategy=auto, judged
by the simulator (status and peak in the table). Writes <out>.json (every
command, its answer and time, the load average before each pair) and
<out>.md.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

from rematbench import files, script

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GB = 1e9
# The graphs of scripts/kusumoto_dp_grid.py, in its order.
GRAPHS = [("PSPNet", "cg_pspnet.txt"), ("U-Net", "cg_unet.txt"),
          ("ResNet-50", "cg_resnet50.txt"), ("ResNet-152", "cg_resnet152.txt"),
          ("VGG19", "cg_vgg19.txt"), ("DenseNet-161", "cg_densenet.txt"),
          ("GoogLeNet", "cg_googlenet.txt")]
PAIRS = [("dp_exact", "DP"), ("dp_approx", "DP2")]
TIMEOUT = 600  # seconds, for either side; only keeps a regression from hanging


def timed(command, stdin=None, cwd=None, timeout=TIMEOUT):
    """Runs `command`; returns (stdout, exit status, CPU seconds, wall
    seconds), exit status None when it was killed at `timeout` seconds.
    CPU time is the child's own (RUSAGE_CHILDREN before and after it is
    reaped, also when killed)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    with open(stdin) if stdin else open(os.devnull) as f:
        try:
            done = subprocess.run(command, stdin=f, cwd=cwd,
                                  capture_output=True, text=True,
                                  timeout=timeout)
            out, code = done.stdout, done.returncode
        except subprocess.TimeoutExpired:
            out, code = "", None
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return out, code, round(cpu, 3), round(wall, 3)


def ours(remat, algorithm, graph, budget):
    command = [remat, "solve", "--json", "-a", algorithm, "-g", graph,
               "-b", str(budget), "--timeout", str(TIMEOUT)]
    out, code, cpu, wall = timed(command)
    answer = json.loads(out) if out.strip() else {}
    d = answer.get("details") or {}
    return {"command": command, "exit": code, "cpu_seconds": cpu,
            "wall_seconds": wall, "status": answer.get("status"),
            "peak_bytes": answer.get("peak_bytes"),
            "overhead": answer.get("overhead"), "dp_runs": d.get("dp_runs"),
            "strategy": d.get("strategy")}


def authors(binary, graph, budget, scratch, timeout):
    # The authors' binary writes forward_without_input.dot into its working
    # folder: a scratch one.
    command = [binary, "-b", str(budget)]
    out, code, cpu, wall = timed(command, stdin=graph, cwd=scratch,
                                 timeout=timeout)
    found = bool(out.strip()) and "IMPOSSIBLE" not in out
    answer = ("schedule" if found else "IMPOSSIBLE") if code is not None \
        else f"stopped at {timeout:g} s"
    return {"command": command + ["<", graph], "exit": code, "cpu_seconds": cpu,
            "wall_seconds": wall, "stopped": code is None, "answer": answer,
            "schedule_lines": len(out.splitlines()) if found else 0}


def grid_budgets(path, quick):
    """(network, file, grid, budget) from kusumoto_dp_grid.py's JSON."""
    with open(path) as f:
        doc = json.load(f)
    names = dict((f, n) for n, f in GRAPHS)
    seen, rows = set(), []
    for p in doc["points"]:
        key = (p["file"], p["budget_bytes"])
        if key in seen:
            continue
        seen.add(key)
        rows.append((names.get(p["file"], p["file"]), p["file"], p["grid"],
                     p["budget_bytes"]))
    order = {f: i for i, (_, f) in enumerate(GRAPHS)}
    rows.sort(key=lambda r: (order.get(r[1], 99), r[3]))
    if quick:
        rows = [r for r in rows if r[1] == "cg_vgg19.txt"][:2]
    return rows, doc.get("git_commit")


def table(head, rows):
    lines = ["| " + " | ".join(head) + " |",
             "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--authors", required=True,
                    help="folder with the authors' built binaries DP and DP2")
    ap.add_argument("--remat", default=os.path.join(ROOT, "build", "remat"))
    ap.add_argument("--shared",
                    default=os.path.join(os.path.dirname(ROOT), "shared"))
    ap.add_argument("--grid", default=os.path.join(ROOT, "results",
                                                   "kusumoto_dp_grid.json"),
                    help="scripts/kusumoto_dp_grid.py's JSON: its budgets")
    ap.add_argument("--repeat", type=script.positive_count, default=1,
                    help="runs of each side per budget (the least CPU time "
                         "is reported)")
    ap.add_argument("--out", default=os.path.join(
        ROOT, "results", "kusumoto_dp_grid", "authors"),
        help="output path without extension (.md and .json are written)")
    ap.add_argument("--graphs", default="",
                    help="only these graph files, comma-separated "
                         "(cg_googlenet.txt,...); default: all seven")
    ap.add_argument("--authors-timeout", type=script.positive, default=TIMEOUT,
                    help="stop an authors' run after this many seconds: its "
                         "CPU time until then is a lower bound of theirs")
    ap.add_argument("--quick", action="store_true",
                    help="VGG19 at two budgets (tests)")
    args = ap.parse_args()
    binaries = {b: os.path.join(args.authors, b) for _, b in PAIRS}
    for path in [args.remat] + list(binaries.values()):
        if not os.access(path, os.X_OK):
            print(f"kusumoto_authors: {path} is not an executable (see "
                  "--help for how to build it)", file=sys.stderr)
            return 2
    folder = os.path.join(args.shared, "peer-graphs", "kusumoto2019")
    if not os.path.isdir(folder):
        print(f"kusumoto_authors: {folder} is missing", file=sys.stderr)
        return 2
    files.note_input(args.grid)
    budgets, grid_commit = grid_budgets(args.grid, args.quick)
    if args.graphs:
        wanted = set(args.graphs.split(","))
        budgets = [b for b in budgets if b[1] in wanted]
    commit = subprocess.run(["git", "-C", ROOT, "describe", "--always",
                             "--dirty"], capture_output=True, text=True)
    points, turn = [], 0
    with tempfile.TemporaryDirectory() as scratch:
        for name, f, grid, budget in budgets:
            graph = os.path.join(folder, f)
            for algorithm, binary in PAIRS:
                load = files.load_average()
                runs = {"ours": [], "authors": []}
                for _ in range(args.repeat):
                    sides = [("ours", lambda: ours(args.remat, algorithm,
                                                   graph, budget)),
                             ("authors", lambda: authors(
                                 binaries[binary], graph, budget, scratch,
                                 args.authors_timeout))]
                    if turn % 2:
                        sides.reverse()
                    turn += 1
                    for side, run in sides:
                        runs[side].append(run())
                best = {s: min(r, key=lambda x: x["cpu_seconds"])
                        for s, r in runs.items()}
                points.append({
                    "network": name, "file": f, "grid": grid,
                    "budget_bytes": budget, "algorithm": algorithm,
                    "authors_binary": binary, "load_average": load,
                    "ours": best["ours"], "authors": best["authors"],
                    "cpu_seconds": {s: [x["cpu_seconds"] for x in r]
                                    for s, r in runs.items()}})
                p = points[-1]
                print(f"{name} {budget} {algorithm}: ours "
                      f"{p['ours']['cpu_seconds']} s ({p['ours']['status']}), "
                      f"authors {p['authors']['cpu_seconds']} s "
                      f"({p['authors']['answer']})", file=sys.stderr)
                # After each point, so that a run cut short keeps its table.
                slower = write(args, points, commit, grid_commit)
    print(f"kusumoto_authors: {args.out}.md ({len(points)} points, "
          f"{len(slower)} slower)")
    return 0


def write(args, points, commit, grid_commit):
    rows, slower = [], []
    for p in points:
        o, a = p["ours"], p["authors"]
        ratio = o["cpu_seconds"] / a["cpu_seconds"] if a["cpu_seconds"] else None
        # A stopped run's time is a lower bound of theirs: the ratio an
        # upper bound of ours over theirs.
        below = "< " if a.get("stopped") else ""
        # Below 0.05 s both are start-up costs; a ratio there says nothing.
        if (a["cpu_seconds"] >= 0.05 and o["cpu_seconds"] > a["cpu_seconds"]
                and not a.get("stopped")):
            slower.append(p)
        rows.append([p["network"], p["grid"], f"{p['budget_bytes'] / GB:.3f}",
                     p["algorithm"], o["status"],
                     "–" if o["peak_bytes"] is None
                     else f"{o['peak_bytes'] / GB:.3f}",
                     "–" if o["dp_runs"] is None else o["dp_runs"],
                     f"{o['cpu_seconds']:.3f}", a["answer"],
                     below.replace("< ", "> ") + f"{a['cpu_seconds']:.3f}",
                     "–" if ratio is None else f"{below}{ratio:.2f}"])
    loads = [x for p in points for x in p["load_average"][:1]]
    cmd = "bench/studies/kusumoto_authors.py --authors DIR" + (
        " --quick" if args.quick else "") + (
        f" --repeat {args.repeat}" if args.repeat != 1 else "") + (
        f" --graphs {args.graphs}" if args.graphs else "") + (
        f" --authors-timeout {args.authors_timeout:g}"
        if args.authors_timeout != TIMEOUT else "") + (
        f" --out {os.path.relpath(args.out, ROOT)}"
        if os.path.relpath(args.out, ROOT) != os.path.join(
            "results", "kusumoto_dp_grid", "authors") else "")
    lines = [
        "# The Kusumoto DPs beside the authors' code", "",
        f"Generated by `{cmd}` (do not edit by hand), with the authors' "
        "pfnet-research/recompute built outside the checkout (the script's "
        "--help says how). Budgets: every budget of "
        "`results/kusumoto_dp_grid.json` (both grids). CPU seconds of the "
        "whole process (user + system), one process at a time, the two sides "
        "taking turns to go first"
        + (f", the least of {args.repeat} runs" if args.repeat > 1 else "")
        + f"; 1-minute load average {min(loads):.2f}-{max(loads):.2f} before "
        "the pairs (2 cores, shared). An authors' run stopped at "
        "--authors-timeout shows its CPU time until then (`>`), a lower bound "
        "of theirs. The authors' code runs one time-centric "
        "DP and answers by its memory estimate; `remat` answers with "
        "strategy=auto, judged by the simulator (status, peak in GB = 1e9 "
        "bytes, its DP runs). Every command and answer is in "
        f"[`{os.path.basename(args.out)}.json`]({os.path.basename(args.out)}"
        ".json).", ""]
    if args.quick:
        lines += ["**Quick mode**: VGG19 at two budgets (tests).", ""]
    if slower:
        lines += ["**Slower than the authors' code** (their CPU time at least "
                  "0.05 s):", ""]
        lines += [f"- {p['network']} at {p['budget_bytes'] / GB:.3f} GB, "
                  f"{p['algorithm']}: {p['ours']['cpu_seconds']:.2f} s against "
                  f"{p['authors']['cpu_seconds']:.2f} s" for p in slower] + [""]
    else:
        lines += ["At no budget is `remat` slower than the authors' code "
                  "(where theirs takes at least 0.05 s; below that both are "
                  "start-up).", ""]
    worst = max((p for p in points if p["authors"]["cpu_seconds"] >= 0.05),
                key=lambda p: p["ours"]["cpu_seconds"]
                / p["authors"]["cpu_seconds"], default=None)
    if worst:
        lines += [f"Largest ratio: {worst['network']} at "
                  f"{worst['budget_bytes'] / GB:.3f} GB, {worst['algorithm']}, "
                  f"{worst['ours']['cpu_seconds']:.2f} s against "
                  f"{worst['authors']['cpu_seconds']:.2f} s.", ""]
    lines += table(["network", "grid", "budget (GB)", "DP", "remat status",
                    "remat peak", "DP runs", "remat CPU (s)", "authors' answer",
                    "authors' CPU (s)", "ratio"], rows)
    doc = {"format": "rematbench-kusumoto-authors", "version": 1,
           "context": files.run_context(
               commit=commit.stdout.strip(), grid=os.path.relpath(
                   args.grid, ROOT), grid_commit=grid_commit,
               repeat=args.repeat, authors_timeout=args.authors_timeout),
           "points": points, "slower": len(slower)}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    files.write_json(args.out + ".json", doc, indent=1)
    files.write_text(args.out + ".md", "\n".join(lines) + "\n")
    return slower


if __name__ == "__main__":
    script.run(main)
