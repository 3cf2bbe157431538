#!/usr/bin/env python3
"""The exact methods at the size of real graphs: moccasin on each of its
solvers and checkmate_milp, beside the best heuristic, on Checkmate's
random layered graphs (100 to 1,000 nodes) and ResNet-50, and the PyTorch
ResNet-50 export (ATen ops, batch 2 at 64x64), at fractions of the NoRemat
peak.

    $REMAT_PYTHON bench/studies/moccasin_scale.py [--seconds 60] [--jobs 2]
        [--fractions 0.9,0.8,0.7] [--solvers moccasin:solver=cpsat,...]
        [--graphs G1.json,...] [--out results/moccasin_scale]
    $REMAT_PYTHON bench/studies/moccasin_scale.py --latest results/moccasin_scale

Each (graph, budget, solver) is one `remat solve --json` process with the
time limit (run `--jobs` at a time); the best heuristic is the cheapest
schedule within the budget of the registry's algorithms that are not exact and do not
offload (each with --heuristic-seconds). Writes <out>/cpu.json and <out>/cpu.md:
status, cost over the best heuristic's, the class's lower bound
(`staged_lower_bound_cost`) and gap, the gap to the base cost (a bound on
every schedule), and the wall time of each run.
"""
import argparse
import concurrent.futures
import datetime
import functools
import json
import os
import platform
import re
import subprocess
import sys
import time

import rematbench as rb
from rematbench import files, script

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PEER = os.path.join(ROOT, "..", "shared", "peer-graphs", "checkmate2020")
GRAPHS = [os.path.join(PEER, f) for f in (
    "random_layered_n100_w0.27_nlv0.75_ed0.2_scd0.14.json",
    "random_layered_n250_w0.43_nlv0.75_ed0.2_scd0.14.json",
    "random_layered_n500_w0.36_nlv0.75_ed0.2_scd0.14.json",
    "random_layered_n1000_w0.31_nlv0.75_ed0.2_scd0.14.json",
    "ResNet50_256_224x224_train.json")] + [
    os.path.join(ROOT, "graphs", "corpus", "torch",
                 "resnet50_b2_i64_aten.json")]
SOLVERS = ["moccasin:solver=cpsat", "moccasin", "checkmate_milp"]
# Schedules that move values to host memory are another model's.
OFFLOADING = ("vdnn", "swap_remat")


def solver_specs(text):
    """The algorithm[:key=value,...] specs of --solvers: pieces separated
    by ',' or ';', where a key=value piece (an '=' with no ':' before it)
    is one more parameter of the spec before it."""
    specs = []
    for piece in filter(None, text.replace(";", ",").split(",")):
        if "=" in piece.split(":")[0]:
            if not specs:
                sys.exit(bad_input(f"--solvers: '{piece}' is a parameter "
                                   "with no algorithm before it"))
            specs[-1] += "," + piece
        else:
            specs.append(piece)
    return specs


def gap_text(cost, bound):
    """(cost - bound) / cost as a percentage, or '-' without both."""
    return f"{(cost - bound) / cost:.2%}" if cost and bound is not None \
        else "-"


def class_bound(run):
    """The run's lower bound on its class's cost, or None. A bound of 0,
    which checkmate_milp reports when neither a solver nor the LP
    relaxation gave one in time, says nothing: no cost is below 0."""
    return run["lower_bound_cost"] or None


def answer_bound(run, base_cost):
    """What bounds the answer's cost: the class's bound where the answer
    is in the class; the base cost where it is a heuristic's schedule
    outside the class, which the class's bound does not bound."""
    return base_cost if run.get("outside_class") else class_bound(run)


def solve(remat, graph, spec, budget, seconds):
    """One `remat solve --json`: its record, with the process's wall time."""
    name, _, params = spec.partition(":")
    cmd = [remat, "solve", "--graph", graph, "--algorithm", name, "--budget",
           str(budget), "--timeout", str(seconds), "--json"]
    for p in filter(None, params.split(",")):
        cmd += ["-p", p]
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    try:
        doc = json.loads(r.stdout)
    except json.JSONDecodeError:
        doc = {"status": "error",
               "message": (r.stderr.strip() or f"exit {r.returncode}")[:300]}
    details = doc.get("details") or {}
    return {"solver": spec, "status": doc.get("status"),
            "cost": doc.get("cost") if doc.get("valid") else None,
            "peak_bytes": doc.get("peak_bytes"),
            "lower_bound_cost": details.get("staged_lower_bound_cost"),
            "outside_class": details.get("outside_class"),
            "optimal": doc.get("optimal"),
            "message": (doc.get("message") or "")[:1000],
            "wall_seconds": round(wall, 1)}


def best_heuristic(g, budget, seconds):
    best = None
    for a in rb.algorithms():
        if a.exact or a.name in OFFLOADING:
            continue
        try:
            s = rb.solve(g, a.name, budget, timeout=seconds).json
        except rb.Error:
            continue
        if s["status"] == "feasible" and (best is None or
                                          s["cost"] < best["cost"]):
            best = {"algorithm": a.name, "cost": s["cost"]}
    return best


def outside_class(message):
    """The fitting heuristics a message names as outside moccasin's class."""
    i = message.find("outside the class: ")
    return ", ".join(re.findall(r"(\w+) \(", message[i:])) if i >= 0 else ""


def report(doc, path):
    lines = ["# Exact methods at the size of real graphs", "",
             f"Measured {doc['date']} on {doc['host']} ({doc['cpus']} CPUs,"
             f" load average {doc['load_average_start']} at the start, "
             f"{doc['load_average_end']} at the end), commit "
             f"{doc['git_commit']}, {doc['seconds']} s limit per run, "
             f"{doc['jobs']} runs at a time. Command: `{doc['command_line']}`.",
             "",
             "`cost / best`: the schedule's cost over the cheapest schedule "
             "within the budget of the heuristics (the registry's algorithms "
             "that are neither exact nor offloading), or the cost itself "
             "where none fits. `bound`: the class's lower bound on the "
             "cost (`staged_lower_bound_cost`: optimal among staged "
             "schedules, in moccasin's case computing each value at most "
             "twice) over the same; `gap`: (cost - bound) / cost, where the "
             "answer is in the class (`base gap` bounds the others). "
             "`mem LB`: "
             "the memory lower bound (`remat graph info`'s "
             "lower_bound_bytes, no schedule peaks lower) over the budget. "
             "`base gap`: (cost - base cost) / cost, where the base cost "
             "(each needed node computed once) bounds every schedule's "
             "cost, in the class or not. "
             "`outside`: the heuristics of moccasin's warm start whose "
             "schedules fit but are not in its class (staged, a value "
             "computed more than twice, or a staged peak over the budget); "
             "`answered`: the one whose schedule is the answer, where it is "
             "cheaper than the class's or the class has none.",
             "",
             "| graph | budget | mem LB | best heuristic | solver | status | "
             "cost / best | bound / best | gap | base gap | s | outside | "
             "answered |",
             "|---|---|---:|---|---|---|---:|---:|---:|---:|---:|---|---|"]
    for p in doc["points"]:
        best = p["best_heuristic"]
        ref = best["cost"] if best else None
        for r in p["runs"]:
            cost, lb = r["cost"], class_bound(r)
            lines.append(
                f"| {p['graph']} | {p['fraction']:.0%} | "
                + (f"{p['memory_lower_bound_bytes'] / p['budget_bytes']:.2f}"
                   if "memory_lower_bound_bytes" in p else "-") + " | "
                + (f"{best['algorithm']}" if best else "none fits")
                + f" | {r['solver']} | {r['status']}"
                + (" (optimal)" if r.get("optimal") else "") + " | "
                + (f"{cost / ref:.4f}" if cost and ref else
                   "-" if cost is None else f"{cost}") + " | "
                + (f"{lb / ref:.4f}" if lb is not None and ref else "-")
                + " | " + gap_text(cost, None if r.get("outside_class")
                                   else lb)
                + " | " + gap_text(cost, p.get("base_cost"))
                + f" | {r['wall_seconds']} | {outside_class(r['message'])} | "
                + (r.get("outside_class") or "") + " |")
    files.write_text(path, "\n".join(lines) + "\n")


def bad_input(message):
    """One line on stderr; the exit status 2 of bad input."""
    print(f"moccasin_scale: {message}", file=sys.stderr)
    return 2


def graph_label(path):
    return os.path.basename(path).split("_w")[0].replace(".json", "")


def latest(folder):
    """<folder>/latest.md: for each graph, budget and solver, the newest run
    among the cpu.json files under `folder` (runs are made one part at a
    time, each at its commit), with that file, commit and limit."""
    if not os.path.isdir(folder):
        sys.exit(bad_input(f"{folder}: not a folder"))
    newest = {}
    for root, _, names in os.walk(folder):
        if "cpu.json" not in names:
            continue
        path = os.path.join(root, "cpu.json")
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(bad_input(f"{path}: {e}"))
        for p in doc["points"]:
            for r in p["runs"]:
                key = (p["graph"], p["fraction"], r["solver"])
                if key not in newest or doc["date"] > newest[key][0]["date"]:
                    newest[key] = (doc, p, r, os.path.relpath(path, folder))
    paths = {graph_label(g): g for g in GRAPHS}
    order = {label: i for i, label in enumerate(paths)}

    @functools.cache
    def base_cost(label):
        """For runs written before points carried their base cost."""
        path = paths.get(label)
        return rb.load_graph(path).base_cost if path else None
    lines = ["# Exact methods at the size of real graphs: the latest run of "
             "each point", "",
             f"Written by `bench/studies/moccasin_scale.py --latest {folder}` from "
             "the cpu.json files below this folder: for each graph, budget "
             "(fraction of the NoRemat peak) and solver, the newest run, "
             "with the file, the commit and the time limit it ran at (each "
             "file's cpu.md gives its command, machine and load). Costs "
             "over the graph's base cost (each needed node computed once), "
             "which bounds every schedule's cost; `bound`: the class's "
             "lower bound (`staged_lower_bound_cost`); `answered`: the "
             "heuristic whose schedule, outside the class, is the answer; "
             "`gap`: (cost - bound) / cost, to the base cost where the "
             "answer is outside the class, which the class's bound does "
             "not bound.",
             "",
             "| graph | budget | solver | limit s | status | cost / base | "
             "bound / base | gap | answered | s | commit | file |",
             "|---|---|---|---:|---|---:|---:|---:|---|---:|---|---|"]
    for key in sorted(newest, key=lambda k: (order.get(k[0], len(order)),
                                              k[0], -k[1], k[2])):
        doc, p, r, path = newest[key]
        b = p.get("base_cost") or base_cost(p["graph"])
        cost, lb = r["cost"], class_bound(r)
        lines.append(
            f"| {p['graph']} | {p['fraction']:.0%} | {r['solver']} | "
            f"{doc['seconds']:g} | {r['status']}"
            + (" (optimal)" if r.get("optimal") else "") + " | "
            + (f"{cost / b:.4f}" if cost and b else "-") + " | "
            + (f"{lb / b:.4f}" if lb is not None and b else "-") + " | "
            + gap_text(cost, answer_bound(r, b))
            + f" | {r.get('outside_class') or ''} | {r['wall_seconds']} | "
            f"{doc['git_commit']} | {path} |")
    files.write_text(os.path.join(folder, "latest.md"),
                     "\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graphs", default=",".join(GRAPHS))
    ap.add_argument("--fractions", default="0.9,0.8,0.7")
    ap.add_argument("--points", default="",
                    help="only these NODES@FRACTION points, comma-separated "
                         "(250@0.7: the 250-node graph at 70%%); default: "
                         "every graph at every fraction")
    ap.add_argument("--solvers", default=",".join(SOLVERS),
                    help="algorithm[:key=value,...] specs, separated by "
                         "',' or ';' (a key=value goes with the spec "
                         "before it)")
    ap.add_argument("--seconds", type=script.positive, default=60)
    ap.add_argument("--heuristic-seconds", type=script.positive, default=10)
    ap.add_argument("--jobs", type=script.positive_count, default=2)
    ap.add_argument("--out", default=os.path.join(ROOT, "results",
                                                  "moccasin_scale"))
    ap.add_argument("--latest", metavar="FOLDER",
                    help="measure nothing: write FOLDER/latest.md, the "
                         "newest run of each point in the cpu.json files "
                         "below FOLDER")
    args = ap.parse_args()
    if args.latest:
        latest(args.latest)
        return
    remat = os.environ.get("REMAT_BINARY", os.path.join(ROOT, "build",
                                                        "remat"))
    only = {(int(n), float(f)) for n, f in
            (p.split("@") for p in args.points.split(",") if p)}
    solvers = solver_specs(args.solvers)
    git = subprocess.run(["git", "-C", ROOT, "describe", "--always",
                          "--dirty"], capture_output=True,
                         text=True).stdout.strip()
    doc = {"format": "rematbench-moccasin-scale", "version": 1,
           "date": datetime.datetime.now(datetime.timezone.utc)
           .isoformat(timespec="seconds"),
           "host": platform.node(), "cpus": os.cpu_count(),
           "git_commit": git, "command_line": " ".join(sys.argv),
           "seconds": args.seconds, "jobs": args.jobs,
           "load_average_start": [round(x, 2) for x in os.getloadavg()],
           "points": []}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for path in args.graphs.split(","):
            g = rb.load_graph(path)
            for f in (float(x) for x in args.fractions.split(",")):
                if only and (g.num_nodes, f) not in only:
                    continue
                budget = int(g.noremat_peak_bytes * f)
                point = {"graph": graph_label(path), "nodes": g.num_nodes,
                         "fraction": f, "budget_bytes": budget,
                         "memory_lower_bound_bytes": g.lower_bound_bytes,
                         "base_cost": g.base_cost,
                         "best_heuristic": best_heuristic(
                             g, budget, args.heuristic_seconds)}
                point["runs"] = list(pool.map(
                    lambda s: solve(remat, path, s, budget, args.seconds),
                    solvers))
                for r in point["runs"]:
                    print(point["graph"], f, r["solver"], r["status"],
                          r["cost"], r["lower_bound_cost"], r["wall_seconds"],
                          file=sys.stderr, flush=True)
                doc["points"].append(point)
                doc["load_average_end"] = [round(x, 2)
                                           for x in os.getloadavg()]
                files.write_json(os.path.join(args.out, "cpu.json"), doc,
                                 indent=1)
                report(doc, os.path.join(args.out, "cpu.md"))


if __name__ == "__main__":
    script.run(main)
