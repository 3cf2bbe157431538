#!/usr/bin/env python3
"""What planning costs: rt.plan's time split into tracing and the rest
(the search and fitting) for GPT-2-style decoders of growing depth, and a
training run of the zoo's Llama through rt.remat on sequence lengths
drawn from a long-tailed distribution (length = 8 * (1 + k), k ~
Geometric(0.35), at most 96: most batches short, a few long), with a
budget in bytes (a cap for every shape: half of plain training's
activation peak at the longest, 96), against plain training on the same
batches: planning time against training time, and every step's
allocator-measured activation peak against the budget and its gradients
against plain training's.

    .venv/bin/python bench/studies/planning.py
    .venv/bin/python bench/studies/planning.py --layers 4,12,24,48 --steps 200

Writes results/planning/cpu.json and cpu.md.
"""

import argparse
import os
import sys
import time

import torch

import rematbench.torch as rt
from rematbench import files, script, zoo
from rematbench.torch import measure

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def decoder_plan_times(layers, seq=128, d=256):
    import transformers
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=layers, n_embd=d, n_head=4,
                                  vocab_size=512, n_positions=seq)
    model = transformers.GPT2LMHeadModel(cfg)
    ids = torch.randint(512, (2, seq))
    t0 = time.perf_counter()
    plan = rt.plan(model, dict(input_ids=ids, labels=ids), budget=0.5)
    total = time.perf_counter() - t0
    return {"layers": layers, "d_model": d, "sequence": seq,
            "nodes": plan.graph.num_nodes, "plan_seconds": total,
            "trace_seconds": plan.trace_seconds,
            "search_seconds": total - plan.trace_seconds,
            "algorithm": plan.algorithm}


def lengths(steps, seed):
    k = torch.distributions.Geometric(torch.tensor(0.35))
    torch.manual_seed(seed)
    return [int(min(96, 8 * (1 + k.sample().item()))) for _ in range(steps)]


def varied_run(steps, seed):
    model, _ = zoo.build("llama")
    ids = torch.randint(zoo.VOCAB, (2, 96))
    eager96 = measure.measure_step(
        lambda: model(input_ids=ids, labels=ids).loss.backward(), model,
        timing=False)["measured_peak_bytes"]
    budget = eager96 // 2
    step = rt.remat(model, budget=budget)
    g = torch.Generator().manual_seed(seed + 1)
    rows, plan_seconds, train_seconds = [], 0.0, 0.0
    for length in lengths(steps, seed):
        ids = torch.randint(zoo.VOCAB, (2, length), generator=g)
        batch = dict(input_ids=ids, labels=ids)
        before = sum(len(v) for v in step.plans.values())
        plain = measure.measure_step(
            lambda: model(**batch).loss.backward(), model, timing=False,
            peak=False)
        t0 = time.perf_counter()
        step(**batch)  # plans where the shape is new
        first = time.perf_counter() - t0
        planned = sum(len(v) for v in step.plans.values()) > before
        got = measure.measure_step(lambda: step(**batch), model,
                                   repeats=1, warmup=0,
                                   reference=plain["grads"])
        if planned:
            plan_seconds += first - got["step_seconds"]
        train_seconds += got["step_seconds"]
        rows.append({"length": length, "planned": planned,
                     "measured_peak_bytes": got["measured_peak_bytes"],
                     "within_budget": got["measured_peak_bytes"] <= budget,
                     "gradients_equal": got["gradients_equal"],
                     "step_seconds": got["step_seconds"],
                     "plan_seconds": first - got["step_seconds"]
                     if planned else 0.0})
    return {"budget_bytes": budget, "eager_peak_bytes_at_96": eager96,
            "plan_seconds": plan_seconds, "train_seconds": train_seconds,
            "steps": rows}


def markdown(doc):
    lines = ["# Planning time", "",
             f"{doc['context']['date']}, CPU, {torch.get_num_threads()} "
             f"thread(s), torch {torch.__version__}; "
             f"`{doc['context']['command_line']}`.", "",
             f"The first plan in the process (a one-layer decoder) took "
             f"{doc['first_plan_seconds']:.1f} s; GPT-2-style decoders, d "
             "256, sequence 128, batch 2, planned at 0.5 after it:", "",
             "| decoder layers | nodes | plan s | trace s | search s | "
             "algorithm |", "|---:|---:|---:|---:|---:|---|"]
    for r in doc["decoders"]:
        lines.append(f"| {r['layers']} | {r['nodes']} | "
                     f"{r['plan_seconds']:.1f} | {r['trace_seconds']:.1f} | "
                     f"{r['search_seconds']:.1f} | {r['algorithm']} |")
    v = doc["varied"]
    rows = v["steps"]
    shapes = sorted({r["length"] for r in rows})
    planned = [r for r in rows if r["planned"]]
    total = v["plan_seconds"] + v["train_seconds"]
    lines += ["", f"Llama (zoo) over {len(rows)} steps of {len(shapes)} "
              f"sequence lengths ({shapes[0]}-{shapes[-1]}), budget "
              f"{v['budget_bytes']:,} bytes for every shape: "
              f"{len(planned)} plans took {v['plan_seconds']:.1f} s of "
              f"{total:.1f} s ({v['plan_seconds'] / total:.0%}); the first "
              f"{planned[0]['plan_seconds']:.1f} s, the others "
              f"{min(r['plan_seconds'] for r in planned[1:]):.1f}-"
              f"{max(r['plan_seconds'] for r in planned[1:]):.1f} s; "
              f"{sum(r['within_budget'] for r in rows)} of {len(rows)} "
              "steps within the budget at the allocator, "
              f"{sum(r['gradients_equal'] for r in rows)} with gradients "
              "equal to plain training's."]
    return "\n".join(lines) + "\n"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", default="4,12,24",
                    help="decoder depths to plan (comma-separated)")
    ap.add_argument("--steps", type=script.positive_count, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=script.positive_count, default=2)
    ap.add_argument("-o", "--out",
                    default=os.path.join(ROOT, "results/planning/cpu.json"))
    args = ap.parse_args(argv)
    try:
        depths = [int(x) for x in args.layers.split(",")]
    except ValueError:
        ap.error(f"--layers: {args.layers!r} is not a list of integers")
    if args.steps < 2 or any(d < 1 for d in depths):
        ap.error("--steps must be >= 2 and every depth >= 1")
    torch.set_num_threads(args.threads)
    # The first plan in a process also pays for imports and for torch's
    # first dispatches: recorded apart, on a one-layer decoder.
    t0 = time.perf_counter()
    decoder_plan_times(1)
    first_plan = time.perf_counter() - t0
    decoders = []
    for d in depths:
        print(f"planning.py: decoder of {d} layers", file=sys.stderr)
        decoders.append(decoder_plan_times(d))
    print(f"planning.py: {args.steps} steps of varied lengths",
          file=sys.stderr)
    doc = {"format": "rematbench-planning", "version": 1,
           "context": files.run_context(torch=torch.__version__,
                                        threads=args.threads),
           "first_plan_seconds": first_plan, "decoders": decoders,
           "varied": varied_run(args.steps, args.seed)}
    files.write_json(args.out, doc, indent=1)
    text = markdown(doc)
    files.write_text(os.path.splitext(args.out)[0] + ".md", text)
    print(text)


if __name__ == "__main__":
    script.run(main, sys.argv[1:])
