#!/usr/bin/env python3
"""Replays every feasible point of a `remat sweep` results file whose graph
is a PyTorch export, and compares the simulator with the real step.

  scripts/replay_sweep.py RESULTS.json [--measured-costs] [--out-dir DIR]
  scripts/replay_sweep.py RESULTS.json --sweep G1.json,G2.json --budgets 4 \\
      --measured-costs        # runs `remat sweep` first, writing RESULTS.json

For each graph of RESULTS.json that scripts/export_torch.py wrote, the step
is rebuilt once (scripts/replay_torch.py), and each feasible point's
schedule is replayed: the file the sweep kept (`schedule_file`, relative to
RESULTS.json's directory, from `remat sweep --schedules-dir`) or, when the
results file has none, the schedule `remat solve` gives for the point's
algorithm, parameters and budget (checked against the point's simulated
peak and cost: a differing re-solve is reported, not hidden). Points whose
schedules are identical (budget-independent algorithms) are replayed once
and share the measurement.

With --measured-costs each graph is also exported with `--cost measured`
(the same model options, --threads) into DIR/measured/, and every point
gets the overhead those costs predict beside the FLOP model's.

Writes DIR/replay.json (schema: results/SCHEMA.md, "Replay results"),
DIR/peak.png (simulated vs measured peak), DIR/overhead.png (predicted vs
measured time overhead) and DIR/cost_model.md (the FLOP model against
measured op times, per op class). Exit status 0 when done (the figures
say what matched), 2 on bad usage or input.
"""

import argparse
import collections
import datetime
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys

from rematbench import files, script

import rematbench.torch.replay as RT
import rematbench.results

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args(argv):
    p = argparse.ArgumentParser(
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
        description="Replay every feasible point of a remat sweep results "
        "file on the PyTorch steps its exported graphs came from; write "
        "replay.json, peak.png, overhead.png and cost_model.md.")
    p.add_argument("results", help="results file of `remat sweep` (read, "
                   "or written first with --sweep)")
    p.add_argument("--sweep", help="comma-separated graph files: run `remat "
                   "sweep --algorithms all` on them first, writing RESULTS")
    p.add_argument("--budgets", type=script.positive_count, default=4,
                   help="budgets per graph for --sweep (default 4)")
    p.add_argument("--timeout", type=script.positive, default=30,
                   help="seconds per solve for --sweep and re-solves")
    p.add_argument("--remat", default="build/remat",
                   help="the remat binary (default build/remat)")
    p.add_argument("--out-dir", help="where the outputs go (default: the "
                   "directory of RESULTS)")
    p.add_argument("--device", default="cpu", help="cpu or cuda[:N]")
    p.add_argument("--threads", type=script.count, default=1,
                   help="torch CPU threads for replays and measured costs")
    p.add_argument("--repeats", type=script.count, default=3,
                   help="timed replays per point, each paired with one of "
                   "NoRemat (median); 0: memory and gradients only")
    p.add_argument("--warmup", type=script.count, default=0,
                   help="untimed pairs before timing (the memory-measuring "
                   "replay that comes first already warms the kernels)")
    p.add_argument("--time-limit", type=script.positive, default=None,
                   help="seconds of timed replays per schedule: fewer "
                   "pairs (at least one) for schedules whose replay is "
                   "long (each point records the pairs it got)")
    p.add_argument("--measured-costs", action="store_true",
                   help="export each graph with --cost measured too and "
                   "predict the overhead with it")
    p.add_argument("--cost-repeats", type=script.positive_count, default=5,
                   help="runs per op for the measured costs")
    args = p.parse_args(argv)
    return args


def run_sweep(args):
    """`remat sweep` on the graphs, keeping the schedules when the binary
    can (--schedules-dir)."""
    help_text = subprocess.run([args.remat, "sweep", "--help"],
                               capture_output=True, text=True).stdout
    cmd = [args.remat, "sweep", "--graphs", args.sweep, "--algorithms",
           "all", "--budgets", str(args.budgets), "--threads", "1",
           "--timeout", str(args.timeout), "--out", args.results]
    if "--schedules-dir" in help_text:
        cmd += ["--schedules-dir",
                os.path.join(os.path.dirname(args.results) or ".",
                             "schedules")]
    print("replay_sweep.py: " + " ".join(cmd), file=sys.stderr)
    r = subprocess.run(cmd)
    if r.returncode not in (0, 1):
        raise RT.BadInput(f"{args.remat} sweep failed (exit {r.returncode})")


def resolve(spec, base):
    for p in (spec, os.path.join(base, spec)):
        if os.path.isfile(p):
            return p
    return None


def is_export(path):
    try:
        RT.load_graph(path)
        return True
    except RT.BadInput:
        return False


def measured_cost_graph(path, graph, out_dir, args):
    """Exports the graph's step again with --cost measured (reused when the
    file is there and has the same nodes)."""
    from rematbench import models as M
    os.makedirs(out_dir, exist_ok=True)
    name = os.path.basename(path).replace(".json", "_measured.json")
    dest = os.path.join(out_dir, name)
    if os.path.isfile(dest):
        try:
            return dest, RT.load_cost_graph(dest, graph)
        except RT.BadInput:
            pass
    prov = graph["provenance"]
    margs = M.model_args_from_provenance(prov)
    cmd = [sys.executable, os.path.join(SOURCE, "scripts", "export_torch.py"),
           "--granularity", prov.get("granularity", "aten"),
           "--cost", "measured", "--repeats", str(args.cost_repeats),
           "--threads", str(args.threads), "--device", args.device,
           "-o", dest]
    for k in M.MODEL_ARGS:
        cmd += ["--" + k.replace("_", "-"), str(getattr(margs, k))]
    print("replay_sweep.py: " + " ".join(cmd[1:]), file=sys.stderr)
    subprocess.run(cmd, check=True)
    return dest, RT.load_cost_graph(dest, graph)


def schedule_for(point, run, rep, results_dir, args):
    """(schedule path, temporary?, source)."""
    if point.get("schedule_file"):
        path = os.path.join(results_dir, point["schedule_file"])
        if not os.path.isfile(path):
            raise RT.BadInput(f"{args.results}: schedule_file {path} is "
                              "missing")
        return path, False, "schedule_file"
    params = [f"{k}={v}" for k, v in sorted(run.get("params", {}).items())]
    path, _ = RT.solve(rep.core, rep.path, run["algorithm"],
                       point["budget_bytes"], params, args.timeout)
    return path, True, "remat solve"


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def git_commit():
    try:
        r = subprocess.run(["git", "-C", SOURCE, "rev-parse", "HEAD"],
                           capture_output=True, text=True)
        return r.stdout.strip() or None
    except OSError:
        return None


def main(argv):
    args = parse_args(argv)
    try:
        if args.sweep:
            run_sweep(args)
        results = rematbench.results.load("replay_sweep.py", args.results)
        results_dir = os.path.dirname(os.path.abspath(args.results))
        out_dir = args.out_dir or os.path.dirname(args.results) or "."
        doc = replay_all(results, results_dir, out_dir, args)
    except RT.BadInput as e:
        print(f"replay_sweep.py: {e}", file=sys.stderr)
        return 2
    os.makedirs(out_dir, exist_ok=True)  # after the input proved good
    files.write_json(os.path.join(out_dir, "replay.json"), doc, indent=1)
    plot(doc, out_dir)
    files.write_text(os.path.join(out_dir, "cost_model.md"), cost_report(doc))
    s = doc["summary"]
    print(f"replay_sweep.py: {s['points']} points ({s['replays']} distinct "
          f"schedules): gradients equal {s['gradients_equal_percent']:.1f}%, "
          f"peak equal {s['peak_equal']}/{s['points']}, median overhead "
          f"error {s['median_overhead_error_measured_costs']} (measured "
          f"costs), {s['median_overhead_error_flop']} (FLOP) -> "
          f"{out_dir}", file=sys.stderr)
    return 0


def replay_all(results, results_dir, out_dir, args):
    import torch
    import torchvision
    points, graphs = [], []
    specs = {g["name"]: g for g in results.get("graphs", [])}
    by_graph = collections.defaultdict(list)
    for run in results.get("runs", []):
        by_graph[run["graph"]].append(run)
    for gname in sorted(by_graph):
        ginfo = specs.get(gname, {})
        path = resolve(ginfo.get("spec", ""), results_dir)
        if path is None or not is_export(path):
            continue
        print(f"replay_sweep.py: {script.shown(gname)}: rebuilding "
              f"{script.shown(path)}",
              file=sys.stderr)
        rep = RT.Replayer(path, args.device, args.threads)
        cost_path, cost_graph = (None, None)
        if args.measured_costs:
            cost_path, cost_graph = measured_cost_graph(
                path, rep.graph, os.path.join(out_dir, "measured"), args)
        graphs.append({
            "name": gname, "export": os.path.relpath(path, SOURCE),
            "measured_cost_graph": os.path.relpath(cost_path, SOURCE)
            if cost_path else None,
            "lower_bound_bytes": ginfo.get("lower_bound_bytes"),
            "noremat_peak_bytes": ginfo.get("noremat_peak_bytes"),
            "base_cost": ginfo.get("base_cost"),
        })
        # op class -> [extra computes, cost, measured cost], filled below
        recomputed = graphs[-1]["recomputation_by_op_class"] = {}
        done = {}  # schedule digest -> replay figures
        for run in sorted(by_graph[gname],
                          key=lambda r: (r["algorithm"],
                                         json.dumps(r.get("params", {}),
                                                    sort_keys=True))):
            for point in run["points"]:
                # Offloading schedules are simulated only: the executor
                # runs computes and frees (docs/model.md, "Time and
                # offloading").
                if point.get("status") != "feasible" or \
                        point.get("transfer_bytes"):
                    continue
                try:
                    sched, temp, source = schedule_for(point, run, rep,
                                                       results_dir, args)
                except RT.BadInput as e:
                    points.append(base_point(gname, run, point, rep) |
                                  {"replayed": False, "message": str(e)})
                    continue
                try:
                    key = digest(sched)
                    if key not in done:
                        print(f"replay_sweep.py: {script.shown(gname)} "
                              f"{script.shown(run['algorithm'])} "
                              f"{point['budget_bytes']}", file=sys.stderr)
                        done[key] = rep.replay(sched, args.repeats,
                                               args.warmup, cost_graph,
                                               args.time_limit)
                        done[key]["first"] = (run["algorithm"],
                                              point["budget_bytes"])
                        count_recomputations(sched, rep, cost_graph,
                                             recomputed)
                    r = done[key]
                finally:
                    if temp:
                        os.unlink(sched)
                points.append(make_point(gname, run, point, rep, r, source))
    if not points:
        raise RT.BadInput(f"{args.results}: no feasible point on a PyTorch "
                          "export")
    summary = summarize(points)
    return {
        "format": "rematbench-replay-results",
        "version": 1,
        "context": {
            "date": datetime.datetime.now(datetime.timezone.utc).strftime(
                "%Y-%m-%dT%H:%M:%SZ"),
            "host": platform.node(),
            "git_commit": git_commit(),
            "results_file": os.path.relpath(os.path.abspath(args.results),
                                            SOURCE),
            "command_line": " ".join(["scripts/replay_sweep.py"] +
                                     sys.argv[1:]),
            "device": args.device,
            "torch": torch.__version__,
            "torchvision": torchvision.__version__,
            "python": platform.python_version(),
            "threads": torch.get_num_threads(),
            "repeats": args.repeats,
            "warmup": args.warmup,
        },
        "graphs": graphs,
        "summary": summary,
        "points": points,
    }


def base_point(gname, run, point, rep):
    return {
        "graph": gname,
        "algorithm": run["algorithm"],
        "params": run.get("params", {}),
        "budget_bytes": point["budget_bytes"],
        "results_peak_bytes": point.get("peak_bytes"),
        "results_cost": point.get("cost"),
    }


def make_point(gname, run, point, rep, r, source):
    p = base_point(gname, run, point, rep)
    pm = r.get("predicted_overhead_measured_costs")
    p.update({
        "replayed": True,
        "schedule_source": source,
        "same_as": None if r["first"] == (run["algorithm"],
                                          point["budget_bytes"]) else
        {"algorithm": r["first"][0], "budget_bytes": r["first"][1]},
        # A re-solved schedule that is not the sweep's (a time limit hit
        # differently) is still replayed, and said so here.
        "matches_results": r["simulated_peak_bytes"] == point.get(
            "peak_bytes") and r["simulated_cost"] == point.get("cost"),
        "length": r["length"],
        "simulated_peak_bytes": r["simulated_peak_bytes"],
        "simulated_cost": r["simulated_cost"],
        "measured_peak_bytes": r["measured_peak_bytes"],
        "peak_ratio": r["peak_ratio"],
        "peak_equal": r["measured_peak_bytes"] == r["simulated_peak_bytes"],
        "event_differences": r["event_differences"],
        "cuda_peak_bytes": r["cuda_peak_bytes"],
        "predicted_overhead_flop": r["predicted_overhead"],
        "predicted_overhead_measured_costs": pm,
        "step_seconds": r["step_seconds"],
        "timed_pairs": r["repeats"],
        "baseline_seconds": r["baseline_seconds"],
        "ratio_to_baseline": r["ratio_to_baseline"],
        "overhead_error_flop": None if r["ratio_to_baseline"] is None else
        r["ratio_to_baseline"] / r["predicted_overhead"] - 1,
        "overhead_error_measured_costs": None if pm is None or
        r["ratio_to_baseline"] is None else r["ratio_to_baseline"] / pm - 1,
        "cpu_seconds": r["cpu_seconds"],
        "baseline_cpu_seconds": r["baseline_cpu_seconds"],
        "ratio_to_baseline_cpu": r["ratio_to_baseline_cpu"],
        "cpu_overhead_error_flop": None if r["ratio_to_baseline_cpu"] is None
        else r["ratio_to_baseline_cpu"] / r["predicted_overhead"] - 1,
        "cpu_overhead_error_measured_costs": None if pm is None or
        r["ratio_to_baseline_cpu"] is None else
        r["ratio_to_baseline_cpu"] / pm - 1,
        "gradients_equal": r["gradients_equal"],
        "max_grad_diff": r["max_grad_diff"],
        "loss_equal": r["loss_equal"],
        "buffers_equal": r["buffers_equal"],
        "device": r["device"],
        "torch": r["torch"],
    })
    return p


def count_recomputations(sched, rep, cost_graph, acc):
    """Adds, per op class, the computes beyond the first of each node in
    one schedule and their cost in the graph's unit and measured."""
    graph = rep.graph
    events, _ = RT.read_schedule(sched, rep.core)
    seen = set()
    for k, v, _ in events:
        if k != "c":
            continue
        if v in seen:
            c = acc.setdefault(op_class(graph["nodes"][v].get("op")),
                               [0, 0, 0])
            c[0] += 1
            c[1] += graph["nodes"][v]["cost"]
            if cost_graph is not None:
                c[2] += cost_graph["nodes"][v]["cost"]
        seen.add(v)


def summarize(points):
    done = [p for p in points if p.get("replayed")]
    n = len(done)
    # One entry per distinct schedule (budget-independent algorithms give
    # the same schedule at every budget), and those that recompute.
    distinct = [p for p in done if p["same_as"] is None]
    recomputing = [p for p in distinct
                   if p["predicted_overhead_flop"] > 1.01]

    def med_abs(key, among=None):
        xs = [abs(p[key]) for p in (done if among is None else among)
              if p.get(key) is not None]
        return round(statistics.median(xs), 4) if xs else None

    return {
        "points": n,
        "not_replayed": len(points) - n,
        "replays": len(distinct),
        "gradients_equal": sum(p["gradients_equal"] for p in done),
        "gradients_equal_percent": 100.0 * sum(
            p["gradients_equal"] for p in done) / n if n else 0.0,
        "buffers_equal": sum(p["buffers_equal"] for p in done),
        "peak_equal": sum(p["peak_equal"] for p in done),
        "median_overhead_error_flop": med_abs("overhead_error_flop"),
        "median_overhead_error_measured_costs": med_abs(
            "overhead_error_measured_costs"),
        "distinct_schedules_median_overhead_error_flop": med_abs(
            "overhead_error_flop", distinct),
        "distinct_schedules_median_overhead_error_measured_costs": med_abs(
            "overhead_error_measured_costs", distinct),
        "recomputing_schedules": len(recomputing),
        "recomputing_median_overhead_error_flop": med_abs(
            "overhead_error_flop", recomputing),
        "recomputing_median_overhead_error_measured_costs": med_abs(
            "overhead_error_measured_costs", recomputing),
        "cpu_median_overhead_error_flop": med_abs("cpu_overhead_error_flop"),
        "cpu_median_overhead_error_measured_costs": med_abs(
            "cpu_overhead_error_measured_costs"),
        "cpu_recomputing_median_overhead_error_flop": med_abs(
            "cpu_overhead_error_flop", recomputing),
        "cpu_recomputing_median_overhead_error_measured_costs": med_abs(
            "cpu_overhead_error_measured_costs", recomputing),
        "within_10_percent_measured_costs": sum(
            1 for p in done if p.get("overhead_error_measured_costs")
            is not None and abs(p["overhead_error_measured_costs"]) <= 0.1),
    }


def plot(doc, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    pts = [p for p in doc["points"] if p.get("replayed")]
    graphs = sorted({p["graph"] for p in pts})
    marks = "osD^v<>p"

    def save(fig, name):
        with files.replacing(os.path.join(out_dir, name), binary=True) as f:
            fig.savefig(f, format="png", dpi=110,
                        metadata={"Software": None})
        plt.close(fig)

    fig, ax = plt.subplots(figsize=(6.4, 5.4))
    lo, hi = float("inf"), 0
    for i, g in enumerate(graphs):
        xs = [p["simulated_peak_bytes"] / 2**20 for p in pts
              if p["graph"] == g]
        ys = [p["measured_peak_bytes"] / 2**20 for p in pts
              if p["graph"] == g]
        ax.scatter(xs, ys, marker=marks[i % len(marks)], s=22,
                   label=g.replace("torch_", ""), alpha=0.75)
        lo, hi = min([lo] + xs + ys), max([hi] + xs + ys)
    ax.plot([lo, hi], [lo, hi], "k--", lw=0.8, label="y = x")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("simulated activation peak (MiB)")
    ax.set_ylabel("measured live-storage peak (MiB)")
    ax.set_title(f"Replayed schedules, {doc['context']['device']}, torch "
                 f"{doc['context']['torch']}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    save(fig, "peak.png")

    fig, ax = plt.subplots(figsize=(6.4, 5.4))
    hi = 1.0
    for key, y, label, m in (
            ("predicted_overhead_flop", "ratio_to_baseline",
             "wall time vs FLOP costs", "x"),
            ("predicted_overhead_measured_costs", "ratio_to_baseline",
             "wall time vs measured costs", "o"),
            ("predicted_overhead_measured_costs", "ratio_to_baseline_cpu",
             "CPU time vs measured costs", "+")):
        timed = [p for p in pts if p.get(key) is not None and
                 p.get(y) is not None]
        xs = [p[key] for p in timed]
        ys = [p[y] for p in timed]
        if xs:
            ax.scatter(xs, ys, marker=m, s=22, alpha=0.7, label=label)
            hi = max([hi] + xs + ys)
    ax.plot([1, hi], [1, hi], "k--", lw=0.8, label="y = x")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("predicted cost overhead (cost / NoRemat cost)")
    ax.set_ylabel("measured overhead (time / NoRemat time)")
    ax.set_title("Overhead: simulator vs replay")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save(fig, "overhead.png")


def op_class(op):
    if not op:
        return "other"
    name = op.split(".")[1] if op.startswith("aten.") else op
    for key, cls in (("convolution_backward", "convolution backward"),
                     ("convolution", "convolution"),
                     ("batch_norm_backward", "batch norm backward"),
                     ("batch_norm", "batch norm"),
                     ("mm", "matmul"), ("bmm", "matmul"), ("addmm", "matmul"),
                     ("pool", "pooling"), ("upsample", "upsampling"),
                     ("softmax", "softmax"), ("nll_loss", "loss")):
        if key in name:
            return cls
    return "element-wise and other"


def cost_report(doc):
    """The FLOP model against measured op times, per op class; and its
    overhead predictions against measured time."""
    lines = ["# FLOP cost model vs measured op time", "",
             f"Written by `{doc['context']['command_line']}` on "
             f"{doc['context']['device']} ({doc['context']['host']}, torch "
             f"{doc['context']['torch']}, {doc['context']['threads']} "
             f"thread(s)), {doc['context']['date']}. Per op class, the share "
             "of the base cost (every needed node once) under the FLOP "
             "model and under measured time (`export_torch.py --cost "
             "measured`), and the measured nanoseconds per FLOP: a class "
             "whose time share exceeds its FLOP share is cheaper in FLOPs "
             "than in time, so the FLOP model underprices recomputing it.",
             ""]
    have = [g for g in doc["graphs"] if g.get("measured_cost_graph")]
    if not have:
        return "\n".join(lines + ["No measured costs (run with "
                                  "--measured-costs).", ""])
    for g in have:
        flop = RT.load_graph(os.path.join(SOURCE, g["export"]))
        meas = RT.load_graph(os.path.join(SOURCE, g["measured_cost_graph"]))
        by = collections.defaultdict(lambda: [0, 0, 0])
        for a, b in zip(flop["nodes"], meas["nodes"]):
            c = by[op_class(a.get("op"))]
            c[0] += a["cost"]
            c[1] += b["cost"]
            c[2] += 1
        tf = sum(c[0] for c in by.values()) or 1
        tm = sum(c[1] for c in by.values()) or 1
        lines += [f"## {g['name']}", "",
                  f"Base: {tf:,} FLOP, {tm / 1e6:,.1f} ms measured.", "",
                  "| op class | nodes | FLOP share | time share | ns / kFLOP |",
                  "|---|---|---|---|---|"]
        for cls, (f, m, n) in sorted(by.items(), key=lambda kv: -kv[1][1]):
            lines.append(f"| {cls} | {n} | {100 * f / tf:.1f}% | "
                         f"{100 * m / tm:.1f}% | "
                         f"{(1e3 * m / f) if f else float('nan'):.2f} |")
        lines.append("")
    lines += ["## What the recomputations cost, per op class", "",
              "Over every distinct replayed schedule of a graph, the "
              "computes of a node beyond its first, by op class: their "
              "share of all recomputed cost under the FLOP model and under "
              "measured time. Where the two shares differ, the FLOP model "
              "misprices that class's recomputation (and so the overhead "
              "of schedules that recompute it).", "",
              "| graph | op class | recomputes | FLOP share | time share |",
              "|---|---|---|---|---|"]
    for g in have:
        rc = g.get("recomputation_by_op_class") or {}
        tf = sum(c[1] for c in rc.values()) or 1
        tm = sum(c[2] for c in rc.values()) or 1
        for cls, (n, f, m) in sorted(rc.items(), key=lambda kv: -kv[1][2]):
            lines.append(f"| {g['name']} | {cls} | {n} | {100 * f / tf:.1f}% "
                         f"| {100 * m / tm:.1f}% |")
    lines.append("")
    pts = [p for p in doc["points"] if p.get("replayed")]
    lines += ["## Overhead predictions vs measured time", "",
              "Per graph, over its replayed points: the median of |measured "
              "time overhead / predicted overhead - 1| with each cost model "
              "(1.0 overhead = the NoRemat replay's time).", "",
              "| graph | points | median error, FLOP model | median error, "
              "measured costs |", "|---|---|---|---|"]
    for g in sorted({p["graph"] for p in pts}):
        ps = [p for p in pts if p["graph"] == g and
              p["overhead_error_flop"] is not None]
        if not ps:
            continue
        ef = statistics.median(abs(p["overhead_error_flop"]) for p in ps)
        em = [abs(p["overhead_error_measured_costs"]) for p in ps
              if p.get("overhead_error_measured_costs") is not None]
        lines.append(f"| {g} | {len(ps)} | {100 * ef:.1f}% | "
                     f"{(100 * statistics.median(em)) if em else float('nan'):.1f}% |")
    s = doc["summary"]
    pct = lambda x: "n/a" if x is None else f"{100 * x:.1f}%"
    lines += ["", "Median relative error, FLOP model / measured costs: "
              f"all {s['points']} points {pct(s['median_overhead_error_flop'])}"
              f" / {pct(s['median_overhead_error_measured_costs'])}; the "
              f"{s['replays']} distinct schedules "
              f"{pct(s['distinct_schedules_median_overhead_error_flop'])} / "
              f"{pct(s['distinct_schedules_median_overhead_error_measured_costs'])}"
              f"; the {s['recomputing_schedules']} distinct schedules that "
              "recompute (predicted FLOP overhead > 1.01) "
              f"{pct(s['recomputing_median_overhead_error_flop'])} / "
              f"{pct(s['recomputing_median_overhead_error_measured_costs'])}."
              " With the process's CPU time instead of wall time (steadier "
              "on a shared machine): all points "
              f"{pct(s['cpu_median_overhead_error_flop'])} / "
              f"{pct(s['cpu_median_overhead_error_measured_costs'])}, "
              "recomputing schedules "
              f"{pct(s['cpu_recomputing_median_overhead_error_flop'])} / "
              f"{pct(s['cpu_recomputing_median_overhead_error_measured_costs'])}"
              ".", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    script.run(main, sys.argv[1:])
