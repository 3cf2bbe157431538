#!/usr/bin/env bash
# scripts/plot_tradeoff.py: on a real sweep it writes one PNG per graph and
# refuses a file that is not a results file with status 2; drawn one graph
# at a time (--jobs 1) the files are the same; on a tiny inline
# results file, known answers for what it draws (timeouts with a schedule,
# clipping, the proven optimum, colours in registry order, a linear axis,
# the legend outside the data; at most 8 curves a panel, the Pareto-relevant
# ones first, every method once, distinct colours and markers in a panel).
set -euo pipefail
remat=$1
source_dir=$2
source "$source_dir/scripts/env.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$remat" sweep --graphs chain:n=6,"$source_dir"/tests/fixtures/diamond.json \
  --algorithms noremat,checkpoint_last --budgets 4 --out "$work/r.json" >/dev/null
"$REMAT_PYTHON" "$source_dir/scripts/plot_tradeoff.py" "$work/r.json" \
  --out "$work/plots" --formats png --remat "$remat" >/dev/null
test -s "$work/plots/chain_n=6.png"
test -s "$work/plots/diamond.png"
# The graphs are drawn in separate processes (--jobs); one at a time the
# files are the same.
"$REMAT_PYTHON" "$source_dir/scripts/plot_tradeoff.py" "$work/r.json" \
  --out "$work/plots1" --formats png --remat "$remat" --jobs 1 >/dev/null
cmp "$work/plots/chain_n=6.png" "$work/plots1/chain_n=6.png"
cmp "$work/plots/diamond.png" "$work/plots1/diamond.png"
echo '{"format": "other"}' > "$work/bad.json"
status=0
"$REMAT_PYTHON" "$source_dir/scripts/plot_tradeoff.py" "$work/bad.json" \
  --out "$work/plots" 2>/dev/null || status=$?
test "$status" -eq 2

PYTHONPATH="$source_dir/scripts${PYTHONPATH:+:$PYTHONPATH}" "$REMAT_PYTHON" - "$remat" <<'EOF'
import json
import subprocess
import sys

import plot_tradeoff as pt

remat = sys.argv[1]


def point(budget, status, overhead=None, peak=None, valid=None, **extra):
    return dict(budget_bytes=budget, status=status, overhead=overhead,
                peak_bytes=peak, valid=valid,
                cost=None if overhead is None else round(overhead * 100),
                **extra)


graph = dict(name="g", nodes=5, static_bytes=0, lower_bound_bytes=10,
             noremat_peak_bytes=100)
runs = [
    dict(graph="g", algorithm="revolve", params={}, points=[
        point(10, "timeout", 1.4, 10, True),     # best so far: drawn open
        point(40, "feasible", 1.2, 30, True),
        point(70, "timeout"),                    # no schedule: not drawn
        point(100, "infeasible", 1.0, 120, True)]),  # over budget
    dict(graph="g", algorithm="checkpoint_last", params={}, points=[
        point(10, "feasible", 7.5, 10, True),    # above the axis: clipped
        point(100, "feasible", 1.0, 40, True)]),
    dict(graph="g", algorithm="exact_search", params={}, points=[
        point(40, "feasible", 1.1, 40, True, optimal=True),
        point(70, "feasible", 1.05, 60, True, lower_bound_cost=105),
        point(100, "timeout", 1.0, 90, True, lower_bound_cost=90)]),
    dict(graph="g", algorithm="not_registered", params={}, points=[
        point(10, "infeasible")]),
]

registry = [a["name"] for a in json.loads(subprocess.run(
    [remat, "list", "--json"], check=True, capture_output=True,
    text=True).stdout)["algorithms"]]
order = pt.registry_order(remat, [r["algorithm"] for r in runs], "test")
assert order == registry + ["not_registered"], order
# Colours and markers are distinct over the whole registry and do not
# depend on which algorithms a file holds.
styles = pt.styles(registry)
assert len({s[0] for s in styles.values()}) == len(registry), styles
assert len({s[1] for s in styles.values()}) == len(registry), styles
assert pt.styles(pt.registry_order(remat, ["revolve"], "test"))["revolve"] == \
    styles["revolve"]

plan = pt.layout(graph, runs, order, max_overhead=3.0)
series = {s["label"]: s for s in plan["series"]}
assert [s["label"] for s in plan["series"]] == [
    a for a in order if a in series], [s["label"] for s in plan["series"]]
assert series["revolve"]["color"] == styles["revolve"][0]
# (budget, overhead, open, clipped)
assert series["revolve"]["points"] == [(10, 1.4, True, False),
                                       (40, 1.2, False, False)], series
assert series["revolve"]["steps"] == [(10, 1.4), (40, 1.2), (70, 1.2),
                                      (100, 1.2)], series
assert series["checkpoint_last"]["points"] == [(10, 7.5, False, True),
                                               (100, 1.0, False, False)]
assert series["not_registered"]["points"] == []
assert plan["clip"] == 3.0 and 3.0 < plan["top"] < 3.2, plan
assert 0.9 < plan["bottom"] < 1.0, plan
# Proven: `optimal`, or a lower bound equal to the cost; the timeout at 100
# proved nothing.
assert plan["optimum"] == [(40, 1.1), (70, 1.05)], plan["optimum"]
assert pt.layout(graph, runs, order, max_overhead=0)["clip"] == 7.5

fig = pt.draw(graph, runs, order)
ax = fig.axes[0]
assert ax.get_yscale() == "linear"
ticks = [t for t in ax.get_yticks() if plan["bottom"] <= t <= plan["top"]]
assert len(ticks) >= 5 and max(b - a for a, b in zip(ticks, ticks[1:])) <= 0.25, ticks
fig.canvas.draw()
renderer = fig.canvas.get_renderer()
legend = ax.get_legend().get_window_extent(renderer)
assert legend.x0 >= ax.get_window_extent(renderer).x1, "legend overlaps the data"
labels = [t.get_text() for t in ax.get_legend().get_texts()]
for text in ("timeout (best schedule so far)", "above 3x (clipped)",
             "optimum (proven)", "not_registered (no point in budget)"):
    assert text in labels, labels
assert len(fig.axes) == 1 and "Pareto front (all methods)" not in labels

# Every registered method on one graph: at most 8 curves a panel. The
# front: revolve everywhere but at the peak, exact_search at the middle
# budgets too, noremat and all others tie at the peak (a small share).
many = []
for i, name in enumerate(registry):
    overheads = {"revolve": [1.5, 1.2, 1.1, 1.0],
                 "exact_search": [None, 1.2, 1.1, 1.0]}.get(
        name, [None, 2.0 + i / 10, 1.5 + i / 10, 1.0])
    many.append(dict(graph="g", algorithm=name, params={}, points=[
        point(b, "feasible", o, b, True) if o is not None
        else point(b, "infeasible")
        for b, o in zip((10, 40, 70, 100), overheads)]))
plan = pt.layout(graph, many, order, max_overhead=3.0)
groups = pt.split_panels(plan["series"], peak=100)
assert sorted(s["label"] for g in groups for s in g) == sorted(registry)
# Below the peak only revolve and exact_search are on the front: the first
# panel; the others in as few panels of at most 8 as hold them, of
# near-equal size (16 others: 8 and 8).
assert [[s["label"] for s in g] for g in groups][0] == [
    "exact_search", "revolve"], [[s["label"] for s in g] for g in groups]
others = len(registry) - 2
panels = -(-others // 8)
assert [len(g) for g in groups] == [2] + [
    others // panels + (i < others % panels) for i in range(panels)], [
    len(g) for g in groups]
# Ranked by their share of the front: revolve alone at 10, tied at 40, 70.
assert [s["label"] for s in pt.split_panels(
    plan["series"], max_curves=1, peak=100)[0]] == ["revolve"]
# Without the peak left out, the ties at 1.0 there make all relevant, and
# the first panel is full.
assert len(pt.split_panels(plan["series"])[0]) == 8
assert pt.front_steps(plan["series"]) == [(10, 1.5), (40, 1.2), (70, 1.1),
                                          (100, 1.0)]
fig = pt.draw(graph, many, order)
axes = [ax for ax in fig.axes if ax.get_legend() is not None]
assert len(axes) == 1 + panels, (len(axes), panels)
for ax in axes:
    lines = [h for h, t in zip(*ax.get_legend_handles_labels())
             if t in registry]
    assert len(lines) <= 8
    assert len({h.get_color() for h in lines}) == len(lines)
    assert len({h.get_marker() for h in lines}) == len(lines)
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "Pareto front (all methods)" in texts, texts
EOF
echo "plot_tradeoff: ok"
