#!/usr/bin/env python3
"""How far the lowest measured rematbench plan is from what any schedule
could reach, per model of the studies (rematbench.torch.options.models).

    $REMAT_PYTHON bench/studies/memory_bounds.py        # results/memory_bounds/cpu.*

Each model is traced as rematbench.torch.plan traces it (op costs counted
in flops: the bounds read only sizes and edges) and its graph's lower
bounds are computed: the memory lower bound (`lower_bound_bytes`, one
step), the reach bound (`Graph.reach_lower_bound()`, docs/model.md: no
schedule that recomputes rather than offloads peaks lower) and the least a
schedule that computes each gradient once can take
(rematbench.torch.options.gradients_once_lower_bound, a bound for that
class only). The lowest
activation peak measured among the rematbench rows of a torch_options
results file (`--against`) is set beside them. Writes <out>/<device>.json
(results/SCHEMA.md, "Memory bounds") and <device>.md.
"""

import argparse
import json
import os
import sys
import time

import torch

import rematbench.torch as rt
from rematbench import files, script
from rematbench.torch import options


def bounds(name, make, args):
    model, inputs, loss_fn, *_ = make()
    plan = rt.plan(model, inputs, loss_fn, budget=2.0,
                   algorithms=["noremat"], cost="flop", repeats=1,
                   threads=1)
    g = plan.graph
    t = time.perf_counter()
    reach = g.reach_lower_bound(states_per_level=args.states_per_level,
                                seconds=args.seconds)
    seconds = time.perf_counter() - t
    witness = reach["witness"]
    return {"model": name, "graph_nodes": g.num_nodes,
            "noremat_simulated_peak_bytes": g.noremat_peak_bytes,
            "lower_bound_bytes": g.lower_bound_bytes,
            "reach_lower_bound_bytes": reach["bytes"],
            "reach_witness": None if witness is None else
            f"{g[witness].name} ({g[witness].op})",
            "reach_unproven_above_bytes": reach["unproven_above"],
            "reach_states": reach["states"],
            "reach_limited": reach["limited"],
            "reach_seconds": round(seconds, 2),
            "gradients_once_lower_bound_bytes":
            options.gradients_once_lower_bound(plan.traced.nodes)}


def lowest_measured(path):
    """The lowest measured activation peak of a rematbench row per model,
    with its row."""
    try:
        with open(path) as f:
            doc = json.load(f)
        rows, ctx = doc["rows"], doc["context"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"memory_bounds: {path}: not a torch_options results file "
              f"({e})", file=sys.stderr)
        sys.exit(2)
    low = {}
    for r in rows:
        peak = r.get("measured_peak_bytes")
        if not r["method"].startswith("rematbench") or peak is None:
            continue
        if r["model"] not in low or peak < low[r["model"]]["peak"]:
            low[r["model"]] = {"peak": peak, "method": r["method"],
                               "setting": r["setting"],
                               "algorithm": r.get("algorithm"),
                               "budget_bytes": r.get("budget_bytes")}
    return ctx, low


def report(doc, path):
    mib = lambda b: f"{b / 2**20:.2f}"  # noqa: E731
    ctx = doc["context"]
    lines = [f"# Memory bounds beside the lowest measured plans "
             f"({ctx['device']})", "",
             f"Computed {ctx['date']} at commit {ctx['git_commit']}, torch "
             f"{ctx['torch']}; command: `{ctx['command_line']}`. The "
             f"lowest measured peaks come from `{doc['against']}` (commit "
             f"{doc['against_commit']}).", "",
             "Bounds in MiB of activation memory (the graph's, which the "
             "simulator counts); `lowest` is the lowest allocator-level "
             "peak measured among that file's rematbench rows. `reach` is "
             "a bound on every schedule that recomputes rather than "
             "offloads (docs/model.md, \"Bounds of a graph\"); `once` "
             "bounds only schedules that compute each gradient once.", "",
             "| model | nodes | memory lower bound | reach | once | lowest "
             "| lowest / lower bound | lowest / reach | reach proven by | "
             "reach search |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for m in doc["models"]:
        low = m.get("lowest_measured")
        lines.append(
            f"| {m['model']} | {m['graph_nodes']} | "
            f"{mib(m['lower_bound_bytes'])} | "
            f"{mib(m['reach_lower_bound_bytes'])} | "
            f"{mib(m['gradients_once_lower_bound_bytes'])} | "
            + (f"{mib(low['peak'])} ({low['algorithm']}) | "
               f"{low['peak'] / m['lower_bound_bytes']:.3f} | "
               f"{low['peak'] / m['reach_lower_bound_bytes']:.3f} | "
               if low else "- | - | - | ")
            + f"{m['reach_witness'] or 'one step'} | "
            f"{m['reach_states']:,} sets, {m['reach_seconds']} s"
            + (", a level given up" if m["reach_limited"] else "") + " |")
    lines.append("")
    files.write_text(path, "\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="gpt2,resnet50,vit_b_16,unet")
    ap.add_argument("--sizes", default="cpu", choices=["quick", "cpu"],
                    help="model sizes (rematbench.torch.options.models)")
    ap.add_argument("--quick", action="store_const", const="quick",
                    dest="sizes", help="the same as --sizes quick")
    ap.add_argument("--against",
                    default="results/torch_options/studies/cpu.json",
                    help="a bench/studies/torch_options.py results file")
    ap.add_argument("--out", default="results/memory_bounds")
    ap.add_argument("--seconds", type=script.positive, default=10.0,
                    help="the reach bound's search limit per model")
    ap.add_argument("--states-per-level", type=script.positive_count, default=200_000)
    args = ap.parse_args()
    torch.set_num_threads(1)
    table = options.models(args.sizes)
    names = args.models.split(",")
    unknown = [n for n in names if n not in table]
    if unknown:
        raise SystemExit(f"memory_bounds: unknown model {unknown[0]} "
                         f"(models: {', '.join(table)})")
    against_ctx, low = lowest_measured(args.against)
    doc = {"format": "rematbench-memory-bounds", "version": 1,
           "context": options.machine(
               "cpu", "float32", {n: table[n][1] for n in names},
               source=os.path.dirname(os.path.abspath(__file__))),
           "against": args.against,
           "against_commit": against_ctx.get("git_commit"),
           "models": []}
    for name in names:
        m = bounds(name, table[name][0], args)
        if name in low:
            m["lowest_measured"] = low[name]
        doc["models"].append(m)
        print(f"{name}: memory lower bound {m['lower_bound_bytes']}, reach "
              f"{m['reach_lower_bound_bytes']}, lowest measured "
              f"{low.get(name, {}).get('peak')}", flush=True)
    os.makedirs(args.out, exist_ok=True)
    files.write_json(os.path.join(args.out, "cpu.json"), doc, indent=1)
    report(doc, os.path.join(args.out, "cpu.md"))


if __name__ == "__main__":
    script.run(main)
