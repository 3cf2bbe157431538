#!/usr/bin/env python3
"""What planning costs: rt.plan's time split into tracing and the rest
(the search and fitting) for GPT-2-style decoders of growing depth, and
four training runs of the zoo's bench-size Llama (or one --width wide)
through rt.remat on sequence lengths drawn from a long-tailed
distribution (length = 8 * (1 + k), k ~ Geometric(0.35), at most 128:
most batches short, a few long), with a budget in bytes (a cap for every
shape: half of plain training's activation peak at 128): one plans every
new length (traced, or derived from the traces of others: shape_family),
one pads to buckets (rt.remat(..., buckets=...)), one pads a new length
up to a longer one planned until padding has cost a plan
(pad_to_planned=True), and one plans every new length with
max_length=128 (the first batch also traced tiled to 128, so that no
length is traced for being the longest yet). Reported: planning time
against training time, which plans were derived, every step's
allocator-measured activation peak against the budget, and its
gradients against plain training's.

    .venv/bin/python bench/studies/planning.py
    .venv/bin/python bench/studies/planning.py --layers 4,12 --steps 50
    .venv/bin/python bench/studies/planning.py --layers '' --width 1024 \
        -o results/planning/studies/wide.json   # longer steps
    python3 bench/studies/planning.py --device cuda --out DIR   # a GPU

Writes results/planning/<device>.json and <device>.md (into DIR when
--out is a directory).
"""

import argparse
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

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def decoder_plan_times(layers, device, seq=128, d=256):
    import transformers
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=layers, n_embd=d, n_head=4,
                                  vocab_size=512, n_positions=seq)
    model = transformers.GPT2LMHeadModel(cfg).to(device)
    ids = torch.randint(512, (2, seq)).to(device)
    t0 = time.perf_counter()
    plan = rt.plan(model, dict(input_ids=ids, labels=ids), budget=0.5)
    total = time.perf_counter() - t0
    return {"layers": layers, "d_model": d, "sequence": seq,
            "nodes": plan.graph.num_nodes, "plan_seconds": total,
            "trace_seconds": plan.trace_seconds,
            "search_seconds": total - plan.trace_seconds,
            "algorithm": plan.algorithm}


MAX_LENGTH = 128  # the zoo's bench size's sequence length


def lengths(steps, seed):
    k = torch.distributions.Geometric(torch.tensor(0.35))
    torch.manual_seed(seed)
    return [int(min(MAX_LENGTH, 8 * (1 + k.sample().item())))
            for _ in range(steps)]


def varied_run(steps, seed, buckets, device, size, pad_to_planned=False,
               max_length=None):
    """`steps` training steps of the zoo's Llama at `size` (a zoo.Size)
    through rt.remat on long-tailed lengths, each length planned apart
    (buckets None), padded up to `buckets`, or padded up to a longer
    planned length until padding has cost a plan (`pad_to_planned`), with
    `max_length` or not. Every step is measured at the allocator and its
    gradients compared with plain training's on the batch the plan ran
    (the padded one: bit for bit) and, padded, with the unpadded batch's
    (rounding: max_grad_diff_unpadded). The measuring runs see the books of padding
    the training call saw, so they decide as it did and the run pads and
    plans as one call a step would."""
    model, _ = zoo.build("llama", size=size)
    model.to(device)
    batch_size = size.batch
    ids = torch.randint(size.vocab,
                        (batch_size, MAX_LENGTH)).to(device)
    eager_peak = measure.measure_step(
        lambda: model(input_ids=ids, labels=ids).loss.backward(), model,
        timing=False)["measured_peak_bytes"]
    budget = eager_peak // 2
    step = rt.remat(model, budget=budget, buckets=buckets,
                    pad_to_planned=pad_to_planned, max_length=max_length)
    g = torch.Generator().manual_seed(seed + 1)
    rows, plan_seconds, train_seconds = [], 0.0, 0.0
    for length in lengths(steps, seed):
        ids = torch.randint(1, size.vocab,
                            (batch_size, length), generator=g).to(device)
        batch = dict(input_ids=ids, labels=ids)
        before = {id(p) for ps in step.plans.values() for p in ps}
        books = dict(step.padding_waste)
        t0 = time.perf_counter()
        step(**batch)  # plans where the shape is new
        first = time.perf_counter() - t0
        made = [p for ps in step.plans.values() for p in ps
                if id(p) not in before]
        planned = bool(made)
        ran = batch if buckets is None and not pad_to_planned else \
            rt.buckets.pad(batch, [step.ran_length], step.pad_id)
        plain = measure.measure_step(
            lambda: model(**ran).loss.backward(), model, timing=False,
            peak=False)
        unpadded = None if ran["input_ids"].shape == ids.shape else \
            measure.measure_step(
                lambda: model(**batch).loss.backward(), model,
                timing=False, peak=False, reference=plain["grads"])
        after = step.padding_waste

        def as_trained():
            step.padding_waste = dict(books)
            step(**batch)

        got = measure.measure_step(as_trained, model, repeats=1, warmup=0,
                                   reference=plain["grads"])
        step.padding_waste = after
        if planned:
            plan_seconds += first - got["step_seconds"]
        train_seconds += got["step_seconds"]
        rows.append({"length": length, "ran_length": ran["input_ids"].shape[1],
                     "planned": planned,
                     "derived": any(p.traced.derived_from is not None
                                    for p in made),
                     "reused": any(p.traced.reused for p in made),
                     "measured_peak_bytes": got["measured_peak_bytes"],
                     "within_budget": got["measured_peak_bytes"] <= budget,
                     "gradients_equal": got["gradients_equal"],
                     "max_grad_diff_unpadded": None if unpadded is None
                     else unpadded["max_grad_diff"],
                     "step_seconds": got["step_seconds"],
                     "plan_seconds": first - got["step_seconds"]
                     if planned else 0.0})
    return {"buckets": buckets, "pad_to_planned": pad_to_planned,
            "max_length": max_length,
            "budget_bytes": budget,
            "eager_peak_bytes_at_max_length": eager_peak,
            "plan_seconds": plan_seconds, "train_seconds": train_seconds,
            "steps": rows}


def varied_line(v):
    rows = v["steps"]
    shapes = sorted({r["length"] for r in rows})
    planned = [r for r in rows if r["planned"]]
    total = v["plan_seconds"] + v["train_seconds"]
    how = ("padded up to a longer planned length until padding has cost "
           "a plan (pad_to_planned)" if v.get("pad_to_planned") else
           "each length planned apart" if v["buckets"] is None else
           f"padded to buckets {v['buckets']}")
    if v.get("max_length"):
        how += (f", the first batch also traced tiled to max_length "
                f"{v['max_length']}")
    others = [r["plan_seconds"] for r in planned[1:]
              if not r["derived"] and not r.get("reused")]
    reused = [r["plan_seconds"] for r in planned if r.get("reused")]
    derived = [r["plan_seconds"] for r in planned if r["derived"]]
    line = (f"- {how}: {len(planned)} plans took {v['plan_seconds']:.1f} s "
            f"of {total:.1f} s ({v['plan_seconds'] / total:.0%}); the first "
            f"{planned[0]['plan_seconds']:.1f} s")
    if others:
        line += (f", {len(others)} more traced "
                 f"{min(others):.1f}-{max(others):.1f} s")
    if derived:
        line += (f", {len(derived)} derived from traces of other lengths "
                 f"{min(derived):.2f}-{max(derived):.2f} s")
    if reused:
        line += (f", {len(reused)} on the trace made at the first call "
                 f"(max_length) {min(reused):.2f}-{max(reused):.2f} s")
    median_step = statistics.median(r["step_seconds"] for r in rows)
    line += (f"; training {v['train_seconds']:.1f} s (a step "
             f"{median_step * 1e3:.0f} ms at the median); "
             f"{sum(r['within_budget'] for r in rows)} of {len(rows)} steps "
             "within the budget at the allocator, "
             f"{sum(r['gradients_equal'] for r in rows)} with gradients "
             "equal to plain training's on the batch run")
    diffs = [r["max_grad_diff_unpadded"] for r in rows
             if r["max_grad_diff_unpadded"] is not None]
    if diffs:
        line += (f" (against the unpadded batch's: at most "
                 f"{max(diffs):.1e})")
    return line + f"; {len(shapes)} lengths ({shapes[0]}-{shapes[-1]})."


def markdown(doc):
    lines = ["# Planning time", "",
             f"{doc['context']['date']}, {doc['context']['device_name']}, "
             f"{torch.get_num_threads()} thread(s), torch "
             f"{torch.__version__}; "
             f"`{doc['context']['command_line']}`.", "",
             f"The first plan in the process (a one-layer decoder) took "
             f"{doc['first_plan_seconds']:.1f} s."]
    if doc["decoders"]:
        lines[-1] = lines[-1][:-1] + (
            "; GPT-2-style decoders, d 256, sequence 128, batch 2, planned "
            "at 0.5 after it:")
        lines += ["", "| decoder layers | nodes | plan s | trace s | "
                  "search s | algorithm |", "|---:|---:|---:|---:|---:|---|"]
    for r in doc["decoders"]:
        lines.append(f"| {r['layers']} | {r['nodes']} | "
                     f"{r['plan_seconds']:.1f} | {r['trace_seconds']:.1f} | "
                     f"{r['search_seconds']:.1f} | {r['algorithm']} |")
    size = doc["llama"]
    lines += ["", f"The zoo's Llama ({size['layers']} layers, width "
              f"{size['width']}, batch {size['batch']}) over "
              f"{len(doc['varied'][0]['steps'])} steps of lengths "
              "8 * (1 + k), k ~ Geometric(0.35), at most 128, budget "
              f"{doc['varied'][0]['budget_bytes']:,} bytes for every shape "
              "(half of plain training's activation peak at 128):", ""]
    lines += [varied_line(v) for v in doc["varied"]]
    return "\n".join(lines) + "\n"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", default="4,12,24,48",
                    help="decoder depths to plan (comma-separated; '' for "
                    "none)")
    ap.add_argument("--width", type=script.positive_count,
                    default=zoo.SIZES["bench"].width,
                    help="the width of the Llama the varied-length runs "
                    "train (the zoo's bench size otherwise)")
    ap.add_argument("--steps", type=script.positive_count, default=200)
    ap.add_argument("--buckets", default="32,64,96,128",
                    help="bucket lengths of the second run (comma-"
                    "separated); the first plans every length apart")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=script.positive_count, default=2)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("-o", "--out", help="the JSON file, or a directory for "
                    "<device>.json (default: results/planning/<device>.json)")
    args = ap.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: no CUDA device here")
    out = args.out or os.path.join(ROOT, "results/planning")
    if os.path.isdir(out):
        out = os.path.join(out, f"{device.type}.json")
    try:
        depths = [int(x) for x in args.layers.split(",") if x.strip()]
    except ValueError:
        ap.error(f"--layers: {args.layers!r} is not a list of integers")
    try:
        buckets = rt.buckets.lengths_of(
            [int(x) for x in args.buckets.split(",")])
    except (ValueError, rematbench.Error):
        ap.error(f"--buckets: {args.buckets!r} is not a list of positive "
                 "integers")
    if args.steps < 2 or any(d < 1 for d in depths):
        ap.error("--steps must be >= 2 and every depth >= 1")
    size = dataclasses.replace(zoo.SIZES["bench"], width=args.width)
    torch.set_num_threads(args.threads)
    # The first plan in a process also pays for imports and for torch's
    # first dispatches: recorded apart, on a one-layer decoder.
    t0 = time.perf_counter()
    decoder_plan_times(1, device)
    first_plan = time.perf_counter() - t0
    decoders = []
    for d in depths:
        print(f"planning.py: decoder of {d} layers", file=sys.stderr)
        decoders.append(decoder_plan_times(d, device))
    print(f"planning.py: {args.steps} steps of varied lengths",
          file=sys.stderr)
    doc = {"format": "rematbench-planning", "version": 5,
           "context": files.run_context(
               torch=torch.__version__, threads=args.threads,
               device=device.type, device_name=torch.cuda.get_device_name(
                   device) if device.type == "cuda" else "CPU"),
           "first_plan_seconds": first_plan, "decoders": decoders,
           "llama": dataclasses.asdict(size),
           "varied": [varied_run(args.steps, args.seed, None, device, size),
                      varied_run(args.steps, args.seed, buckets, device,
                                 size),
                      varied_run(args.steps, args.seed, None, device, size,
                                 True),
                      varied_run(args.steps, args.seed, None, device, size,
                                 max_length=MAX_LENGTH)]}
    files.write_json(out, doc, indent=1)
    text = markdown(doc)
    files.write_text(os.path.splitext(out)[0] + ".md", text)
    print(text)


if __name__ == "__main__":
    script.run(main, sys.argv[1:])
