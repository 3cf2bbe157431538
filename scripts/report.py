#!/usr/bin/env python3
"""Write one self-contained interactive HTML report of a rematbench results file.

    scripts/report.py results/default/sweep.json -o results/default/report.html
    scripts/report.py new.json --baseline old.json -o report.html

Per graph: the memory / time tradeoff curves of every run (y: time, that is
makespan / base cost, or compute, cost / base cost; x: the activation-memory
budget), drawn with Vega-Lite: hover a point for its algorithm, parameters,
status, peak, cost, makespan, solve time, gap and message; click a legend
entry to pick a method (shift-click for several, double-click to reset);
scroll to zoom and drag to pan. On each chart: the Pareto front across
methods (the best in-budget schedule of any method at or below each budget),
the memory lower bound and NoRemat peak, the proven optimum where an exact
method proved one; below it every (method, budget) by status, so that
timeouts, infeasible budgets, errors and refused graphs show where each
method stops fitting. A table per graph gives the best method at each
budget, its runner-up and its gap to the proven optimum. With --baseline,
what got better or worse per (graph, method), as scripts/compare_curves.py
judges it, and the baseline's curves dashed on the charts.

The file needs no network: Vega, Vega-Lite and Vega-Embed are inlined (from
the pinned vl-convert-python, python/requirements.txt), and the charts'
Vega-Lite specs are compiled to Vega here, not in the browser. scripts/report_check.py
opens it in headless Chromium. A results file that is not one, or is
malformed, exits 2 with one line on stderr and writes nothing.
"""
import argparse
import datetime
import html
import json
import math
import os
import resource
import subprocess
import sys

import rematbench.results
from rematbench import curves, files, script
from rematbench.curves import (COLORS, DEFAULT_MAX_OVERHEAD, best_so_far,
                               byte_unit, in_budget, registry_order, run_label)

PROG = "report"
DEFAULT_REMAT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                             "build", "remat")
# Vega symbol shapes, one per registry position as plot_tradeoff's MARKERS
# (Vega's own where it has the same one, else an SVG path in the unit
# square), all filled outlines so that a timeout's open marker shows.
SHAPES = [
    "circle", "square", "triangle-up", "triangle-down", "diamond", "cross",
    # x
    "M-1,-0.6L-0.6,-1L0,-0.4L0.6,-1L1,-0.6L0.4,0L1,0.6L0.6,1L0,0.4L-0.6,1"
    "L-1,0.6L-0.4,0Z",
    # star
    "M0,-1L0.22,-0.31L0.95,-0.31L0.36,0.12L0.59,0.81L0,0.38L-0.59,0.81"
    "L-0.36,0.12L-0.95,-0.31L-0.22,-0.31Z",
    "triangle-left", "triangle-right",
    # pentagon, hexagon, thin diamond, flat hexagon, octagon
    "M0,-1L0.95,-0.31L0.59,0.81L-0.59,0.81L-0.95,-0.31Z",
    "M0,-1L0.87,-0.5L0.87,0.5L0,1L-0.87,0.5L-0.87,-0.5Z",
    "M-0.55,0L0,-1L0.55,0L0,1Z",
    "M-1,0L-0.5,-0.87L0.5,-0.87L1,0L0.5,0.87L-0.5,0.87Z",
    "M-0.41,-1L0.41,-1L1,-0.41L1,0.41L0.41,1L-0.41,1L-1,0.41L-1,-0.41Z",
    # hourglass, house, trapezoid, bar, arrow
    "M-1,-1L1,-1L0.15,0L1,1L-1,1L-0.15,0Z",
    "M-1,1L-1,-0.2L0,-1L1,-0.2L1,1Z",
    "M-1,0.7L-0.5,-0.7L0.5,-0.7L1,0.7Z",
    "M-0.35,-1L0.35,-1L0.35,1L-0.35,1Z",
    "M0,-1L1,0L0.35,0L0.35,1L-0.35,1L-0.35,0L-1,0Z",
]
STATUS_COLORS = {  # the status strip under each chart
    "feasible": "#4daf4a",
    "timeout (schedule)": "#ffb000",
    "timeout": "#d95f02",
    "infeasible": "#e41a1c",
    "error": "#000000",
    "too_large": "#a6a6a6",
    "unsupported": "#d9d9d9",
}
METRICS = {"time": "time: makespan / base cost",
           "compute": "compute: cost / base cost"}


def status_class(point):
    if point["status"] == "timeout" and in_budget(point):
        return "timeout (schedule)"
    return point["status"] if point["status"] in STATUS_COLORS else "error"


def proven(point):
    """The point's schedule is a proven global optimum (as plot_tradeoff)."""
    return in_budget(point) and (point.get("optimal") is True or (
        point.get("lower_bound_cost") is not None
        and point["lower_bound_cost"] == point["cost"]))


def metric_value(graph, point, metric):
    """y of a point: compute = cost / base cost; time = makespan / base
    cost (files from before the timeline have no makespan: cost)."""
    if point.get("overhead") is None:
        return None
    base = graph.get("base_cost") or 0
    if metric == "time" and point.get("makespan") is not None and base:
        return point["makespan"] / base
    return point["overhead"]


def with_metric(graph, run, metric):
    """The run's points with `overhead` replaced by the metric's value, so
    that rematbench.curves' best_so_far and in_budget apply as they are."""
    return [dict(p, overhead=metric_value(graph, p, metric))
            for p in run["points"]]


def pareto_front(graph, runs, metric):
    """[(budget, best, [run labels at it])]: at each budget of the file, the
    least metric value of any in-budget schedule of any run at or below
    that budget (the lower envelope of the runs' step curves), and the runs
    whose curve is at it there."""
    budgets = sorted({p["budget_bytes"] for r in runs for p in r["points"]})
    curves = {run_label(r): dict(best_so_far(with_metric(graph, r, metric)))
              for r in runs}
    front = []
    for budget in budgets:
        here = {label: steps[budget] for label, steps in curves.items()
                if budget in steps}
        if not here:
            continue
        best = min(here.values())
        front.append((budget, best, [label for label, value in here.items()
                                     if value <= best * (1 + 1e-12)]))
    return front


def best_table(graph, runs, metric):
    """Per budget of the graph: the in-budget points ranked by the metric
    (cost as tie-break), and the proven optimum's cost if any."""
    by_budget = {}
    for run in runs:
        for p in run["points"]:
            entry = by_budget.setdefault(p["budget_bytes"],
                                         {"ranked": [], "optimum": None,
                                          "methods": 0, "fits": 0})
            entry["methods"] += 1
            if in_budget(p):
                entry["fits"] += 1
                entry["ranked"].append((metric_value(graph, p, metric),
                                        p["cost"], run_label(run), p))
            if proven(p):
                cost = p["cost"]
                if entry["optimum"] is None or cost < entry["optimum"]:
                    entry["optimum"] = cost
    rows = []
    for budget in sorted(by_budget):
        entry = by_budget[budget]
        entry["ranked"].sort(key=lambda t: (t[0], t[1], t[2]))
        rows.append(dict(entry, budget=budget))
    return rows


def fmt_bytes(value):
    if value is None:
        return "-"
    unit, scale = byte_unit(max(value, 1))
    return f"{value / scale:.4g} {unit}" if scale > 1 else f"{value} B"


def short_details(details):
    if not isinstance(details, dict) or not details:
        return ""
    text = ", ".join(f"{k}={v}" for k, v in sorted(details.items())
                     if not isinstance(v, (dict, list)))
    return text[:240]


# The fields of a point that the report draws (charts, hover, tables, the
# comparison with a baseline); what else a point holds is not kept.
DRAWN = ("budget_bytes", "status", "valid", "peak_bytes", "cost", "overhead",
         "makespan", "critical_path", "transfer_bytes", "lower_bound_cost",
         "optimal", "gap", "staged_gap", "solve_seconds")


def drawn(p):
    """What the report keeps of a point as the file is read (the reader's
    keep_point): the drawn fields, the message and details cut as the
    hover shows them; memory grows with the points drawn, not with the
    file. What is malformed is kept as it is, to be refused with the
    rest."""
    if not isinstance(p, dict):
        return p
    kept = {k: p[k] for k in DRAWN if k in p}
    if p.get("message"):
        kept["message"] = p["message"][:300]
    details = short_details(p.get("details"))
    if details:
        kept["details"] = details
    return kept


def point_info(graph, run, p):
    """What hovering a point shows: its fields that have a value, in
    words (vega-tooltip draws an object as a table)."""
    base = graph.get("base_cost") or 0
    info = {"method": run_label(run), "status": p["status"],
            "budget": fmt_bytes(p["budget_bytes"])}
    if p.get("peak_bytes") is not None:
        info["peak"] = fmt_bytes(p["peak_bytes"])
    if p.get("makespan") is not None and base:
        info["makespan / base cost"] = f"{p['makespan'] / base:.4f}"
    if p.get("overhead") is not None:
        info["cost / base cost"] = f"{p['overhead']:.4f}"
    if p.get("cost") is not None:
        info["cost"] = p["cost"]
    if p.get("transfer_bytes"):
        info["bytes moved to host and back"] = fmt_bytes(p["transfer_bytes"])
    if p.get("critical_path") is not None and graph.get("longest_path_cost"):
        info["critical path / longest path"] = \
            f"{p['critical_path'] / graph['longest_path_cost']:.4f}"
    if proven(p):
        info["proven optimal"] = "yes"
    if p.get("lower_bound_cost") is not None:
        info["lower bound on cost"] = p["lower_bound_cost"]
    for key in ("gap", "staged_gap"):
        if p.get(key) is not None:
            info[key.replace("_", " ")] = f"{p[key]:+.2%}"
    if p.get("solve_seconds") is not None:
        info["solve seconds"] = f"{p['solve_seconds']:.4g}"
    for key in ("message", "details"):  # cut by drawn()
        if p.get(key):
            info[key] = p[key]
    return info


def point_rows(graph, run, scale):
    """The chart rows of a run's points: one per in-budget point (the
    curves; both metrics), one per point for the status strip."""
    label = run_label(run)
    rows, strip = [], []
    for p in sorted(run["points"], key=lambda p: p["budget_bytes"]):
        common = {"run": label, "x": round(p["budget_bytes"] / scale, 6),
                  "info": point_info(graph, run, p)}
        strip.append(dict(common, cls=status_class(p)))
        if in_budget(p):
            rows.append(dict(common, compute=round(p["overhead"], 6),
                             time=round(metric_value(graph, p, "time"), 6),
                             open=p["status"] == "timeout"))
    return rows, strip


def step_rows(graph, run, scale, tag):
    """The run's step curve, both metrics in one row per budget (the
    budgets before its first in-budget point have none)."""
    label = run_label(run)
    curves = [dict(best_so_far(with_metric(graph, run, metric)))
              for metric in METRICS]
    return [{"run": label, "x": round(b / scale, 6), "time": round(curves[0][b], 6),
             "compute": round(curves[1][b], 6), "file": tag}
            for b in sorted(curves[0])]


def chart_spec(graph, runs, baseline_runs, order, max_overhead):
    """The Vega-Lite spec of one graph: the curves and the status strip."""
    unit, scale = byte_unit(max(graph["noremat_peak_bytes"], 1))
    rank = {name: i for i, name in enumerate(order)}
    runs = sorted(runs, key=lambda r: (rank.get(r["algorithm"], len(rank)),
                                       run_label(r)))
    labels = [run_label(r) for r in runs]
    for r in baseline_runs:  # runs only in the baseline keep a style too
        if run_label(r) not in labels:
            labels.append(run_label(r))
    algorithm_of = {run_label(r): r["algorithm"] for r in runs + baseline_runs}
    colors = [COLORS[rank.get(algorithm_of[l], len(rank) + i) % len(COLORS)]
              for i, l in enumerate(labels)]
    shapes = [SHAPES[rank.get(algorithm_of[l], len(rank) + i) % len(SHAPES)]
              for i, l in enumerate(labels)]

    points, strip, steps = [], [], []
    for run in runs:
        rows, cells = point_rows(graph, run, scale)
        points += rows
        strip += cells
        steps += step_rows(graph, run, scale, "this file")
    for run in baseline_runs:
        steps += step_rows(graph, run, scale, "baseline")
    front = [{"m": metric, "x": b / scale, "y": round(y, 6),
              "best": ", ".join(who)}
             for metric in METRICS
             for b, y, who in pareto_front(graph, runs, metric)]
    optimum = {}
    for run in runs:
        for p in run["points"]:
            if proven(p):
                b = p["budget_bytes"]
                optimum[b] = min(optimum.get(b, math.inf), p["overhead"])
    optimum_rows = [{"m": metric, "x": b / scale, "y": round(y, 6)}
                    for metric in METRICS for b, y in sorted(optimum.items())]
    references = [
        {"x": graph["lower_bound_bytes"] / scale, "what": "memory lower bound",
         "bytes": fmt_bytes(graph["lower_bound_bytes"])},
        {"x": graph["noremat_peak_bytes"] / scale, "what": "NoRemat peak",
         "bytes": fmt_bytes(graph["noremat_peak_bytes"])}]

    values = [row[m] for row in points for m in METRICS
              if row[m] is not None]
    low = min(values + [1.0])
    high = max(values + [1.0])
    clip = min(high, max_overhead) if max_overhead > 0 else high
    pad = max(clip - low, 0.02) * 0.04
    above = sum(1 for row in points
                if row["time"] is not None and row["time"] > clip)
    lo_x = min(graph["lower_bound_bytes"],
               min((p["budget_bytes"] for r in runs for p in r["points"]),
                   default=graph["lower_bound_bytes"])) / scale
    hi_x = max(graph["noremat_peak_bytes"],
               max((p["budget_bytes"] for r in runs for p in r["points"]),
                   default=graph["noremat_peak_bytes"])) / scale
    span = max(hi_x - lo_x, 1e-9)
    x_scale = {"domain": [lo_x - 0.03 * span, hi_x + 0.03 * span],
               "nice": False, "zero": False}
    x = {"field": "x", "type": "quantitative", "scale": x_scale,
         "title": f"activation memory budget [{unit}]"}
    y = {"field": "y", "type": "quantitative",
         "scale": {"domain": [low - pad, clip + pad], "nice": False,
                   "zero": False},
         "title": "overhead (the y choice above)"}
    run_color = {"field": "run", "type": "nominal", "title": "method",
                 "scale": {"domain": labels, "range": colors},
                 "legend": {"symbolLimit": 0, "labelLimit": 260,
                            "orient": "right"}}
    run_shape = {"field": "run", "type": "nominal",
                 "scale": {"domain": labels, "range": shapes}}
    picked = {"condition": {"param": "pick", "value": 1}, "value": 0.08}
    on_metric = {"filter": "datum.m == metric"}
    # Rows that carry both metrics: y is the one the radio buttons chose.
    pick_metric = {"calculate": "metric == 'time' ? datum.time : "
                   "datum.compute", "as": "y"}
    # Hover: the row's info object, drawn by vega-tooltip as a table.
    tooltip = {"expr": "datum.info"}
    layers = [
        {"name": "front", "data": {"values": front},
         "transform": [on_metric],
         "mark": {"type": "line", "interpolate": "step-after",
                  "color": "#bbbbbb", "strokeWidth": 7, "opacity": 0.6,
                  "clip": True},
         "encoding": {"x": x, "y": y,
                      "tooltip": [{"field": "best",
                                   "title": "Pareto front here"},
                                  {"field": "y", "title": "best",
                                   "format": ".4f"}]}},
        {"name": "refs", "data": {"values": references},
         "mark": {"type": "rule", "color": "#777777", "strokeDash": [4, 3],
                  "clip": True},
         "encoding": {"x": {"field": "x", "type": "quantitative"},
                      "tooltip": [{"field": "what"}, {"field": "bytes"}]}},
        {"name": "reflabels", "data": {"values": references},
         "mark": {"type": "text", "angle": 270, "align": "right",
                  "baseline": "bottom", "dy": -3, "dx": -4,
                  "color": "#555555", "fontSize": 10},
         "encoding": {"x": {"field": "x", "type": "quantitative"},
                      "y": {"value": 0}, "text": {"field": "what"}}},
        {"name": "steps", "data": {"values": steps},
         "transform": [pick_metric],
         "params": [{"name": "pick",
                     "select": {"type": "point", "fields": ["run"]},
                     "bind": "legend"}],
         "mark": {"type": "line", "interpolate": "step-after",
                  "strokeWidth": 1.6, "clip": True},
         "encoding": {"x": x, "y": y, "color": run_color,
                      "detail": {"field": "file"},
                      "strokeDash": {"field": "file", "type": "nominal",
                                     "title": "curve",
                                     "scale": {"domain": ["this file",
                                                          "baseline"],
                                               "range": [[1, 0], [5, 3]]},
                                     "legend": None if not baseline_runs
                                     else {"orient": "right"}},
                      "opacity": picked}},
        {"name": "points", "data": {"values": points},
         "transform": [pick_metric, {"filter": "datum.y != null"}],
         "params": [{"name": "zoom", "select": "interval",
                     "bind": "scales"}],
         "mark": {"type": "point", "size": 55, "strokeWidth": 1.6,
                  "clip": True, "tooltip": tooltip},
         "encoding": {"x": x, "y": y, "color": run_color,
                      "shape": dict(run_shape, legend=None),
                      "fill": {"condition": {"test": "datum.open",
                                             "value": "white"},
                               "field": "run", "type": "nominal",
                               "scale": {"domain": labels, "range": colors},
                               "legend": None},
                      "fillOpacity": {"value": 1},
                      "opacity": picked}},
    ]
    if optimum_rows:
        layers.insert(1, {
            "name": "optimum", "data": {"values": optimum_rows},
            "transform": [on_metric],
            "mark": {"type": "line", "interpolate": "step-after",
                     "color": "black", "strokeDash": [6, 4],
                     "strokeWidth": 2, "clip": True,
                     "point": {"shape": "cross", "color": "black",
                               "size": 50}},
            "encoding": {"x": x, "y": y,
                         "tooltip": [{"field": "y",
                                      "title": "proven optimum",
                                      "format": ".4f"}]}})
    status_domain = [s for s in STATUS_COLORS if any(c["cls"] == s
                                                     for c in strip)]
    strip_chart = {
        "name": "status", "data": {"values": strip},
        "width": 720, "height": {"step": 13},
        "mark": {"type": "square", "size": 90, "opacity": 1,
                 "tooltip": tooltip},
        "encoding": {
            "x": dict(x, title=f"budget [{unit}] (status of every method "
                      "at every budget)"),
            "y": {"field": "run", "type": "nominal", "title": None,
                  "sort": labels, "axis": {"labelLimit": 260}},
            "color": {"field": "cls", "type": "nominal", "title": "status",
                      "scale": {"domain": status_domain,
                                "range": [STATUS_COLORS[s]
                                          for s in status_domain]},
                      "legend": {"orient": "right"}},
            "opacity": picked}}
    title = (f"{graph['name']}: {graph['nodes']} nodes, lower bound "
             f"{fmt_bytes(graph['lower_bound_bytes'])}, NoRemat peak "
             f"{fmt_bytes(graph['noremat_peak_bytes'])}")
    subtitle = []
    if above:
        subtitle.append(f"{above} point(s) above {clip:g}x are outside the "
                        "initial view: scroll to zoom out")
    if baseline_runs:
        subtitle.append("dashed: the baseline file's curves")
    return {
        "title": {"text": title, "subtitle": subtitle, "anchor": "start"},
        "params": [{"name": "metric", "value": "time",
                    "bind": {"input": "radio", "options": list(METRICS),
                             "labels": list(METRICS.values()),
                             "name": "y: "}}],
        "vconcat": [{"layer": layers, "width": 720, "height": 360},
                    strip_chart],
        "resolve": {"scale": {"color": "independent",
                              "shape": "independent"}},
        "config": {"legend": {"labelFontSize": 11},
                   "axis": {"labelFontSize": 11, "titleFontSize": 12}},
    }, runs


def table_html(graph, runs, metric="time"):
    rows = best_table(graph, runs, metric)
    out = ["<table class='best'><thead><tr><th>budget</th><th>best</th>"
           "<th>makespan / base</th><th>peak</th><th>runner-up</th>"
           "<th>proven optimum (cost / base)</th><th>gap of best</th>"
           "<th>methods in budget</th></tr></thead><tbody>"]
    base = graph.get("base_cost") or 0
    for row in rows:
        ranked = row["ranked"]
        mark = ""
        if row["budget"] == graph["lower_bound_bytes"]:
            mark = " <span class='tag'>lower bound</span>"
        elif row["budget"] == graph["noremat_peak_bytes"]:
            mark = " <span class='tag'>NoRemat peak</span>"
        if ranked:
            value, cost, label, p = ranked[0]
            ties = [t[2] for t in ranked[1:] if t[0] == value]
            names = [label] + ties
            best = html.escape(", ".join(names[:4]))
            if len(names) > 4:
                best += (f" <span class='tag' title='{html.escape(', '.join(names[4:]))}'>"
                         f"+{len(names) - 4} more</span>")
            rest = [t for t in ranked[1:] if t[0] != value]
            runner = (f"{html.escape(rest[0][2])} ({rest[0][0]:.4f})"
                      if rest else "-")
            value_text = f"{value:.4f}"
            peak = fmt_bytes(p.get("peak_bytes"))
            if row["optimum"] is not None and not p.get("transfer_bytes"):
                gap = f"{cost / row['optimum'] - 1:+.2%}"
            else:
                gap = "-"
        else:
            best, runner, value_text, peak, gap = \
                "<i>nothing fits</i>", "-", "-", "-", "-"
        optimum = (f"{row['optimum'] / base:.4f}"
                   if row["optimum"] is not None and base else "-")
        out.append(f"<tr><td>{fmt_bytes(row['budget'])}{mark}</td>"
                   f"<td>{best}</td><td>{value_text}</td><td>{peak}</td>"
                   f"<td>{runner}</td><td>{optimum}</td><td>{gap}</td>"
                   f"<td>{row['fits']} of {row['methods']}</td></tr>")
    out.append("</tbody></table>")
    return "".join(out)


def baseline_html(results, baseline, baseline_path):
    """What got better or worse: rematbench.curves.compare_run's rows, worst first."""
    runs_a = {curves.run_key(r): r for r in baseline["runs"]}
    runs_b = {curves.run_key(r): r for r in results["runs"]}
    hashes_a = {g["name"]: g.get("content_hash") for g in baseline["graphs"]}
    hashes_b = {g["name"]: g.get("content_hash") for g in results["graphs"]}
    rows = []
    for key in sorted(set(runs_a) & set(runs_b)):
        row = curves.compare_run(runs_a[key]["points"],
                                         runs_b[key]["points"])
        why = curves.worse(row, 0.01)
        better = row["dominates"] == "B" or (
            row["geomean_slowdown"] is not None
            and row["geomean_slowdown"] < 0.99 and not why)
        verdict = ("worse" if why else "better" if better else
                   "mixed" if row["dominates"] == "crossing" else "same")
        rows.append((verdict, key, row, why))
    order = {"worse": 0, "mixed": 1, "better": 2, "same": 3}
    rows.sort(key=lambda t: (order[t[0]], t[1]))
    counts = {v: sum(1 for t in rows if t[0] == v) for v in order}

    def num(v, spec):
        return "-" if v is None else format(v, spec)
    out = [f"<h2 id='baseline'>Against the baseline</h2><p>Baseline "
           f"<code>{html.escape(baseline_path)}</code> (commit "
           f"{html.escape(str(baseline.get('context', {}).get('git_commit', '?')))}"
           f"): per (graph, method) in both files, as "
           "<code>scripts/compare_curves.py</code> judges curves (feasible "
           "points, cost / base cost; worse = a budget lost, a geometric-mean "
           "slowdown over 1%, or a larger smallest feasible budget). "
           + ", ".join(f"<b>{counts[v]}</b> {v}" for v in order) + ".</p>"]
    changed = sorted(n for n in set(hashes_a) & set(hashes_b)
                     if hashes_a[n] != hashes_b[n])
    if changed:
        out.append("<p class='warn'>Graphs whose content changed (different "
                   "content hash), so their curves are not comparable: "
                   + html.escape(", ".join(changed)) + "</p>")
    only_a = sorted(set(runs_a) - set(runs_b))
    only_b = sorted(set(runs_b) - set(runs_a))
    for what, keys in (("only in the baseline", only_a),
                       ("only in this file", only_b)):
        if keys:
            out.append(f"<p>{len(keys)} run(s) {what}: " + html.escape(
                "; ".join(f"{g} {a}" for g, a in keys[:40]))
                + (" ..." if len(keys) > 40 else "") + "</p>")
    out.append("<table class='cmp'><thead><tr><th>verdict</th><th>graph</th>"
               "<th>method</th><th>dominates</th><th>mean &Delta; overhead"
               "</th><th>smallest feasible budget: baseline &rarr; now</th>"
               "<th>geo-mean cost ratio</th><th>why worse</th></tr></thead>"
               "<tbody>")
    for verdict, (graph, method), row, why in rows:
        dominates = {"A": "baseline", "B": "this file", "equal": "equal",
                     "crossing": "crossing"}[row["dominates"]]
        out.append(
            f"<tr class='{verdict}'><td>{verdict}</td>"
            f"<td>{html.escape(graph)}</td><td>{html.escape(method)}</td>"
            f"<td>{dominates}</td>"
            f"<td>{num(row['mean_overhead_difference'], '+.4f')}</td>"
            f"<td>{fmt_bytes(row['min_feasible_budget_a'])} &rarr; "
            f"{fmt_bytes(row['min_feasible_budget_b'])}</td>"
            f"<td>{num(row['geomean_slowdown'], '.4f')}</td>"
            f"<td>{html.escape(why or '')}</td></tr>")
    out.append("</tbody></table>")
    return "".join(out), counts


STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:1.5em 2em;color:#222;max-width:1400px}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:13px;margin:.6em 0}
td,th{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f3f3f3}.tag{font-size:11px;color:#666}
tr.worse td:first-child{background:#fbd5d5}tr.better td:first-child{background:#d6f5d6}
tr.mixed td:first-child{background:#fff1c2}.warn{color:#a00}
.chart{margin:.5em 0 1em 0}.help{font-size:13px;color:#444}
code{background:#f5f5f5;padding:0 3px}
details{margin:.3em 0 1em}summary{cursor:pointer;color:#335}
"""

SCRIPT = """
(function () {
  const specs = Array.from(document.querySelectorAll('script.remat-spec'),
                          (node) => JSON.parse(node.textContent));
  const report = {charts: {}};
  function walk(mark, out) {
    if (!mark || !mark.items) return;
    for (const item of mark.items) {
      if (item.datum && item.datum.run !== undefined && mark.name) {
        const name = mark.name.split('_')[0];
        (out[name] = out[name] || new Set()).add(item.datum.run);
      }
      if (item.items) for (const child of item.items) walk(child, out);
    }
  }
  const options = {mode: 'vega', renderer: 'svg',
                   actions: {export: true, source: false, compiled: false,
                             editor: false}};
  Promise.all(specs.map((entry) =>
    vegaEmbed('#' + entry.id, entry.spec, options).then((result) => {
      const marks = {};
      walk(result.view.scenegraph().root, marks);
      const seen = {};
      for (const name in marks) seen[name] = Array.from(marks[name]).sort();
      report.charts[entry.graph] = seen;
    })))
    .then(() => { report.ready_ms = performance.now(); window.rematReport = report; })
    .catch((e) => { window.rematReportError = String(e); console.error(e); });
})();
"""


def build(results, path, baseline=None, baseline_path=None, remat=None,
          max_overhead=DEFAULT_MAX_OVERHEAD, javascript=None, to_vega=None):
    """The report's HTML text in pieces, a graph's chart and table at a
    time, so that no more than one chart is held at once. `javascript`:
    the Vega bundle to inline; `to_vega`: Vega-Lite spec -> Vega spec
    (both from vl_convert by default). The specs are compiled here rather
    than in the browser: the page is drawn about a fifth sooner."""
    if javascript is None or to_vega is None:
        import vl_convert
        javascript = javascript or vl_convert.javascript_bundle()
        to_vega = to_vega or vl_convert.vegalite_to_vega
    order = registry_order(remat, [r["algorithm"] for r in results["runs"]]
                           + [r["algorithm"]
                              for r in (baseline or {}).get("runs", [])], PROG)
    context = results.get("context") or {}
    statuses = {}
    for run in results["runs"]:
        for p in run["points"]:
            statuses[p["status"]] = statuses.get(p["status"], 0) + 1
    runs_of, baseline_runs_of = {}, {}
    for run in results["runs"]:
        runs_of.setdefault(run["graph"], []).append(run)
    for run in (baseline or {}).get("runs", []):
        baseline_runs_of.setdefault(run["graph"], []).append(run)
    toc = [f"<li><a href='#g{i}'>{html.escape(graph['name'])}</a> "
           f"({graph['nodes']} nodes, {len(runs_of.get(graph['name'], []))} "
           "runs)</li>" for i, graph in enumerate(results["graphs"])]

    def known(key, text="{}"):
        value = context.get(key)
        return "-" if value is None else text.format(value)
    meta = [("results file", path),
            ("date", known("date")),
            ("commit", known("git_commit")),
            ("command", known("command_line")),
            ("host", known("host") + known("cpu_model", " ({})")
             + known("cpu_count", ", {} threads")
             + known("load_average", ", load average {}")),
            ("time limit", known("timeout_seconds", "{} s per task")),
            ("points", f"{sum(statuses.values())}: " + ", ".join(
                f"{n} {s}" for s, n in sorted(statuses.items())))]
    meta_html = "".join(f"<tr><th>{html.escape(k)}</th><td>"
                        f"{html.escape(str(v))}</td></tr>" for k, v in meta)
    javascript = javascript.replace("</script", "<\\/script")
    yield (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>rematbench report: {html.escape(os.path.basename(path))}"
        f"</title><style>{STYLE}</style><script>{javascript}</script>"
        f"</head><body><h1>rematbench report: {html.escape(path)}</h1>"
        f"<table class='meta'>{meta_html}</table>"
        "<p class='help'>Each chart: per method the best schedule within "
        "the budget at or below each budget (step line) and every schedule "
        "within its budget (filled: feasible; open: the best so far of a "
        "run that hit its time limit); the thick grey line is the Pareto "
        "front across methods, black dashes the proven optimum, dotted "
        "rules the memory lower bound and the NoRemat peak. The strip "
        "below shows every method's status at every budget. Hover for "
        "details; click a legend entry to pick a method (shift-click for "
        "more, double-click the chart to reset); scroll to zoom, drag to "
        "pan; the radio buttons switch y between time (makespan, which "
        "counts the stalls of offloading) and compute (cost).</p>"
        f"<ul>{''.join(toc)}</ul>"
        + ("<p><a href='#baseline'>Against the baseline</a></p>"
           if baseline is not None else ""))
    for i, graph in enumerate(results["graphs"]):
        spec, runs = chart_spec(graph, runs_of.get(graph["name"], []),
                                baseline_runs_of.get(graph["name"], []),
                                order, max_overhead)
        data = json.dumps({"id": f"chart{i}", "graph": graph["name"],
                           "spec": to_vega(spec)},
                          separators=(",", ":"), allow_nan=False)
        facts = (f"{graph['nodes']} nodes, {graph.get('edges', '?')} edges; "
                 f"base cost {graph.get('base_cost')}; memory lower bound "
                 f"{fmt_bytes(graph['lower_bound_bytes'])}; NoRemat peak "
                 f"{fmt_bytes(graph['noremat_peak_bytes'])}; static "
                 f"{fmt_bytes(graph.get('static_bytes'))}; longest path "
                 f"{graph.get('longest_path_cost', '-')}; spec "
                 f"<code>{html.escape(str(graph.get('spec', '')))}</code>")
        yield (
            f"<h2 id='g{i}'>{html.escape(graph['name'])}</h2>"
            f"<p class='help'>{facts}</p>"
            f"<div class='chart' id='chart{i}'></div>"
            "<script type='application/json' class='remat-spec'>"
            + data.replace("</", "<\\/") + "</script>"
            "<details open><summary>Best method at each budget "
            "(in-budget schedules by makespan / base cost; cost breaks "
            "ties)</summary>" + table_html(graph, runs) + "</details>")
    if baseline is not None:
        yield baseline_html(results, baseline, baseline_path)[0]
    yield ("<script>" + SCRIPT + "</script>"
           "<p class='help'>Written by scripts/report.py on "
           f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} "
           "UTC.</p></body></html>")


def v8_refusal():
    """Why vl_convert cannot run here, or None. Its V8 reserves about 64
    GiB of address space as it starts and aborts the process with no
    message of its own (SIGTRAP, Oilpan's CagedHeap reservation) where
    `ulimit -v` leaves less: under a limit it is tried in a child first."""
    limit, _ = resource.getrlimit(resource.RLIMIT_AS)
    if limit == resource.RLIM_INFINITY:
        return None
    child = subprocess.run(
        [sys.executable, "-c",
         "import vl_convert; vl_convert.javascript_bundle()"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, check=False)
    if child.returncode == 0:
        return None
    return (f"the Vega compiler (vl_convert's V8) cannot start under the "
            f"address-space limit of {limit // 1024} KiB (ulimit -v): it "
            "reserves about 64 GiB; raise or lift the limit")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", help="results JSON written by remat sweep")
    parser.add_argument("--baseline", metavar="OLD.json",
                        help="an earlier results file: what got better or "
                        "worse, and its curves dashed")
    parser.add_argument("-o", "--out", required=True, metavar="report.html",
                        help="the HTML file to write")
    parser.add_argument("--max-overhead", type=script.nonnegative,
                        default=DEFAULT_MAX_OVERHEAD,
                        help="top of the initial y range (zoom out for "
                        f"more; 0: everything; default {DEFAULT_MAX_OVERHEAD:g})")
    parser.add_argument("--remat", default=DEFAULT_REMAT,
                        help="the remat binary whose `remat list` orders the "
                        "methods, hence their colours (default build/remat)")
    args = parser.parse_args()
    try:
        import vl_convert
    except ImportError:
        print(f"{PROG}: the Python module vl_convert is missing: install "
              "python/requirements.txt (vl-convert-python)", file=sys.stderr)
        return 2
    refusal = v8_refusal()
    if refusal:
        print(f"{PROG}: {refusal}", file=sys.stderr)
        return 2
    # V8 starts here, before the files are read: its reservation is made
    # while this process is as small as the child that was tried.
    javascript = vl_convert.javascript_bundle()
    results = rematbench.results.load(PROG, args.results, drawn)
    baseline = (rematbench.results.load(PROG, args.baseline, drawn)
                if args.baseline else None)
    try:
        with files.replacing(args.out) as out:
            for piece in build(results, args.results, baseline,
                               args.baseline, args.remat, args.max_overhead,
                               javascript, vl_convert.vegalite_to_vega):
                out.write(piece)
    except (KeyError, TypeError, ValueError, AttributeError,
            ZeroDivisionError, IndexError) as e:
        rematbench.results.bad_input(PROG, f"{args.results}"
                               + (f" or {args.baseline}" if args.baseline
                                  else "")
                               + f": malformed results ({type(e).__name__}: "
                               f"{str(e)[:160]!r})")
    print(script.shown(args.out))
    return 0


if __name__ == "__main__":
    script.run(main)
