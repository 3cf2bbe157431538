#!/usr/bin/env python3
"""Where a plan's predicted activation memory and the allocator's differ,
op by op.

    $REMAT_PYTHON bench/studies/torch_peak_gap.py                # results/torch_peak_gap/cpu.*
    $REMAT_PYTHON bench/studies/torch_peak_gap.py --models unet --quick

For each model of the studies (rematbench.torch.options.models) and each
budget (fractions of the program's NoRemat peak), rematbench.torch plans
the step and runs the plan's program once under the profiler with every
op marked by the schedule event that made it. For each event: the predicted activation
memory while it runs (the simulated memory plus what the program holds
beside the schedule, as the plan's predicted peak counts it) against the
largest sum of live allocations the allocator had while its ops ran
(gradients left out, as rematbench.torch.measure counts them). Writes
<out>/<device>.json and <device>.md: per plan the predicted and measured
peaks, how many events are within 5%, and the events that differ most,
named by node and ATen op: where the model and the allocator disagree,
this says where, so that the model can be corrected.
"""

import argparse
import os
import sys
import time

import torch

import rematbench
import rematbench.torch as rt
from rematbench import files, script
from rematbench.torch import measure
from rematbench.torch import options

_MARK = "rematbench.event:"


def event_memory(plan, inputs):
    """[(event, measured bytes)]: the largest sum of live allocations while
    the ops of each schedule event ran, in one run of the plan's program,
    and the measured peak of the whole run."""
    from torch.profiler import record_function
    built = plan.program()
    flat = plan.program_inputs(inputs, built)

    class Marked(torch.fx.Interpreter):
        """Runs the program as its generated code does, each op marked by
        its event. A value nothing reads (the first draw of a dropout mask
        whose readers use a replay) is dropped at once, as the generated
        code drops it; the interpreter itself would hold it to the end."""

        def run_node(self, n):
            if n.op != "call_function" or "remat_event" not in n.meta:
                return super().run_node(n)
            with record_function(_MARK + str(n.meta["remat_event"])):
                value = super().run_node(n)
            return value if n.users else None

    device = next(t.device for t in flat if isinstance(t, torch.Tensor))
    with torch.no_grad():
        out, allocs = measure.allocation_events(
            lambda: Marked(built.module).run(*flat), device, mark=_MARK)
    grads = {g.untyped_storage().data_ptr() for g in out[1:]
             if isinstance(g, torch.Tensor)}
    during = {}
    for (_, _, label), total in zip(allocs, measure.live_totals(allocs,
                                                                grads)):
        if label is not None:
            e = int(label)
            during[e] = max(during.get(e, 0), total)
    peak, _, _ = measure.peak_of(allocs, grads)
    return sorted(during.items()), peak


def gap(plan, inputs, top):
    """The predicted and measured memory of `plan`'s events, compared."""
    nodes = plan.traced.nodes
    predicted = dict(plan.memory.timeline(plan.schedule, plan.anchoring))
    measured, measured_peak = event_memory(plan, inputs)
    rows = []
    for e, m in measured:
        if e not in predicted:
            continue
        n = nodes[plan.schedule[e][1]]  # event e computes this node
        rows.append({"event": e, "node": n["name"], "op": n["op"],
                     "kind": n["kind"], "predicted_bytes": predicted[e],
                     "measured_bytes": m,
                     "difference_bytes": m - predicted[e]})
    within = sum(1 for r in rows if abs(r["difference_bytes"]) <=
                 0.05 * max(r["predicted_bytes"], 1))
    peak_event = max(rows, key=lambda r: r["measured_bytes"], default=None)
    rows.sort(key=lambda r: -abs(r["difference_bytes"]))
    return {"algorithm": plan.algorithm,
            "budget_bytes": plan.budget_bytes,
            "predicted_peak_bytes": plan.predicted_peak_bytes,
            "measured_peak_bytes": measured_peak,
            "events_compared": len(rows), "events_within_5pct": within,
            "measured_peak_event": peak_event, "largest": rows[:top]}


def run_model(name, build, args):
    torch.manual_seed(0)
    model, (x, y), loss_fn, _, _ = build()
    model.train()
    t = time.perf_counter()
    # Traced at twice the NoRemat peak, which every algorithm fits (at 1.0
    # noremat alone may not: the solvers judge the node-level simulated
    # peak, which is above the program's, the fractions' base, where a
    # batch norm's output is freed before its statistics); each budget
    # below is planned anew, and one that nothing fits is recorded as such.
    plan = rt.plan(model, (x, y), loss_fn, budget=2.0,
                   algorithms=args.algorithms or options.HEURISTICS,
                   timeout=args.solve_timeout, threads=args.threads,
                   cost=args.cost)
    out = {"model": name, "graph_nodes": plan.graph.num_nodes,
           "noremat_peak_bytes": plan.noremat_peak_bytes, "plans": []}
    for f in args.budgets:
        try:
            p = plan.at(f)
        except rematbench.Error as e:
            out["plans"].append({"budget_fraction": f, "error": str(e)})
            log(f"  {name} at {f}: {e}")
            continue
        g = dict(gap(p, (x, y), args.top), budget_fraction=f)
        out["plans"].append(g)
        log(f"  {name} at {f}: {g['algorithm']} predicted "
            f"{g['predicted_peak_bytes']}, measured "
            f"{g['measured_peak_bytes']}; {g['events_within_5pct']} of "
            f"{g['events_compared']} events within 5%")
    out["seconds"] = round(time.perf_counter() - t, 1)
    return out


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def _load(avg):
    return "not recorded" if avg is None else \
        "/".join(f"{a:.1f}" for a in avg)


def _mib(b):
    return f"{b / 2**20:.2f}"


def report(doc, path):
    ctx = doc["context"]
    lines = [f"# Predicted against allocator-measured activation memory, "
             f"event by event ({ctx['device']})", "",
             f"Measured {ctx['date']} on {ctx['host']} ({ctx['cpu_model']}),"
             f" torch {ctx['torch']}, commit {ctx['git_commit']}, load "
             f"average {_load(ctx.get('load_average_start'))} at the start, "
             f"{_load(ctx.get('load_average_end'))} at the end. Command: "
             f"`{ctx['command_line']}`.", "",
             "Predicted: the plan's activation memory while each schedule "
             "event runs (simulated memory, workspace included, plus the "
             "program's generator states and loss). Measured: the largest "
             "sum of live allocations while the event's ops ran (profiler "
             "memory events; the blocks that become parameter gradients "
             "left out). An event that allocates nothing is not compared.",
             ""]
    for m in doc["models"]:
        lines += [f"## {m['model']}", "", ctx["models"][m["model"]], "",
                  f"{m['graph_nodes']} nodes; NoRemat program peak "
                  f"{_mib(m['noremat_peak_bytes'])} MiB.", "",
                  "| budget | algorithm | predicted peak MiB | measured "
                  "peak MiB | measured / predicted | events within 5% | "
                  "largest differences (node, op: measured - predicted "
                  "KiB) |", "|---:|---|---:|---:|---:|---:|---|"]
        for p in m["plans"]:
            if "error" in p:
                lines.append(f"| {p['budget_fraction']} | - | - | - | - | "
                             f"- | {p['error'][:120]} |")
                continue
            big = "; ".join(
                f"{r['node']} ({r['op']}, {r['kind']}): "
                f"{r['difference_bytes'] / 1024:+,.0f}"
                for r in p["largest"])
            lines.append(
                f"| {p['budget_fraction']} | {p['algorithm']} | "
                f"{_mib(p['predicted_peak_bytes'])} | "
                f"{_mib(p['measured_peak_bytes'])} | "
                f"{p['measured_peak_bytes'] / p['predicted_peak_bytes']:.3f}"
                f" | {p['events_within_5pct']} of {p['events_compared']} | "
                f"{big} |")
        lines.append("")
    files.write_text(path, "\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="resnet50,vit_b_16,gpt2,unet")
    ap.add_argument("--quick", action="store_true",
                    help="smaller sizes (the test's)")
    ap.add_argument("--budgets", default="1.0,0.7,0.5",
                    type=script.positives,
                    help="fractions of the NoRemat program peak")
    ap.add_argument("--top", type=script.count, default=4,
                    help="events listed per plan")
    ap.add_argument("--algorithms", default=None,
                    type=lambda s: s.split(","),
                    help="comma-separated algorithms the plans choose from "
                    "(default: rematbench.torch.options.HEURISTICS)")
    ap.add_argument("--threads", type=script.positive_count, default=1)
    ap.add_argument("--solve-timeout", type=script.positive, default=20)
    ap.add_argument("--cost", choices=("measured", "flop"),
                    default="measured",
                    help="the plan's op costs (rt.plan): measured, as users "
                    "plan, or flop, which choose the same schedules on any "
                    "machine at any load")
    ap.add_argument("--out", default=None,
                    help="directory (default results/torch_peak_gap)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    out = args.out or os.path.join(root, "results", "torch_peak_gap")
    os.makedirs(out, exist_ok=True)
    table = options.models("quick" if args.quick else "cpu")
    names = args.models.split(",")
    doc = {"format": "rematbench-torch-peak-gap", "version": 1,
           "context": options.machine(
               "cpu", "float32", {n: table[n][1] for n in names},
               source=os.path.dirname(os.path.abspath(__file__))),
           "models": []}
    doc["context"]["load_average_start"] = list(os.getloadavg())
    for n in names:
        doc["models"].append(run_model(n, table[n][0], args))
    doc["context"]["load_average_end"] = list(os.getloadavg())
    path = os.path.join(out, "cpu.json")
    files.write_json(path, doc, indent=1)
    report(doc, os.path.join(out, "cpu.md"))
    log(f"wrote {path}")


if __name__ == "__main__":
    script.run(main)
