#!/usr/bin/env python3
"""Plot memory / compute tradeoff curves from a rematbench results file.

One figure per graph, in the style of the Checkmate paper: x = memory budget
(readable units), y = overhead (cost / base cost) on a linear axis, one step
curve per algorithm giving its best result at or below each budget, the
memory lower bound and the NoRemat peak as vertical lines, and the proven
optimum as a black dashed step curve. A schedule that moves values to host
memory (vdnn, swap_remat) is placed by its time instead: makespan / base
cost, which is its cost / base cost when nothing moves.

Below it, where the results have the timeline (results/SCHEMA.md), each
algorithm's critical path at each budget over the graph's longest path:
1 means the schedule keeps all the parallelism of the graph; recomputation
that lengthens the critical path shows as a rise.

At most --max-curves (8) curves share a panel: with more methods, the
first panel holds the Pareto-relevant ones (on the front across all methods
at some budget, by their share of it), the rest follow in further panels,
each with the front as a thick grey line to compare against.

Every point whose schedule is valid and within its budget is drawn: filled
when `feasible`, open when the algorithm hit its time limit (`timeout`) and
reported its best schedule so far. Each algorithm keeps one colour and
marker in every plot, assigned in the registry's order (`remat list`).
Points above --max-overhead are drawn on the top edge as arrows.

    scripts/plot_tradeoff.py results/default/sweep.json --out results/default/plots
"""
import argparse
import concurrent.futures
import math
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FuncFormatter, MaxNLocator  # noqa: E402

import rematbench.results  # noqa: E402
from rematbench import files, script  # noqa: E402
from rematbench.curves import (  # noqa: E402
    COLORS, DEFAULT_MAX_OVERHEAD, best_so_far, byte_unit, in_budget,
    registry_order, run_label)

MARKERS = ["o", "s", "^", "v", "D", "P", "X", "*", "<", ">", "p", "h", "d",
           "H", "8", "x", "+", "1", "|", "4"]
LINESTYLES = ["-", "--", "-.", ":"]
DEFAULT_REMAT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                             "build", "remat")
# Curves per panel: more and they cannot be told apart.
MAX_CURVES = 8
# A curve within 1% of the Pareto front at a budget is on it there.
FRONT_TOLERANCE = 0.01


def styles(order):
    """Algorithm name -> (colour, marker, line style), by registry position."""
    return {name: (COLORS[i % len(COLORS)], MARKERS[i % len(MARKERS)],
                   LINESTYLES[(i // len(COLORS)) % len(LINESTYLES)])
            for i, name in enumerate(order)}


def optimum_points(runs):
    """(budget, overhead) where an exact method proved a global optimum:
    `optimal` true, or its lower_bound_cost equal to its cost (bounds of the
    staged Checkmate class are in details and not used)."""
    optimum = {}
    for run in runs:
        for point in run["points"]:
            proven = point.get("optimal") is True or (
                point.get("lower_bound_cost") is not None
                and point["lower_bound_cost"] == point["cost"])
            if proven and in_budget(point):
                budget = point["budget_bytes"]
                optimum[budget] = min(optimum.get(budget, math.inf),
                                      point["overhead"])
    return sorted(optimum.items())


def overhead_range(runs, max_overhead):
    """(bottom, top) of the overhead axis: from 1 (no recomputation) to the
    largest drawn overhead, but at most max_overhead (0: no clipping)."""
    values = [p["overhead"] for run in runs for p in run["points"]
              if in_budget(p)]
    low = min(values + [1.0])
    high = max(values + [1.0])
    if max_overhead > 0:
        high = min(high, max_overhead)
    pad = max(high - low, 0.02) * 0.04
    return low - pad, high + pad, high


def layout(graph, runs, order, max_overhead):
    """What a figure shows, as data: one series per run (in registry order,
    then by parameters) with its style, step curve and points, each point
    (budget, overhead, open, clipped); plus the optimum steps and the
    overhead axis range."""
    style = styles(order)
    rank = {name: i for i, name in enumerate(order)}
    bottom, top, clip = overhead_range(runs, max_overhead)
    series, variants = [], {}
    for run in sorted(runs, key=lambda r: (rank[r["algorithm"]], run_label(r))):
        color, marker, linestyle = style[run["algorithm"]]
        variant = variants.get(run["algorithm"], 0)
        variants[run["algorithm"]] = variant + 1
        if variant:  # a second parameter setting of the same algorithm
            linestyle = LINESTYLES[variant % len(LINESTYLES)]
        points = [(p["budget_bytes"], p["overhead"], p["status"] == "timeout",
                   p["overhead"] > clip)
                  for p in sorted(run["points"], key=lambda p: p["budget_bytes"])
                  if in_budget(p)]
        series.append({"label": run_label(run), "color": color,
                       "marker": marker, "linestyle": linestyle,
                       "steps": best_so_far(run["points"]), "points": points})
    return {"series": series, "optimum": optimum_points(runs),
            "bottom": bottom, "top": top, "clip": clip}


def timed(graph, runs):
    """`runs` with each point that moves values to host memory placed by its
    time: overhead = makespan / base cost (for the others the two agree)."""
    base = graph.get("base_cost") or 0

    def place(p):
        if p.get("transfer_bytes") and p.get("makespan") is not None and base:
            return dict(p, overhead=p["makespan"] / base)
        return p
    return [dict(r, points=[place(p) for p in r["points"]]) for r in runs]


def critical_paths(graph, runs):
    """Per run (in the order given), its in-budget (budget, critical path /
    longest path) points; empty when the results predate the timeline."""
    longest = graph.get("longest_path_cost")
    if not longest:
        return []
    return [[(p["budget_bytes"], p["critical_path"] / longest)
             for p in sorted(r["points"], key=lambda p: p["budget_bytes"])
             if in_budget(p) and p.get("critical_path") is not None]
            for r in runs]


def front_steps(series):
    """The Pareto front across the series: at each budget where any has a
    step, the least step value of them all, [(budget, overhead)]."""
    best = {}
    for s in series:
        for b, o in s["steps"]:
            best[b] = min(best.get(b, math.inf), o)
    return sorted(best.items())


def split_panels(series, max_curves=MAX_CURVES, peak=None):
    """Groups of at most max_curves series, one panel each. With more series
    than that, the first panel holds the Pareto-relevant ones: those whose
    step curve is on the front across all series (within FRONT_TOLERANCE)
    at some budget below the
    NoRemat peak `peak` (there every method that keeps all reaches 1.0, so
    it tells nothing), ranked by their share of it (a budget where k series
    tie counts 1/k), the best max_curves of them; the rest follow in the
    given (registry) order, in panels of near-equal size."""
    if len(series) <= max_curves:
        return [list(series)]
    front = dict(front_steps(series))
    if peak is not None and any(b < peak for b in front):
        front = {b: v for b, v in front.items() if b < peak}
    share = {}
    for b, least in front.items():
        holders = [s["label"] for s in series
                   if dict(s["steps"]).get(b) is not None
                   and dict(s["steps"])[b] <= least * (1 + FRONT_TOLERANCE)]
        for label in holders:
            share[label] = share.get(label, 0.0) + 1.0 / len(holders)
    position = {s["label"]: i for i, s in enumerate(series)}
    relevant = sorted((s for s in series if share.get(s["label"], 0) > 0),
                      key=lambda s: (-share[s["label"]],
                                     position[s["label"]]))[:max_curves]
    first = sorted(relevant, key=lambda s: position[s["label"]])
    chosen = {s["label"] for s in first}
    rest = [s for s in series if s["label"] not in chosen]
    count = math.ceil(len(rest) / max_curves)
    size = math.ceil(len(rest) / count) if count else 0
    return [first] + [rest[i:i + size] for i in range(0, len(rest), size)]


def draw_critical_paths(ax, graph, runs, series, clip, x):
    """A lower panel: critical path over longest path, per series."""
    by_label = dict(zip(map(run_label, runs), critical_paths(graph, runs)))
    for s in series:
        points = by_label.get(s["label"], [])
        if points:
            ax.plot([x(b) for b, _ in points], [c for _, c in points],
                    color=s["color"], marker=s["marker"], markersize=4,
                    linestyle=s["linestyle"], linewidth=1, alpha=0.85)
    ax.axhline(1, color="grey", linestyle=":", linewidth=1)
    # The overhead axis's clip keeps the checkpoint_last-like outliers from
    # flattening the rest (they run off the top); every panel has the same
    # range.
    values = [c for points in critical_paths(graph, runs) for _, c in points]
    top = min(max(values + [1.0]), clip)
    ax.set_ylim(min(values + [1.0]) - 0.04 * top, top * 1.04)
    ax.set_ylabel("critical path /\nlongest path")
    ax.grid(True, alpha=0.3)


def drawn(text):
    """`text` from a results file as matplotlib draws it literally:
    control characters as the terminal shows them, `$` escaped (a pair
    starts mathtext, whose parser fails on most names)."""
    return script.shown(text).replace("$", r"\$")


def draw_panel(ax, graph, plan, series, x, front=None, title=None):
    """One overhead panel: the series' step curves and points, the optimum,
    the Pareto front of all series (when the figure has several panels),
    the lower bound and NoRemat peak, and a legend naming each."""
    any_open = any_clipped = False
    if front:
        ax.step([x(b) for b, _ in front], [o for _, o in front],
                where="post", color="#c8c8c8", linewidth=7, alpha=0.8,
                solid_capstyle="butt", zorder=1,
                label="Pareto front (all methods)")
    for s in series:
        if not s["points"]:
            ax.plot([], [], color=s["color"], marker=s["marker"],
                    linestyle=s["linestyle"],
                    label=drawn(s["label"]) + " (no point in budget)")
            continue
        ax.step([x(b) for b, _ in s["steps"]], [o for _, o in s["steps"]],
                where="post", color=s["color"], linestyle=s["linestyle"],
                alpha=0.85, linewidth=1.3)
        ax.plot([], [], color=s["color"], marker=s["marker"],
                linestyle=s["linestyle"], label=drawn(s["label"]))
        for b, o, is_open, clipped in s["points"]:
            any_open |= is_open
            any_clipped |= clipped
            if clipped:
                ax.plot([x(b)], [plan["clip"]], marker=r"$\uparrow$",
                        color=s["color"], markersize=11, linestyle="none",
                        clip_on=False)
                continue
            ax.plot([x(b)], [o], marker=s["marker"], markersize=6,
                    color=s["color"], linestyle="none",
                    markerfacecolor="white" if is_open else s["color"],
                    markeredgewidth=1.2)
    if plan["optimum"]:
        steps = plan["optimum"]
        ax.step([x(b) for b, _ in steps], [o for _, o in steps], where="post",
                color="black", linestyle="--", linewidth=2, marker="x",
                markersize=7, label="optimum (proven)", zorder=3)
    ax.axvline(x(graph["lower_bound_bytes"]), color="grey", linestyle=":",
               label="memory lower bound")
    ax.axvline(x(graph["noremat_peak_bytes"]), color="grey", linestyle="--",
               label="NoRemat peak")
    handles, labels = ax.get_legend_handles_labels()
    key = [(Line2D([], [], color="dimgrey", marker="o", linestyle="none"),
            "feasible"),
           (Line2D([], [], color="dimgrey", marker="o", linestyle="none",
                   markerfacecolor="white"),
            "timeout (best schedule so far)")]
    if any_clipped:
        key.append((Line2D([], [], color="dimgrey", marker=r"$\uparrow$",
                           markersize=11, linestyle="none"),
                    f"above {plan['clip']:g}x (clipped)"))
    for handle, text in key if any_open or any_clipped else key[:1]:
        handles.append(handle)
        labels.append(text)
    ax.set_ylabel("overhead (cost / base cost;\nmakespan / base cost when moving)")
    ax.set_ylim(plan["bottom"], plan["top"])
    ax.yaxis.set_major_locator(MaxNLocator(nbins=10, steps=[1, 2, 2.5, 5, 10]))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    if title:
        ax.set_title(title, fontsize=10, loc="left")
    ax.grid(True, alpha=0.3)
    ax.legend(handles, labels, fontsize=8, loc="upper left",
              bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, framealpha=0.9)


def draw(graph, runs, order, include_static=False,
         max_overhead=DEFAULT_MAX_OVERHEAD, max_curves=MAX_CURVES):
    """The figure of one graph (the caller saves and closes it): one
    overhead panel per group of split_panels (at most max_curves curves
    each, the Pareto-relevant methods first), each with its critical-path
    panel below it where the results have the timeline."""
    offset = graph["static_bytes"] if include_static else 0
    unit, scale = byte_unit(max(graph["noremat_peak_bytes"] + offset, 1))

    def x(b):
        return (b + offset) / scale

    runs = timed(graph, runs)
    plan = layout(graph, runs, order, max_overhead)
    groups = split_panels(plan["series"], max_curves,
                          graph["noremat_peak_bytes"])
    with_cp = any(critical_paths(graph, runs))
    rows = len(groups) * (2 if with_cp else 1)
    ratios = [3, 1.6] * len(groups) if with_cp else [1] * len(groups)
    fig, axes = plt.subplots(
        rows, 1, figsize=(10, (8 if with_cp else 5.5) * len(groups)),
        sharex=True, squeeze=False, gridspec_kw={"height_ratios": ratios},
        layout="constrained")
    axes = [a[0] for a in axes]
    front = front_steps(plan["series"]) if len(groups) > 1 else None
    for i, group in enumerate(groups):
        ax = axes[i * (2 if with_cp else 1)]
        if len(groups) == 1:
            title = None
        elif i == 0:
            title = (f"methods on the Pareto front (within "
                     f"{FRONT_TOLERANCE:.0%} below the NoRemat peak; "
                     f"{len(group)} of {len(plan['series'])})")
        else:
            title = f"other methods ({i} of {len(groups) - 1})"
        draw_panel(ax, graph, plan, group, x, front, title)
        if with_cp:
            draw_critical_paths(axes[i * 2 + 1], graph, runs, group,
                                plan["clip"], x)
    what = "total memory (incl. static)" if include_static else \
        "activation memory budget"
    axes[-1].set_xlabel(f"{what} [{unit}]")
    for ax in axes[:-1]:
        ax.tick_params(labelbottom=True)
    fig.suptitle(f"{drawn(graph['name'])}  ({graph['nodes']} nodes)")
    return fig


def file_stems(names):
    """A file name stem for each graph name, none alike: the name with
    runs of other characters as "_", and "-2", "-3", ... after a stem that
    an earlier name took ("a/b" and "a_b" are two graphs, two files)."""
    stems, taken = [], set()
    for name in names:
        base = re.sub(r"[^A-Za-z0-9._=-]+", "_", name).strip("_.") or "graph"
        base = base[:200]
        stem, copy = base, 2
        while stem in taken:
            stem, copy = f"{base}-{copy}", copy + 1
        taken.add(stem)
        stems.append(stem)
    return stems


def plot_graph(graph, runs, order, out_dir, include_static, formats,
               max_overhead, max_curves=MAX_CURVES, stem=None):
    fig = draw(graph, runs, order, include_static, max_overhead, max_curves)
    if stem is None:
        stem = file_stems([graph["name"]])[0]
    paths = []
    for fmt in formats:
        path = os.path.join(out_dir, f"{stem}.{fmt}")
        with files.replacing(path, binary=True) as f:
            fig.savefig(f, format=fmt, dpi=120, bbox_inches="tight")
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
    parser.add_argument("--max-overhead",
                        type=script.nonnegative,
                        default=DEFAULT_MAX_OVERHEAD,
                        help="top of the overhead axis; points above it are "
                        "drawn as arrows on the top edge (0: no clipping; "
                        f"default {DEFAULT_MAX_OVERHEAD:g})")
    parser.add_argument("--max-curves", type=script.positive_count, default=MAX_CURVES,
                        help="curves per panel: with more methods, the "
                        "Pareto-relevant ones in the first panel, the rest "
                        f"in further panels (default {MAX_CURVES})")
    parser.add_argument("--remat", default=DEFAULT_REMAT,
                        help="the remat binary whose `remat list` gives the "
                        "algorithms' order, hence their colours (default "
                        "build/remat)")
    parser.add_argument("--formats", default="png,pdf",
                        help="comma-separated output formats (default png,pdf)")
    parser.add_argument("--jobs", type=script.positive_count,
                        default=os.cpu_count() or 1,
                        help="graphs drawn at once, each in its own process "
                        "(default: the number of CPUs)")
    args = parser.parse_args()

    results = rematbench.results.load("plot_tradeoff", args.results)
    try:
        return plot_all(results, args)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        rematbench.results.bad_input("plot_tradeoff", f"{args.results}: malformed "
                               f"results ({str(e)[:200]!r})")


def plot_all(results, args):
    graphs = results["graphs"]
    # Stems over all the file's graphs, so that --graph draws each to the
    # file it has in a full run.
    stems = dict(zip((g["name"] for g in graphs),
                     file_stems(g["name"] for g in graphs)))
    if args.graph:
        known = {g["name"] for g in graphs}
        missing = [g for g in args.graph if g not in known]
        if missing:
            print(f"plot_tradeoff: {args.results}: no graph named "
                  f"{script.shown(', '.join(missing))}", file=sys.stderr)
            return 2
        graphs = [g for g in graphs if g["name"] in args.graph]
    order = registry_order(args.remat,
                           [r["algorithm"] for r in results["runs"]],
                           "plot_tradeoff")
    os.makedirs(args.out, exist_ok=True)
    # Drawing is matplotlib's work, one graph at a time, so graphs go to
    # separate processes; the paths are printed in the graphs' order.
    tasks = [(graph, [r for r in results["runs"] if r["graph"] == graph["name"]],
              order, args.out, args.include_static, args.formats.split(","),
              args.max_overhead, args.max_curves, stems[graph["name"]])
             for graph in graphs]
    jobs = min(args.jobs, len(tasks))
    if jobs <= 1:
        done = [plot_graph(*task) for task in tasks]
    else:
        with concurrent.futures.ProcessPoolExecutor(jobs) as pool:
            done = list(pool.map(plot_graph, *zip(*tasks)))
    for paths in done:
        for path in paths:
            print(script.shown(path))
    return 0


if __name__ == "__main__":
    script.run(main)
