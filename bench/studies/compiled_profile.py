#!/usr/bin/env python3
"""Where a rematbench compiled program's step time goes, beside
torch.compile's at the same level: kernels run, GPU (or CPU) time in them,
and the wall time around them.

bench/studies/torch_options.py compares the two step times at the
options' own levels; this shows where a difference comes from. One model's
training step, run three ways, is measured with rematbench.torch.measure
(the median time of --repeats synchronized steps after a warm-up, and the
allocator-level peak) and one step of each is profiled (torch.profiler):
  compile           torch.compile at activation_memory_budget (--level),
  compile_fallback  the same with inductor's fallback_random, the setting
                    rematbench's programs compile with (random ops run as
                    eager's, so dropout masks equal plain training's),
  rematbench        rematbench's plan at --budget bytes (default: the
                    first variant's measured peak), compiled by inductor.
Writes <out>/compiled-profile-<device>-<dtype>.{json,md}.
"""
import argparse
import json
import os

import torch

import rematbench.torch as rt
from rematbench import script
from rematbench.torch import measure
from rematbench.torch import options


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def profiled(step, device, top):
    """Kernel count, time in kernels and the `top` kernels by time of one
    step (the device's kernels on CUDA; on the CPU, ATen ops by their own
    time, which leaves out inductor's generated C++ kernels)."""
    acts = [torch.profiler.ProfilerActivity.CPU]
    if device.type == "cuda":
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=acts) as prof:
        step()
        sync(device)
    kern = {}
    for e in prof.events():
        on_device = e.device_type == torch.autograd.DeviceType.CUDA
        if device.type == "cuda" and not on_device:
            continue
        if device.type != "cuda" and not e.name.startswith("aten::"):
            continue
        t = e.device_time if on_device else e.self_cpu_time_total
        n, s = kern.get(e.name, (0, 0.0))
        kern[e.name] = (n + 1, s + t)
    total = sum(s for _, s in kern.values())
    best = sorted(kern.items(), key=lambda kv: -kv[1][1])[:top]
    return {"kernels": sum(n for n, _ in kern.values()),
            "kernel_seconds": total / 1e6,
            "top": [{"name": k[:90], "count": n, "seconds": s / 1e6}
                    for k, (n, s) in best]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available()
                    else "cpu")
    ap.add_argument("--dtype", default="bfloat16",
                    choices=["float32", "bfloat16"])
    ap.add_argument("--model", default="gpt2")
    ap.add_argument("--sizes", choices=["quick", "cpu", "gpu"])
    ap.add_argument("--level", type=script.positive, default=1.0,
                    help="torch.compile's activation_memory_budget")
    ap.add_argument("--budget", type=script.positive_count,
                    help="rematbench's budget in bytes (default: the "
                         "torch.compile variant's measured peak)")
    ap.add_argument("--repeats", type=script.positive_count, default=5)
    ap.add_argument("--top", type=script.count, default=8)
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    device = torch.device(args.device)
    sizes = args.sizes or ("gpu" if device.type == "cuda" else "cpu")
    build, desc = options.models(sizes)[args.model]
    torch.manual_seed(0)
    model, batch, loss_fn, _, _ = build()
    x, y = options.placed(model, batch, device, getattr(torch, args.dtype))
    model.train()
    fconfig = torch._functorch.config
    icfg = torch._inductor.config
    rows = []

    def record(name, step, **extra):
        """Times `step` and measures its peak (rematbench.torch.measure, the
        instrument of bench/studies/torch_options.py), then profiles one
        step."""
        r = measure.measure_step(step, model=model, repeats=args.repeats,
                                 warmup=1, seed=0)
        prof = profiled(step, device, args.top)
        rows.append(dict({"variant": name, "step_seconds": r["step_seconds"],
                          "measured_peak_bytes": r["measured_peak_bytes"]},
                         **prof, **extra))
        print(f"{name}: step {r['step_seconds'] * 1e3:.1f} ms, peak "
              f"{r['measured_peak_bytes']} B, {prof['kernels']} kernels, "
              f"{prof['kernel_seconds'] * 1e3:.1f} ms in them", flush=True)

    for name, fallback in (("compile", False), ("compile_fallback", True)):
        torch._dynamo.reset()
        with fconfig.patch(activation_memory_budget=args.level), \
                icfg.patch(fallback_random=fallback):
            cm = torch.compile(model)

            def step():
                loss_fn(cm(x), y).backward()
            record(name, step)
    peak = rows[0]["measured_peak_bytes"]
    torch._dynamo.reset()
    budget = args.budget or peak
    plan = rt.plan(model, (x, y), loss_fn, budget=1.0,
                   algorithms=options.HEURISTICS, repeats=2,
                   threads=os.cpu_count())
    p = plan.at(budget)
    p.compile(True)
    record("rematbench", lambda: p.step(x, y), algorithm=p.algorithm,
           budget_bytes=budget)
    prog = p.program()
    counts = getattr(prog, "compiled_op_counts", None)
    doc = {"format": "rematbench-compiled-profile", "version": 1,
           "model": desc, "device": torch.cuda.get_device_name()
           if device.type == "cuda" else "cpu", "dtype": args.dtype,
           "torch": torch.__version__, "level": args.level,
           "compile_peak_bytes": peak, "rows": rows,
           "rematbench_compiled_ops": sum(counts.values()) if counts
           else None}
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out,
                        f"compiled-profile-{device.type}-{args.dtype}")
    with open(stem + ".json", "w") as f:
        json.dump(doc, f, indent=1)
    lines = [f"# Compiled step profile: {desc}", "",
             f"{doc['device']}, {args.dtype}, torch {torch.__version__}, "
             f"torch.compile at activation_memory_budget={args.level} "
             f"(measured peak {peak} B); rematbench at {budget} B "
             f"({p.algorithm}). Step: median of {args.repeats}.", "",
             "| variant | step ms | peak MiB | kernels | ms in kernels |",
             "|---|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['variant']} | {r['step_seconds'] * 1e3:.1f} | "
                     f"{r['measured_peak_bytes'] / 2**20:.2f} | "
                     f"{r['kernels']} | "
                     f"{r['kernel_seconds'] * 1e3:.1f} |")
    for r in rows:
        lines += ["", f"## {r['variant']}: top kernels", "",
                  "| kernel | count | ms |", "|---|---:|---:|"]
        lines += [f"| `{k['name']}` | {k['count']} | "
                  f"{k['seconds'] * 1e3:.2f} |" for k in r["top"]]
    with open(stem + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote", stem + ".{json,md}")


if __name__ == "__main__":
    script.run(main)
