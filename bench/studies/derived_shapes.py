#!/usr/bin/env python3
"""New lengths derived rather than traced (rematbench.torch.shape_family)
on the zoo's token models, which nobody here wrote: each model, at the
zoo's test size, is trained one step a length through rt.remat(budget=0.5)
on lengths 8, 40, 16, 24, then 12, 32, 20, 28, 36 (the zoo's batches, its
masks with padding, remade at each length). Reported per model: which
lengths were derived, the first call's time at each, and whether every
step's gradients are plain training's bit for bit and its
allocator-measured activation peak within the plan's budget.

    .venv/bin/python bench/studies/derived_shapes.py
    .venv/bin/python bench/studies/derived_shapes.py --models llama,gpt2

Writes results/planning/derived-zoo.json and .md (or --out).
"""

import argparse
import dataclasses
import os
import sys
import time

import torch

import rematbench.torch as rt
from rematbench import files, script, zoo
from rematbench.torch import measure

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
MODELS = ["gpt2", "llama", "qwen2", "gemma", "mistral", "bert",
          "roberta", "distilbert", "t5", "llama_lora"]
LENGTHS = [8, 40, 16, 24, 12, 32, 20, 28, 36]


def run_model(name):
    model, _ = zoo.build(name)
    step = rt.remat(model, budget=0.5, timeout=3)
    rows = []
    for k, length in enumerate(LENGTHS):
        g = torch.Generator().manual_seed(100 + k)
        size = dataclasses.replace(zoo.SIZES["test"], seq=length)
        batch = zoo.ZOO[name](g, size)[1]
        before = {id(p) for ps in step.plans.values() for p in ps}
        plain = measure.measure_step(lambda: batch.plain_step(model), model,
                                     timing=False, peak=False)
        t0 = time.perf_counter()
        got = measure.measure_step(lambda: step(**batch.kwargs), model,
                                   repeats=1, warmup=0,
                                   reference=plain["grads"])
        first = time.perf_counter() - t0
        made = [p for ps in step.plans.values() for p in ps
                if id(p) not in before]
        rows.append({
            "length": length, "planned": bool(made),
            "derived": any(p.traced.derived_from is not None for p in made),
            "first_call_seconds": first,
            "gradients_equal": got["gradients_equal"],
            "measured_peak_bytes": got["measured_peak_bytes"],
            "budget_bytes": max((p.budget_bytes for p in made), default=None),
            "within_budget": all(got["measured_peak_bytes"] <= p.budget_bytes
                                 for p in made)})
    families = [f for t in step.traces.values() for f in t.families]
    return {"model": name, "steps": rows,
            "not_derived_because": sorted({f.broken for f in families
                                           if f.broken})}


def markdown(doc):
    lines = ["# New lengths derived from traces of others", "",
             f"{doc['context']['date']}, CPU, "
             f"{doc['context']['threads']} thread(s), torch "
             f"{doc['context']['torch']}; "
             f"`{doc['context']['command_line']}`.", "",
             "Lengths in order " + ", ".join(map(str, LENGTHS)) +
             "; each model at the zoo's test size, rt.remat(budget=0.5). "
             "T: traced, D: derived, with the first call's seconds "
             "(planning and the step, its peak measured at the "
             "allocator).", "",
             "| model | lengths | bit-equal | within budget | why none "
             "derived |", "|---|---|---|---|---|"]
    for m in doc["models"]:
        cells = " ".join(
            f"{r['length']}{'D' if r['derived'] else 'T'}"
            f"({r['first_call_seconds']:.2f})"
            for r in m["steps"] if r["planned"])
        lines.append(
            f"| {m['model']} | {cells} | "
            f"{sum(r['gradients_equal'] for r in m['steps'])}/"
            f"{len(m['steps'])} | "
            f"{sum(r['within_budget'] for r in m['steps'])}/"
            f"{len(m['steps'])} | "
            f"{'; '.join(m['not_derived_because']) or '-'} |")
    return "\n".join(lines) + "\n"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(MODELS),
                    help="zoo models (comma-separated)")
    ap.add_argument("--threads", type=script.positive_count, default=2)
    ap.add_argument("-o", "--out", default=os.path.join(
        ROOT, "results/planning/derived-zoo.json"))
    args = ap.parse_args(argv)
    names = args.models.split(",")
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        ap.error(f"--models: {', '.join(unknown)} not among "
                 f"{', '.join(MODELS)}")
    torch.set_num_threads(args.threads)
    models = []
    for name in names:
        print(f"derived_shapes.py: {name}", file=sys.stderr)
        models.append(run_model(name))
    doc = {"format": "rematbench-derived-shapes", "version": 1,
           "context": files.run_context(torch=torch.__version__,
                                        threads=args.threads),
           "lengths": LENGTHS, "models": models}
    files.write_json(args.out, doc, indent=1)
    text = markdown(doc)
    files.write_text(os.path.splitext(args.out)[0] + ".md", text)
    print(text)


if __name__ == "__main__":
    script.run(main, sys.argv[1:])
