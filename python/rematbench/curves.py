"""Tradeoff curves of a rematbench results file: what the results scripts
(plot_tradeoff.py, report.py, compare_curves.py) read from the runs'
points, and the colours and labels the plots and the report share.

    from rematbench import curves
    steps = curves.best_so_far(run["points"])     # [(budget, overhead)]
    row = curves.compare_run(points_a, points_b)  # dominance, slowdown...
    why = curves.worse(row, 0.01)                 # None, or why B is worse
"""
import json
import math
import os
import subprocess
import sys

UNITS = [("B", 1), ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30),
         ("TiB", 1 << 40)]
# Hues that stay apart from each other and from the grey reference lines and
# the black optimum; beyond them colours repeat with another line style.
# (The 17th, vdnn's, was an olive next to dtr's: both can share a panel.)
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
          "#e377c2", "#17becf", "#bcbd22", "#000075", "#469990", "#800000",
          "#f032e6", "#e6ab02", "#7cb518", "#9a6324", "#2f4f4f", "#42d4f4",
          "#a9a9a9", "#000000"]
# Overheads above this are left out of the plots unless asked for.
DEFAULT_MAX_OVERHEAD = 3.0


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


def registry_order(remat, names, prog):
    """The algorithms in the order `remat list` gives them, the ones it does
    not know (an older results file) after them by name. Without a usable
    `remat`, the names sorted, which is the registry's own order."""
    order = []
    if remat and os.access(remat, os.X_OK):
        try:
            listing = subprocess.run([remat, "list", "--json"], check=True,
                                     capture_output=True, text=True).stdout
            order = [a["name"] for a in json.loads(listing)["algorithms"]]
        except (OSError, subprocess.CalledProcessError, ValueError,
                KeyError) as e:
            print(f"{prog}: {remat} list --json: {e}; ordering the "
                  "algorithms by name", file=sys.stderr)
    return order + sorted(set(names) - set(order))


def in_budget(point):
    """The point carries a valid schedule within its budget: a feasible
    point, or a timeout that reported its best schedule so far."""
    return (point["status"] in ("feasible", "timeout")
            and point.get("valid") is True
            and point.get("overhead") is not None
            and point.get("peak_bytes") is not None
            and point["peak_bytes"] <= point["budget_bytes"])


def best_so_far(points):
    """(budget, overhead) steps: the best in-budget overhead at or below each
    budget; budgets before the first such point are left out."""
    steps, best = [], math.inf
    for point in sorted(points, key=lambda p: p["budget_bytes"]):
        if in_budget(point):
            best = min(best, point["overhead"])
        if best < math.inf:
            steps.append((point["budget_bytes"], best))
    return steps


def run_key(run):
    params = ",".join(f"{k}={v}" for k, v in sorted(run["params"].items()))
    return run["graph"], run["algorithm"] + (f":{params}" if params else "")


def feasible(points):
    return {p["budget_bytes"]: p for p in points if p["status"] == "feasible"}


def curve_at(points, budget):
    """Best feasible overhead at or below `budget` (inf if none)."""
    return min((p["overhead"] for b, p in feasible(points).items()
                if b <= budget), default=math.inf)


def compare_run(points_a, points_b):
    budgets = sorted({p["budget_bytes"] for p in points_a + points_b})
    a = [curve_at(points_a, b) for b in budgets]
    b = [curve_at(points_b, b) for b in budgets]
    a_better = any(x < y for x, y in zip(a, b))
    b_better = any(y < x for x, y in zip(a, b))
    dominance = ("equal" if not (a_better or b_better) else
                 "A" if not b_better else "B" if not a_better else "crossing")
    # Mean of (B - A) over the budget range where both curves are finite,
    # integrating the step functions exactly.
    area, width = 0.0, 0.0
    for i in range(len(budgets) - 1):
        if math.isfinite(a[i]) and math.isfinite(b[i]):
            span = budgets[i + 1] - budgets[i]
            area += (b[i] - a[i]) * span
            width += span
    mean_difference = area / width if width > 0 else None
    common = sorted(set(feasible(points_a)) & set(feasible(points_b)))
    ratios = [feasible(points_b)[x]["cost"] / feasible(points_a)[x]["cost"]
              for x in common if feasible(points_a)[x]["cost"] > 0]
    slowdown = (math.exp(sum(map(math.log, ratios)) / len(ratios))
                if ratios else None)
    lost = [x for x in sorted(feasible(points_a)) if x not in feasible(points_b)
            and x in {p["budget_bytes"] for p in points_b}]
    return {
        "dominates": dominance,
        "mean_overhead_difference": mean_difference,
        "min_feasible_budget_a": min(feasible(points_a), default=None),
        "min_feasible_budget_b": min(feasible(points_b), default=None),
        "geomean_slowdown": slowdown,
        "common_budgets": len(common),
        "budgets_lost": lost,
    }


def worse(row, tolerance):
    """Why B is worse than A beyond the tolerance, or None."""
    if row["budgets_lost"]:
        return f"no longer feasible at {len(row['budgets_lost'])} budget(s)"
    if row["geomean_slowdown"] is not None and \
            row["geomean_slowdown"] > 1 + tolerance:
        return f"slower by {row['geomean_slowdown'] - 1:.1%}"
    a, b = row["min_feasible_budget_a"], row["min_feasible_budget_b"]
    if a is not None and (b is None or b > a * (1 + tolerance)):
        return "smallest feasible budget grew"
    return None
