#!/usr/bin/env python3
"""The Markdown table and the plot of a torch_options results file
(bench/studies/torch_options.py; regenerate with
`$REMAT_PYTHON bench/studies/torch_options_report.py results/torch_options/cpu.json`,
or merge runs made side by side: `... A.json B.json --out cpu.json`)."""

import argparse
import json
import os
import sys

from rematbench import files, script

PYTORCH = ("checkpoint_block", "checkpoint_sequential", "sac", "compile",
           "compile_greedy", "compile_ilp",
           "compile_dp_knapsack_sliding_hirschberg", "checkpoint_every_n",
           "hf_gradient_checkpointing", "sac_milp")
COLORS = {"eager": "black", "checkpoint_block": "tab:blue",
          "checkpoint_sequential": "tab:orange", "sac": "tab:pink",
          "compile": "tab:green", "compile_greedy": "tab:olive",
          "compile_ilp": "tab:cyan",
          "compile_dp_knapsack_sliding_hirschberg": "tab:gray",
          "checkpoint_every_n": "tab:brown",
          "hf_gradient_checkpointing": "gold", "sac_milp": "magenta",
          "rematbench_eager": "tab:red", "rematbench_compiled": "tab:purple"}


def _mib(b):
    return "-" if b is None else f"{b / 2**20:.2f}"


def _ratio(r, m):
    """Step time over plain eager's: the median of paired ratios where the
    row has them (eager timed alternately with the method), else over the
    eager row's median."""
    if r.get("step_ratio_to_eager") is not None:
        return r["step_ratio_to_eager"]
    if r["method"] == "eager":
        return 1.0
    return r["step_seconds"] / m["eager_step_seconds"]


def _best_rematbench(rows, model, level, m):
    """The fastest rematbench row of `model` whose measured peak is at or
    below `level` bytes (and within its own budget)."""
    best = None
    for r in rows:
        if r["model"] != model or not r["method"].startswith("rematbench") \
                or r.get("measured_peak_bytes") is None:
            continue
        if r["measured_peak_bytes"] > level:
            continue
        if best is None or _ratio(r, m) < _ratio(best, m):
            best = r
    return best


def _interval(e):
    ci = e.get("time_ratio_ci95")
    return "-" if ci is None else f"{ci[0]:.3f}-{ci[1]:.3f}"


def comparison(rows, m):
    """The table of each PyTorch option against the fastest rematbench row
    at or below its measured peak: timed side by side where the file has
    the head-to-head pairs, else from the two rows' ratios to eager."""
    name = m["model"]
    h2h = m.get("head_to_head")
    if h2h is not None:
        out = ["", "At each PyTorch option's measured peak, rematbench's "
               "plan at or below it (among the eager rows measured at or "
               "below it the schedule of least predicted time, and the same "
               "among the compiled rows: the faster of the two), the two "
               "timed again side by side (alternately, each first in every "
               "other pair; the ratio is the median over the pairs, with a "
               "95% confidence interval):", "",
               "| PyTorch option | its peak MiB | best rematbench | peak MiB "
               "| option s | rematbench s | time ratio (rematbench / "
               "option) | 95% interval |",
               "|---|---:|---|---:|---:|---:|---:|---|"]
        for e in h2h:
            head = (f"| {e['option_method']} {e['option_setting']} | "
                    f"{_mib(e['option_peak_bytes'])} | ")
            if e["rematbench_method"] is None and "error" in e:
                out.append(head + f"- | - | - | - | {e['error']} | - |")
            elif e["rematbench_method"] is None:
                out.append(head + "none | - | - | - | - | - |")
            elif "error" in e:
                out.append(head + f"{e['rematbench_method']} | - | - | - | "
                           f"{e['error']} | - |")
            else:
                out.append(
                    head + f"{e['rematbench_method']} ({e['algorithm']}, "
                    f"{e['rematbench_setting']}) | "
                    f"{_mib(e['rematbench_peak_bytes'])} | "
                    f"{e['option_seconds']:.3f} | "
                    f"{e['rematbench_seconds']:.3f} | "
                    f"{e['time_ratio']:.2f} | {_interval(e)} |")
        return out
    out = ["", "At each PyTorch option's measured peak, the fastest "
           "rematbench row measured at or below that peak:", "",
           "| PyTorch option | its peak MiB | its step s | best "
           "rematbench | peak MiB | step s | time ratio (rematbench "
           "/ option) |", "|---|---:|---:|---|---:|---:|---:|"]
    for r in rows:
        if r["model"] != name or r["method"] not in PYTORCH or \
                r.get("measured_peak_bytes") is None:
            continue
        b = _best_rematbench(rows, name, r["measured_peak_bytes"], m)
        if b is None:
            out.append(f"| {r['method']} {r['setting']} | "
                       f"{_mib(r['measured_peak_bytes'])} | "
                       f"{r['step_seconds']:.3f} | none | - | - | - |")
        else:
            out.append(
                f"| {r['method']} {r['setting']} | "
                f"{_mib(r['measured_peak_bytes'])} | "
                f"{r['step_seconds']:.3f} | {b['method']} "
                f"({b.get('algorithm')}, {b['setting']}) | "
                f"{_mib(b['measured_peak_bytes'])} | "
                f"{b['step_seconds']:.3f} | "
                f"{_ratio(b, m) / _ratio(r, m):.2f} |")
    return out


COMPILE = ("compile", "compile_greedy", "compile_ilp",
           "compile_dp_knapsack_sliding_hirschberg")


def _budget_of(r):
    return float(r["setting"].split("=")[1])


def knobs(rows, m):
    """For each PyTorch budget knob (torch.compile's
    activation_memory_budget under each knapsack solver, sac_milp's
    budget): where its measured peak exceeds what its setting implies
    (torch.compile: the budget times the eager activation peak; sac_milp:
    the activation budget it was given), where a smaller setting measured
    a larger peak than a larger one, and the gradients."""
    out = []
    for method in COMPILE + ("sac_milp",):
        rs = [r for r in rows if r["model"] == m["model"] and
              r["method"] == method and
              r.get("measured_peak_bytes") is not None]
        if not rs:
            continue
        if method == "sac_milp":
            setting, implied = (lambda r: r["budget_bytes"]), \
                (lambda r: r["budget_bytes"])
            name = "sac_milp's budget"
            show = lambda r: f"{_mib(r['budget_bytes'])} MiB"  # noqa: E731
        else:
            setting = _budget_of
            implied = lambda r: _budget_of(r) * m["eager_peak_bytes"]  # noqa
            name = f"{method}'s activation_memory_budget"
            show = lambda r: f"{_budget_of(r)}"  # noqa: E731
        rs.sort(key=lambda r: -setting(r))
        over = [r for r in rs if r["measured_peak_bytes"] > implied(r)]
        bad = [f"{show(small)} measured {_mib(small['measured_peak_bytes'])}"
               f" MiB above {show(big)}'s "
               f"{_mib(big['measured_peak_bytes'])} MiB"
               for k, small in enumerate(rs) for big in rs[:k]
               if setting(small) < setting(big) and
               small["measured_peak_bytes"] > big["measured_peak_bytes"]]
        diffs = ", ".join(f"{show(r)}: " + (
            "equal" if r["gradients_equal"] else
            f"{r['max_grad_diff']:.1e}") for r in rs)
        out.append(
            f"- {m['model']}: {name}: measured peak above what the setting "
            f"implies at {len(over)} of {len(rs)} settings; "
            + ("not monotonic: " + "; ".join(bad[:4])
               + (f" (and {len(bad) - 4} more)" if len(bad) > 4 else "")
               if bad else "monotonic in the setting")
            + f"; gradients against eager ({diffs}).")
    return out


def methods_summary(rows):
    """Per method: rows measured, within their budget (where the row has
    one), gradients equal to plain training's."""
    out = []
    for method in sorted({r["method"] for r in rows}):
        rs = [r for r in rows if r["method"] == method and
              r.get("measured_peak_bytes") is not None]
        failed = sum(1 for r in rows if r["method"] == method and
                     r.get("measured_peak_bytes") is None)
        if not rs and not failed:
            continue
        budgeted = [r for r in rs if r.get("budget_bytes") is not None]
        within = sum(1 for r in budgeted
                     if r["measured_peak_bytes"] <= r["budget_bytes"])
        out.append(f"| {method} | {len(rs)} | {failed} | "
                   + (f"{within} of {len(budgeted)}" if budgeted else "-")
                   + f" | {sum(1 for r in rs if r['gradients_equal'])} of "
                   f"{len(rs)} |")
    return ["| method | rows measured | not run or failed | within budget "
            "| gradients equal |", "|---|---:|---:|---:|---:|"] + out


def _tie_or_win(e):
    """rematbench at least as fast at an option's level: the paired median
    at or below 1, or its 95% interval holding 1 (a tie within noise)."""
    ci = e.get("time_ratio_ci95")
    return e["time_ratio"] <= 1.0 or (ci is not None and ci[0] <= 1.0)


def _significance(h2h):
    """How many levels the 95% intervals of the paired medians put on
    each side of 1: rematbench faster, PyTorch's option faster, or
    neither shown (the interval holds 1)."""
    ci = [e["time_ratio_ci95"] for e in h2h if e.get("time_ratio_ci95")]
    if not ci:
        return ""
    return (f"; by the 95% intervals of the paired medians, rematbench "
            f"faster at {sum(1 for c in ci if c[1] < 1)}, the option "
            f"faster at {sum(1 for c in ci if c[0] > 1)}, neither shown at "
            f"{sum(1 for c in ci if c[0] <= 1 <= c[1])}")


def report(doc, md_path, png_path=None):
    rows, ctx = doc["rows"], doc["context"]
    dtype = ctx.get("dtype", "float32")
    gpu = ctx["device"] != "cpu"
    instrument = ("the CUDA caching allocator's own history" if gpu else
                  "the profiler's memory events")
    lines = [f"# PyTorch's options beside rematbench's plans ({ctx['device']}"
             f", {dtype})",
             "",
             (f"Device: {ctx['device_name']} (CUDA {ctx.get('cuda')}, cuDNN "
              f"{ctx.get('cudnn')}, float32 matmul precision "
              f"{ctx.get('float32_matmul_precision')}). " if gpu else "") +
             f"Measured {ctx['date']} on {ctx['host']} ({ctx['cpu_model']}, "
             f"{ctx['cpu_count']} hardware threads, torch threads "
             f"{ctx['threads']}), torch {ctx['torch']}, torchvision "
             f"{ctx['torchvision']}, Python {ctx['python']}, commit "
             f"{ctx['git_commit']}; load average {ctx['load_average_start']}"
             f" at the start, {ctx['load_average_end']} at the end (the "
             "machine was shared). Command: `" + ctx["command_line"] + "`"
             + (f" ({ctx['parallel_runs']} runs side by side, one thread "
                "each, merged by torch_options_report.py)"
                if ctx.get("parallel_runs") else "") + ".",
             "",
             "Peak: allocator-level activation peak of one training step "
             "(rematbench.measure: every allocation made during the step, "
             f"from {instrument}, the parameters' gradients "
             "left out), in MiB (measured, whatever the row's budget: the "
             "comparison below takes every rematbench row by its measured "
             "peak). Time: median of "
             f"{ctx['repeats']} steps after {ctx['warmup']} warm-up steps. "
             "`step / eager`: the median of step / eager over pairs of steps "
             "timed alternately (where the file has them; the machine's load "
             "changed during the run), else over the eager row's median. "
             "`grads`: gradients equal to the plain eager step's bit for bit "
             "(`yes`), or the largest absolute difference.", ""]
    for m in doc["models"]:
        name = m["model"]
        lines += [f"## {name}", "", ctx["models"].get(name, ""), ""]
        if "parameters" not in m:
            lines += [f"The run failed: {m.get('error')}", ""]
            continue
        graph = (f"rematbench graph {m['graph_nodes']} nodes, simulated "
                 f"NoRemat peak {_mib(m['noremat_simulated_peak_bytes'])} "
                 f"MiB, memory lower bound {_mib(m['lower_bound_bytes'])} "
                 "MiB; " if "graph_nodes" in m else "")
        floor = m.get("eager_rerun_max_grad_diff")
        lines += [f"{m['parameters']:,} parameters; {graph}eager "
                  f"measured {_mib(m['eager_peak_bytes'])} MiB, "
                  f"{m['eager_step_seconds']:.3f} s" + (
                      "" if floor is None else
                      "; plain training run twice gives "
                      + ("equal gradients" if floor == 0 else
                         f"gradients that differ by up to {floor:.1e} (the "
                         "floor of every row's difference)")) + ".", "",
                  "| method | setting | budget MiB | peak MiB | peak / eager "
                  "| step s | step / eager | grads | algorithm | note |",
                  "|---|---|---:|---:|---:|---:|---:|---|---|---|"]
        for r in rows:
            if r["model"] != name:
                continue
            peak, secs = r.get("measured_peak_bytes"), r.get("step_seconds")
            g = r.get("gradients_equal")
            grads = "-" if g is None else "yes" if g else \
                f"{r.get('max_grad_diff', float('nan')):.1e}"
            note = r.get("error", "")
            if r.get("budget_bytes") is not None and peak is not None:
                note = "within budget" if peak <= r["budget_bytes"] else \
                    f"OVER budget by {peak / r['budget_bytes'] - 1:.1%}"
            if r.get("recomputations_kept") is False:
                note += "; recomputation merged"
            lines.append(
                f"| {r['method']} | {r['setting']} | "
                f"{_mib(r.get('budget_bytes'))} | {_mib(peak)} | "
                + ("-" if peak is None else
                   f"{peak / m['eager_peak_bytes']:.2f}") + " | "
                + ("-" if secs is None else f"{secs:.3f}") + " | "
                + ("-" if secs is None else
                   f"{_ratio(r, m):.2f}") +
                f" | {grads} | {r.get('algorithm', '')} | {note} |")
        # The goal: at each level a PyTorch option reaches, the best
        # rematbench row at or below it, and the ratio of times.
        lines += comparison(rows, m)
        if "error" in m:
            lines += ["", f"The run stopped with an error: {m['error']}"]
        lines.append("")
    plans = [r for r in rows if r["method"].startswith("rematbench")
             and r.get("measured_peak_bytes") is not None]
    over = [r for r in plans if r["measured_peak_bytes"] > r["budget_bytes"]]
    eq = [r for r in plans if r["method"] == "rematbench_eager"]
    floors = {m["model"]: m.get("eager_rerun_max_grad_diff") or 0.0
              for m in doc["models"]}
    within_floor = sum(1 for r in eq if r["gradients_equal"] or (
        r.get("max_grad_diff") is not None and
        r["max_grad_diff"] <= floors.get(r["model"], 0.0)))
    lines += ["## Summary", "",
              f"- rematbench rows measured: {len(plans)}; measured peak "
              f"over the budget asked for: {len(over)}"
              + (" (" + ", ".join(f"{r['model']} {r['method']} "
                                  f"{r['setting']} +"
                                  f"{r['measured_peak_bytes'] / r['budget_bytes'] - 1:.1%}"
                                  for r in over) + ")" if over else "") + ".",
              f"- rematbench_eager rows with gradients equal bit for bit: "
              f"{sum(1 for r in eq if r['gradients_equal'])} of {len(eq)}"
              + (f"; equal or within plain training's own run-to-run "
                 f"difference: {within_floor} of {len(eq)}"
                 if any(floors.values()) else "") + ".",
              ""]
    pred = [(_ratio(r, next(m for m in doc["models"]
                            if m["model"] == r["model"])),
             r["predicted_overhead"]) for r in eq
            if r.get("predicted_overhead")]
    h2h = [e for m in doc["models"] for e in m.get("head_to_head") or []
           if e.get("time_ratio") is not None]
    if h2h:
        won = [e for e in h2h if e["time_ratio"] <= 1.0]
        lines += [f"- Side by side at the PyTorch options' levels: the best "
                  f"rematbench plan at least as fast at {len(won)} of "
                  f"{len(h2h)} levels"
                  + ("" if len(won) == len(h2h) else " (slower: " + ", ".join(
                      f"{m['model']} {e['option_method']} "
                      f"{e['option_setting']} {e['time_ratio']:.2f}"
                      for m in doc["models"]
                      for e in m.get("head_to_head") or []
                      if e in h2h and e not in won) + ")")
                  + "; ratios (rematbench / option) from "
                  f"{min(e['time_ratio'] for e in h2h):.2f} to "
                  f"{max(e['time_ratio'] for e in h2h):.2f}"
                  + _significance(h2h) + ".",
                  f"- Counting ties within noise (the 95% interval holds "
                  f"1) as ties: at least as fast at "
                  f"{sum(1 for e in h2h if _tie_or_win(e))} of {len(h2h)} "
                  f"levels ({sum(1 for e in h2h if _tie_or_win(e)) / len(h2h):.0%}).",
                  ""]
    lines += ["Every method's rows (a budget where the row has one: "
              "rematbench's and sac_milp's):", ""] + methods_summary(rows) \
        + [""]
    noremat = [(m["model"], t) for m in doc["models"]
               for e in m.get("against_eager") or []
               for t in e.get("timed", [])
               if t.get("rematbench_method") == "rematbench_eager"
               and t.get("time_ratio") is not None]
    if noremat:
        lines += ["- Against plain eager training at its peak, the eager "
                  "program of least predicted time there, timed side by "
                  "side: " + ", ".join(
                      f"{model} {t['time_ratio']:.3f} ({t['algorithm']}"
                      + (f", 95% interval {_interval(t)}"
                         if t.get("time_ratio_ci95") else "") + ")"
                      for model, t in noremat) + ".", ""]
    for m in doc["models"]:
        low = min((r["measured_peak_bytes"] for r in plans
                   if r["model"] == m["model"]), default=None)
        pytorch_low = min((r["measured_peak_bytes"] for r in rows
                           if r["model"] == m["model"] and
                           r["method"] in PYTORCH and
                           r.get("measured_peak_bytes") is not None),
                          default=None)
        if low is not None and "lower_bound_bytes" in m:
            once = m.get("gradients_once_lower_bound_bytes")
            if pytorch_low is not None:
                lines.append(
                    f"- {m['model']}: lowest PyTorch method's peak "
                    f"{_mib(pytorch_low)} MiB; rematbench's lowest "
                    f"{_mib(low)} MiB is "
                    + ("within 10% of" if low <= 1.1 * m["lower_bound_bytes"]
                       else "more than 10% above")
                    + " the memory lower bound.")
            reach = m.get("reach_lower_bound_bytes")
            lines.append(f"- {m['model']}: lowest rematbench peak "
                         f"{_mib(low)} MiB, {low / m['lower_bound_bytes']:.2f}"
                         " times the memory lower bound" + (
                             f", {low / reach:.2f} times the reach bound "
                             f"({_mib(reach)} MiB: no schedule that "
                             "recomputes rather than offloads peaks lower)"
                             if reach else "") + (
                             f" ({low / once:.2f} times the least that "
                             "computing each gradient once can take, "
                             f"{_mib(once)} MiB)" if once else "") + ".")
    knob = [line for m in doc["models"] if "parameters" in m
            for line in knobs(rows, m)]
    lines += [""] + knob + ([""] if knob else [])
    if pred:
        errs = sorted(abs(a / b - 1) for a, b in pred)
        lines += [f"- Predicted against measured step time (rematbench_eager "
                  f"over the eager step): median error {errs[len(errs) // 2]:.1%}"
                  f", largest {errs[-1]:.1%}.", ""]
    files.write_text(md_path, "\n".join(lines) + "\n")
    if png_path:
        plot(doc, png_path)


def plot(doc, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    models = [m["model"] for m in doc["models"] if "parameters" in m]
    if not models:  # nothing measured: no picture
        return
    cols = min(4, len(models))
    rows = -(-len(models) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 4.2 * rows),
                             squeeze=False)
    for ax in axes.flat[len(models):]:
        ax.set_visible(False)
    for ax, m in zip(axes.flat, [m for m in doc["models"]
                                 if "parameters" in m]):
        by = {}
        for r in doc["rows"]:
            if r["model"] != m["model"] or \
                    r.get("measured_peak_bytes") is None:
                continue
            by.setdefault(r["method"], []).append(
                (r["measured_peak_bytes"] / 2**20, _ratio(r, m)))
        for method, pts in sorted(by.items()):
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts],
                    marker="o", ms=4, label=method, color=COLORS[method],
                    ls="-" if len(pts) > 1 else "")
        ax.set_yscale("log")
        if "lower_bound_bytes" in m:
            ax.axvline(m["lower_bound_bytes"] / 2**20, color="grey",
                       ls=":", lw=1)
        ax.set_title(m["model"])
        ax.set_xlabel("measured activation peak (MiB)")
        ax.set_ylabel("step time / eager (paired, log)")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    with files.replacing(path, binary=True) as f:
        fig.savefig(f, format="png", dpi=110)


def merged(docs):
    """One document of runs made side by side on one machine (each its own
    models): their models and rows, the first's context with every run's
    command line and the extremes of their load averages."""
    first = docs[0]
    for d in docs[1:]:
        if d["context"]["git_commit"] != first["context"]["git_commit"]:
            raise ValueError("the runs are of different commits")
    ctx = dict(first["context"])
    ctx["command_line"] = " ; ".join(d["context"]["command_line"]
                                     for d in docs)
    ctx["models"] = {k: v for d in docs
                     for k, v in d["context"]["models"].items()}
    ctx["parallel_runs"] = len(docs)
    for key, pick in (("load_average_start", max),
                      ("load_average_end", max)):
        ctx[key] = [pick(d["context"][key][i] for d in docs)
                    for i in range(3)]
    return dict(first, context=ctx,
                models=[m for d in docs for m in d["models"]],
                rows=[r for d in docs for r in d["rows"]])


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("files", nargs="+",
                    help="a results file, or runs made side by side to "
                         "merge (with --out)")
    ap.add_argument("--out", help="the merged results file (its .md and "
                    ".png beside it)")
    args = ap.parse_args(argv)
    if len(args.files) > 1 and not args.out:
        ap.error("merging several files needs --out")
    docs = []
    for path in args.files:
        with open(path) as f:
            docs.append(json.load(f))
    try:
        doc = merged(docs) if len(docs) > 1 else docs[0]
    except ValueError as e:
        ap.exit(2, f"torch_options_report: {e}\n")
    path = args.out or args.files[0]
    if args.out:
        files.write_json(path, doc, indent=1)
    base = os.path.splitext(path)[0]
    report(doc, base + ".md", base + ".png")


if __name__ == "__main__":
    script.run(main, sys.argv[1:])
