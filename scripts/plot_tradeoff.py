#!/usr/bin/python3
"""Plot memory / compute tradeoff curves from a rematbench results file.

One figure per graph, in the style of the Checkmate paper: x = memory budget
(readable units), y = overhead (cost / base cost), one step curve per
algorithm giving its best feasible result at or below each budget, the
memory lower bound and the NoRemat peak as vertical lines, and the proven
optimum (points whose proven lower bound equals their cost) as its own curve.

    scripts/plot_tradeoff.py results/default/sweep.json --out results/default/plots
"""
import argparse
import json
import math
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

UNITS = [("B", 1), ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30),
         ("TiB", 1 << 40)]
LINESTYLES = ["-", "--", "-.", ":"]
MARKERS = ["o", "s", "^", "v", "D", "P", "X", "*", "<", ">"]


def byte_unit(largest):
    """The largest unit in which `largest` is at least 1."""
    name, scale = UNITS[0]
    for unit_name, unit_scale in UNITS:
        if largest >= unit_scale:
            name, scale = unit_name, unit_scale
    return name, scale


def run_label(run):
    params = ",".join(f"{k}={v}" for k, v in sorted(run["params"].items()))
    return run["algorithm"] + (f" ({params})" if params else "")


def best_so_far(points):
    """(budget, overhead) steps: the best feasible overhead at or below each
    budget; budgets before the first feasible point are left out."""
    steps, best = [], math.inf
    for point in sorted(points, key=lambda p: p["budget_bytes"]):
        if point["status"] == "feasible" and point["overhead"] is not None:
            best = min(best, point["overhead"])
        if best < math.inf:
            steps.append((point["budget_bytes"], best))
    return steps


def optimum_points(runs):
    """(budget, overhead) where some point proved a global optimum: its
    lower_bound_cost equals its own cost (only exact methods report one;
    bounds of the staged Checkmate class are in details and not used)."""
    optimum = {}
    for run in runs:
        for point in run["points"]:
            if (point["status"] == "feasible"
                    and point.get("lower_bound_cost") is not None
                    and point["lower_bound_cost"] == point["cost"]):
                budget = point["budget_bytes"]
                optimum[budget] = min(optimum.get(budget, math.inf),
                                      point["overhead"])
    return sorted(optimum.items())


def plot_graph(graph, runs, out_dir, include_static, formats, log_y):
    offset = graph["static_bytes"] if include_static else 0
    largest = graph["noremat_peak_bytes"] + offset
    unit, scale = byte_unit(max(largest, 1))

    def x(b):
        return (b + offset) / scale

    fig, ax = plt.subplots(figsize=(8, 5))
    colors = plt.get_cmap("tab10").colors
    for i, run in enumerate(sorted(runs, key=run_label)):
        steps = best_so_far(run["points"])
        label = run_label(run)
        if not steps:
            label += " (no feasible point)"
            ax.plot([], [], label=label, color=colors[i % 10])
            continue
        xs = [x(b) for b, _ in steps]
        ys = [o for _, o in steps]
        ax.step(xs, ys, where="post", label=label, color=colors[i % 10],
                linestyle=LINESTYLES[(i // 10) % len(LINESTYLES)],
                marker=MARKERS[i % len(MARKERS)], markersize=4, alpha=0.85)
    optimum = optimum_points(runs)
    if optimum:
        ax.step([x(b) for b, _ in optimum], [o for _, o in optimum],
                where="post", color="black", linestyle="--", linewidth=2,
                label="optimum (proven)")
    ax.axvline(x(graph["lower_bound_bytes"]), color="grey", linestyle=":",
               label="memory lower bound")
    ax.axvline(x(graph["noremat_peak_bytes"]), color="grey", linestyle="--",
               label="NoRemat peak")
    what = "total memory (incl. static)" if include_static else \
        "activation memory budget"
    ax.set_xlabel(f"{what} [{unit}]")
    ax.set_ylabel("overhead (cost / base cost)")
    largest_overhead = max((o for run in runs for _, o in best_so_far(
        run["points"])), default=1)
    if log_y == "on" or (log_y == "auto" and largest_overhead > 4):
        ax.set_yscale("log")
    ax.set_title(f"{graph['name']}  ({graph['nodes']} nodes)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="upper right", framealpha=0.9)
    fig.tight_layout()
    stem = re.sub(r"[^A-Za-z0-9._=-]+", "_", graph["name"]).strip("_")
    paths = []
    for fmt in formats:
        path = os.path.join(out_dir, f"{stem}.{fmt}")
        fig.savefig(path, dpi=120)
        paths.append(path)
    plt.close(fig)
    return paths


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", help="results JSON written by remat sweep")
    parser.add_argument("--graph", action="append",
                        help="only this graph (by name; repeatable)")
    parser.add_argument("--out", default="plots", help="output directory")
    parser.add_argument("--include-static", action="store_true",
                        help="add the graph's static bytes to the x axis")
    parser.add_argument("--log-y", choices=["auto", "on", "off"],
                        default="auto",
                        help="logarithmic overhead axis (auto: when some "
                        "curve exceeds 4x)")
    parser.add_argument("--formats", default="png,pdf",
                        help="comma-separated output formats (default png,pdf)")
    args = parser.parse_args()

    try:
        with open(args.results) as f:
            results = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        print(f"plot_tradeoff: {args.results}: {e}", file=sys.stderr)
        return 2
    if results.get("format") != "rematbench-results":
        print(f"plot_tradeoff: {args.results}: not a rematbench results file",
              file=sys.stderr)
        return 2
    graphs = results["graphs"]
    if args.graph:
        known = {g["name"] for g in graphs}
        missing = [g for g in args.graph if g not in known]
        if missing:
            print(f"plot_tradeoff: {args.results}: no graph named "
                  f"{', '.join(missing)}", file=sys.stderr)
            return 2
        graphs = [g for g in graphs if g["name"] in args.graph]
    os.makedirs(args.out, exist_ok=True)
    for graph in graphs:
        runs = [r for r in results["runs"] if r["graph"] == graph["name"]]
        for path in plot_graph(graph, runs, args.out, args.include_static,
                               args.formats.split(","), args.log_y):
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
