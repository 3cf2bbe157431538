#!/usr/bin/env python3
"""How much of DistributedDataParallel's communication a plan hides behind
its backward: two processes with gloo on the CPU train an MLP (`--layers`
linear layers of `--width`) under plain DDP and under rt.remat at
`--budget`, the planned step reducing its gradients either inside the
program as it finishes each one (what a step does when no gradient is
held before it) or after the program (what it does onto accumulated
gradients; forced here by holding zero gradients). Each rank also times
one all-reduce of all the gradients alone. Step times are medians over
`--steps` steps after `--warmup`, variants interleaved.

    .venv/bin/python bench/studies/ddp_overlap.py

Writes results/ddp/cpu.json and cpu.md.
"""

import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import time

import torch
import torch.nn as nn

from rematbench import files, script

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def mlp(width, layers):
    body = []
    for _ in range(layers):
        body += [nn.Linear(width, width), nn.Tanh()]
    return nn.Sequential(*body, nn.Linear(width, 10))


def worker(rank, world, port, args, out):
    import copy
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    import rematbench.torch as rt
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank, world_size=world)
    torch.manual_seed(0)
    net = mlp(args.width, args.layers)
    plain, planned = DDP(copy.deepcopy(net)), DDP(net)
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(args.batch, args.width, generator=g)
    y = torch.randint(10, (args.batch,), generator=g)
    step = rt.remat(planned, loss_fn, budget=args.budget, timeout=3)
    step(x, y)  # plans

    def plain_step():
        plain.zero_grad(set_to_none=True)
        loss_fn(plain(x), y).backward()

    def in_program():
        planned.zero_grad(set_to_none=True)
        step(x, y)

    def after_program():
        for p in planned.parameters():  # held gradients: reduced after
            p.grad = torch.zeros_like(p)
        step(x, y)

    flat = torch.cat([p.detach().reshape(-1) for p in net.parameters()])

    def allreduce_alone():
        dist.all_reduce(flat.clone())

    variants = {"plain_ddp": plain_step, "in_program": in_program,
                "after_program": after_program,
                "allreduce_alone": allreduce_alone}
    times = {k: [] for k in variants}
    for k in range(args.warmup + args.steps):
        for name, fn in variants.items():
            dist.barrier()
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    ((plan,),) = step.plans.values()
    result = {k: statistics.median(v[args.warmup:])
              for k, v in times.items()}
    result.update(algorithm=plan.algorithm, budget_bytes=plan.budget_bytes,
                  gradient_bytes=flat.numel() * flat.element_size())
    with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
        json.dump(result, f)
    dist.destroy_process_group()


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--width", type=script.positive_count, default=1024)
    ap.add_argument("--layers", type=script.positive_count, default=6)
    ap.add_argument("--batch", type=script.positive_count, default=64)
    ap.add_argument("--budget", type=script.positive, default=0.6)
    ap.add_argument("--steps", type=script.positive_count, default=15)
    ap.add_argument("--warmup", type=script.count, default=3)
    ap.add_argument("-o", "--out",
                    default=os.path.join(ROOT, "results/ddp/cpu.json"))
    args = ap.parse_args(argv)
    for name in ("width", "layers", "batch", "steps"):
        if getattr(args, name) < 1:
            ap.error(f"--{name} must be >= 1")
    if not 0 < args.budget < float("inf"):
        ap.error("--budget must be a positive fraction")
    import torch.multiprocessing as mp
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(worker, args=(2, port, args, tmp), nprocs=2)
        ranks = [json.load(open(os.path.join(tmp, f"rank{r}.json")))
                 for r in range(2)]
    doc = {"format": "rematbench-ddp-overlap", "version": 1,
           "context": files.run_context(torch=torch.__version__,
                                        threads_per_rank=1),
           "model": f"MLP {args.layers} x {args.width}, batch {args.batch}",
           "budget_fraction": args.budget, "ranks": ranks}
    files.write_json(args.out, doc, indent=1)
    r = ranks[0]
    saved = r["after_program"] - r["in_program"]
    lines = [
        "# DDP: communication hidden behind the planned backward", "",
        f"{doc['context']['date']}, 2 processes (gloo, CPU, 1 thread "
        f"each), {doc['model']}, rt.remat at {args.budget} "
        f"({r['algorithm']}); medians of {args.steps} steps, rank 0; "
        f"`{doc['context']['command_line']}`.", "",
        "| step | seconds |", "|---|---:|",
        f"| plain DDP (its buckets overlap the backward) | "
        f"{r['plain_ddp']:.4f} |",
        f"| planned, gradients reduced inside the program | "
        f"{r['in_program']:.4f} |",
        f"| planned, gradients reduced after the program | "
        f"{r['after_program']:.4f} |",
        f"| one all-reduce of every gradient "
        f"({r['gradient_bytes']:,} bytes) | {r['allreduce_alone']:.4f} |",
        "", f"Reducing each gradient inside the program as it is finished "
        f"made the step {saved:.4f} s faster than reducing them all after "
        f"it ({saved / r['after_program']:.0%}; the all-reduce alone takes "
        f"{r['allreduce_alone']:.4f} s, and reducing after the program "
        "also copies the gradients into one buffer and back); the planned "
        f"step took {r['in_program'] / r['plain_ddp']:.2f}x plain DDP's."]
    files.write_text(os.path.splitext(args.out)[0] + ".md",
                     "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    script.run(main, sys.argv[1:])
