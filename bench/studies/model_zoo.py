#!/usr/bin/env python3
"""Every model of rematbench.zoo (transformers, timm, torchvision, PEFT
and torch.nn's recurrent layers; small configs, random weights, nothing
downloaded) planned at a fraction of plain training's activation peak,
as a user would: rt.plan with its defaults, the batch as the model takes
it (keyword tensors, padded where there is a mask). Each planned step is
measured against plain eager training by rematbench.torch.measure in the
same run: allocator-level activation peak, gradients against plain
training's, and the step time as a ratio to plain training's (paired
runs). A model nothing fits at the fraction is planned again at the
smallest budget NoFit names; a refusal (rematbench.Error) is recorded
with its one-line message; anything else is a failure, with its
exception's last line. For LoRA on the Llama, plain LoRA training and
PEFT with gradient_checkpointing_enable() are measured in the same run.

The cost model is checked apart from the framework: eager transformers
and timm steps pay Python per module that the planned program of ATen ops
does not, most on small models, so step / eager mixes the two. The plan's
program is also measured against the same program run without
recomputation (the NoRemat schedule, plan.at(1.0)), paired: that ratio is
what `predicted_overhead` predicts.

    .venv/bin/python bench/studies/model_zoo.py            # every model
    .venv/bin/python bench/studies/model_zoo.py --models gpt2,llama_lora
    .venv/bin/python bench/studies/model_zoo.py --size bench \
        -o results/model_zoo/bench.json   # steps of 20-500 ms

Writes results/model_zoo/cpu.json (results/SCHEMA.md, "Model zoo") and
cpu.md.
"""

import argparse
import copy
import dataclasses
import os
import statistics
import sys
import time

import torch

import rematbench
import rematbench.torch as rt
from rematbench import files, script, zoo
from rematbench.torch import measure
from rematbench.torch.options import machine

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SOURCES = {"llama_lora": "peft", "recurrent": "torch.nn",
           "resnet18": "torchvision", "mobilenet_v2": "torchvision",
           "convnext": "timm", "swin": "timm", "efficientnet": "timm",
           "resnet_d": "timm", "timm_vit": "timm", "mobilenetv3": "timm"}


def hf_checkpointing_peak(name, repeats, size):
    """The allocator-level activation peak of plain training with
    transformers' gradient checkpointing (non-reentrant) switched on."""
    model, batch = zoo.build(name, size=size)
    model.gradient_checkpointing_enable(
        gradient_checkpointing_kwargs={"use_reentrant": False})
    return measure.measure_step(lambda: batch.plain_step(model), model,
                                repeats=repeats)["measured_peak_bytes"]


def noremat_plan(plan):
    """The plan's traced step with the NoRemat schedule (each value
    computed once): the program its predicted overhead is relative to."""
    search = copy.copy(plan.search)
    search.options = dataclasses.replace(search.options,
                                         algorithms=["noremat"])
    return rt.Plan(plan.model, search,
                   search.at(2 * search.noremat_peak_bytes), plan.sync)


def row(name, fraction, repeats, plan_args, size):
    out = {"model": name, "source": SOURCES.get(name, "transformers"),
           "planned": False, "refused": False, "message": None,
           "budget_fraction": fraction}
    model, batch = zoo.build(name, size=size)
    plain = measure.measure_step(lambda: batch.plain_step(model), model,
                                 repeats=repeats)
    out["eager_peak_bytes"] = plain["measured_peak_bytes"]
    out["eager_step_seconds"] = plain["step_seconds"]
    t0 = time.perf_counter()
    try:
        try:
            plan = rt.plan(model, batch.example, batch.loss_fn,
                           budget=fraction, **plan_args)
        except rt.NoFit as e:
            out["smallest_budget_bytes"] = e.smallest_budget_bytes
            out["budget_fraction"] = \
                e.smallest_budget_bytes / e.noremat_peak_bytes
            plan = rt.plan(model, batch.example, batch.loss_fn,
                           budget=e.smallest_budget_bytes, **plan_args)
    except rematbench.Error as e:
        out.update(refused=True, message=str(e),
                   plan_seconds=time.perf_counter() - t0)
        return out
    out["plan_seconds"] = time.perf_counter() - t0
    got = measure.measure_step(lambda: plan.step(*batch.args, **batch.kwargs),
                               model, repeats=repeats,
                               reference=plain["grads"],
                               baseline=lambda: batch.plain_step(model))
    out.update(planned=True, algorithm=plan.algorithm,
               nodes=plan.graph.num_nodes, budget_bytes=plan.budget_bytes,
               noremat_peak_bytes=plan.noremat_peak_bytes,
               predicted_peak_bytes=plan.predicted_peak_bytes,
               measured_peak_bytes=got["measured_peak_bytes"],
               within_budget=got["measured_peak_bytes"] <= plan.budget_bytes,
               gradients_equal=got["gradients_equal"],
               max_grad_diff=got["max_grad_diff"],
               predicted_overhead=plan.predicted_overhead,
               step_ratio_to_eager=got["ratio_to_baseline"],
               step_ratio_ci95=got.get("ratio_ci95"),
               trace_seconds=plan.trace_seconds)
    noremat = noremat_plan(plan)
    program = measure.measure_step(
        lambda: plan.step(*batch.args, **batch.kwargs), model,
        repeats=repeats, peak=False,
        baseline=lambda: noremat.step(*batch.args, **batch.kwargs))
    out.update(program_ratio=program["ratio_to_baseline"],
               program_ratio_ci95=program.get("ratio_ci95"),
               prediction_error=program["ratio_to_baseline"] /
               plan.predicted_overhead - 1)
    if name.endswith("_lora"):
        out["hf_gradient_checkpointing_peak_bytes"] = \
            hf_checkpointing_peak(name, repeats, size)
    return out


def prediction_summary(planned):
    """The cost model's error over the planned rows: median and largest
    of |measured program ratio / predicted overhead - 1|."""
    errors = sorted((abs(r["prediction_error"]), r["model"])
                    for r in planned if "prediction_error" in r)
    if not errors:
        return []
    median = statistics.median(e for e, _ in errors)
    worst, at = errors[-1]
    return [f"Cost model: the plan's program against the NoRemat program "
            f"(paired, measured) over the overhead it predicted: "
            f"{median:.1%} off at the median, {worst:.1%} at worst "
            f"({at}), over {len(errors)} models.", ""]


def markdown(doc):
    rows = doc["rows"]
    planned = [r for r in rows if r["planned"]]
    lines = [
        "# Model zoo: plans on models nobody here wrote", "",
        f"{doc['context']['date']}, {doc['context']['device']}, torch "
        f"{doc['context']['torch']}, {torch.get_num_threads()} thread(s), "
        f"zoo size {doc.get('size', 'test')}; "
        f"`{doc['context']['command_line']}`; transformers "
        f"{doc['context']['transformers']}, timm {doc['context']['timm']}, "
        f"peft {doc['context']['peft']}.", "",
        f"{len(planned)} of {len(rows)} models planned "
        f"({sum(1 for r in rows if r['refused'])} refused in one line, "
        f"{sum(1 for r in rows if not r['planned'] and not r['refused'])} "
        f"failed); of the planned, "
        f"{sum(1 for r in planned if r['within_budget'])} within budget at "
        f"the allocator and "
        f"{sum(1 for r in planned if r['gradients_equal'])} with gradients "
        "equal to plain training's bit for bit. Budget: the fraction of "
        "plain training's activation peak, or (marked *) the smallest that "
        "fits where nothing fits at it.", "", *prediction_summary(planned),
        "| model | source | nodes | budget | algorithm | peak / eager peak "
        "| within | grads equal | step / eager | program / NoRemat program "
        "| predicted | plan s |",
        "|---|---|---:|---:|---|---:|:-:|:-:|---:|---:|---:|---:|"]
    for r in rows:
        if not r["planned"]:
            why = (r["message"] or "").replace("|", "\\|")
            lines.append(f"| {r['model']} | {r['source']} | | | "
                         f"{'refused' if r['refused'] else 'FAILED'}: "
                         f"{why} | | | | | | | |")
            continue
        star = "*" if "smallest_budget_bytes" in r else ""
        lines.append(
            f"| {r['model']} | {r['source']} | {r['nodes']} | "
            f"{r['budget_fraction']:.2f}{star} | {r['algorithm']} | "
            f"{r['measured_peak_bytes'] / r['eager_peak_bytes']:.2f} | "
            f"{'yes' if r['within_budget'] else 'NO'} | "
            f"{'yes' if r['gradients_equal'] else 'NO'} | "
            f"{r['step_ratio_to_eager']:.2f} | "
            f"{r.get('program_ratio', float('nan')):.2f} | "
            f"{r['predicted_overhead']:.2f} | {r['plan_seconds']:.1f} |")
    lora = [r for r in rows if "hf_gradient_checkpointing_peak_bytes" in r]
    for r in lora:
        lines += ["", f"LoRA ({r['model']}): activation peak of plain LoRA "
                  f"training {r['eager_peak_bytes']:,} bytes, with PEFT and "
                  "gradient_checkpointing_enable() "
                  f"{r['hf_gradient_checkpointing_peak_bytes']:,}, planned "
                  f"at {r['budget_fraction']:.2f} "
                  f"{r['measured_peak_bytes']:,} (gradients equal: "
                  f"{'yes' if r['gradients_equal'] else 'no'})."]
    return "\n".join(lines) + "\n"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", help="comma-separated zoo names (default: "
                    f"all {len(zoo.ZOO)})")
    ap.add_argument("--budget", type=script.positive, default=0.5,
                    help="fraction of plain training's activation peak")
    ap.add_argument("--repeats", type=script.positive_count, default=5,
                    help="timed step pairs per model (median)")
    ap.add_argument("--threads", type=script.positive_count, default=1)
    ap.add_argument("--size", choices=sorted(zoo.SIZES), default="test",
                    help="the zoo's model size (test: steps of a few ms, "
                    "where Python's share is large; bench: 20-500 ms)")
    ap.add_argument("-o", "--out",
                    default=os.path.join(ROOT, "results/model_zoo/cpu.json"))
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    names = args.models.split(",") if args.models else list(zoo.ZOO)
    unknown = [n for n in names if n not in zoo.ZOO]
    if unknown:
        ap.error(f"unknown models {unknown}; the zoo has {list(zoo.ZOO)}")
    rows = []
    for name in names:
        print(f"model_zoo.py: {name}", file=sys.stderr, flush=True)
        try:
            rows.append(row(name, args.budget, args.repeats, {}, args.size))
        except Exception as e:  # a failure, recorded, not a crash
            rows.append({"model": name, "source": SOURCES.get(
                name, "transformers"), "planned": False, "refused": False,
                "message": f"{type(e).__name__}: "
                           f"{str(e).strip().splitlines()[-1]}"})
    import peft
    import timm
    import transformers
    context = machine("cpu", "float32", {}, source=ROOT)
    context.update(transformers=transformers.__version__,
                   timm=timm.__version__, peft=peft.__version__)
    doc = {"format": "rematbench-model-zoo", "version": 1,
           "context": context, "budget_fraction": args.budget,
           "size": args.size,
           "rows": rows}
    files.write_json(args.out, doc, indent=1)
    files.write_text(os.path.splitext(args.out)[0] + ".md", markdown(doc))
    print(f"model_zoo.py: {sum(r['planned'] for r in rows)} of {len(rows)} "
          f"planned -> {args.out}", file=sys.stderr)


if __name__ == "__main__":
    script.run(main, sys.argv[1:])
