#!/usr/bin/env python3
"""Exports real PyTorch training graphs to the native rematbench graph format.

Usage (install torch first:
  REMAT_EXTRA_PACKAGES="python3-torch python3-torchvision" scripts/setup.sh):

  scripts/export_torch.py --model resnet50 --batch 2 --image 64 \
      --granularity aten -o resnet50.json

One training step (forward, loss, gradients of every parameter) is traced
into the joint forward+backward graph of ATen operations and written as a
native graph (docs/formats.md), following the "Training graphs" convention
of docs/model.md.

How the graph is obtained: rematbench.torch.trace (shared with
rematbench.torch.plan); the document is the traced step's own
(rematbench.torch.TracedStep.document).
See `Mapping` in graphs/corpus/torch/README.md for how ops become nodes.
"""

import argparse
import collections
import json
import platform
import sys
import time

import torch
import torchvision

from rematbench import files, script  # noqa: E402
# The tracer is rematbench.torch.trace, shared with rematbench.torch; the
# models are rematbench.models (rematbench.torch.replay rebuilds them from
# there). The names stay importable from here for callers of export().
from rematbench.models import (MODELS, SEED, TrainStep,  # noqa: F401
                               add_model_args, build, finish_model_args,
                               model_args_dict, size_suffix)
from rematbench.torch import TracedStep
from rematbench.torch.trace import (Unsupported, export,  # noqa: F401
                                    trace_nodes)

# --------------------------------------------------------------------------
# Command line.


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Export a PyTorch training step (forward, loss, "
        "backward) as a rematbench graph (format v1). The model and batch "
        "options are recorded in the graph's provenance (model_args, seed), "
        "so scripts/replay_torch.py can rebuild the same step.")
    add_model_args(p)
    p.add_argument("--granularity", choices=("aten", "module"),
                   default="aten")
    p.add_argument("--cost", choices=("flop", "measured"), default="flop",
                   help="FLOPs from shapes, or the median time of each op "
                   "in nanoseconds on --device (units.cost = ns)")
    p.add_argument("--repeats", type=script.positive_count, default=5,
                   help="runs per op for --cost measured (median)")
    p.add_argument("--workspace", choices=("measured", "none"),
                   default="measured",
                   help="measured: what each op allocates beyond its "
                   "outputs (oneDNN's reordered weights, cuDNN's "
                   "workspaces), seen by the allocator in one run on "
                   "--device, becomes the node's workspace, so the "
                   "simulated peak bounds the allocator's; none: 0 (aten "
                   "granularity), as the papers' graphs have it")
    p.add_argument("--saved-parts", choices=("cloned", "kept"),
                   default="cloned",
                   help="cloned: the backward reads clones of batch and "
                   "layer norm's statistics, so the op's output is freed "
                   "after its forward reader, as in training "
                   "(rematbench.torch.trace); kept: the op "
                   "is one node held until its backward, as exports made "
                   "before 2026-11-25 have it")
    p.add_argument("--device", default="cpu",
                   help="cpu or cuda (cuda:N): where the step is traced "
                   "and timed; the model and batch are drawn on the CPU "
                   "from the same seed, so they are the same on both")
    p.add_argument("--threads", type=script.count, default=0,
                   help="torch CPU threads (0: torch's default); time "
                   "measured costs with the thread count you replay with")
    p.add_argument("--name", default=None, help="graph name")
    p.add_argument("-o", "--out", required=True,
                   help="output file (.json, or .json.gz to compress)")
    args = finish_model_args(p, p.parse_args(argv))
    if args.device != "cpu" and not args.device.startswith("cuda"):
        p.error(f"--device must be cpu or cuda[:N], not '{args.device}'")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        p.error(f"--device {args.device}: torch {torch.__version__} sees "
                "no CUDA device")
    if args.repeats < 1:
        p.error("--repeats must be at least 1")
    return args


def write(path, graph):
    """Writes to a temporary file beside `path` and renames it, so that a
    failed export leaves no partial file."""
    head = {k: v for k, v in graph.items() if k != "nodes"}
    lines = json.dumps(head, indent=1)[:-2] + ',\n "nodes": [\n'
    lines += ",\n".join(
        json.dumps(n, separators=(",", ":")) for n in graph["nodes"])
    text = lines + "\n ]\n}\n"
    with files.replacing(path, binary=True) as f:
        if path.endswith(".gz"):
            import gzip
            with gzip.GzipFile(filename="", mode="wb", fileobj=f,
                               mtime=0) as z:
                z.write(text.encode())
        else:
            f.write(text.encode())


def main(argv):
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    t0 = time.time()
    step, inputs = build(args, args.device)
    name = args.name or f"torch_{args.model}_{size_suffix(args)}_" \
        f"{args.granularity}"
    try:
        traced = TracedStep.trace(step, inputs, name, args.granularity,
                                  args.cost, args.repeats,
                                  args.workspace == "measured",
                                  args.saved_parts == "cloned")
    except Unsupported as e:
        print(f"export_torch.py: {e}", file=sys.stderr)
        sys.exit(2)
    out = traced.nodes
    n_params = sum(p.numel() for p in step.parameters())
    command = " ".join(["scripts/export_torch.py"] + argv)
    provenance = {
        "generator": "scripts/export_torch.py",
        "command": command,
        "model": args.model,
        "granularity": args.granularity,
        "workspace": args.workspace,
        # The replayer rebuilds files without this key (made before it
        # existed) as they were traced: "kept".
        "saved_parts": args.saved_parts,
        # Everything scripts/replay_torch.py needs to rebuild the step:
        # rematbench.models.build(model_args) after torch.manual_seed(seed).
        "model_args": model_args_dict(args),
        "seed": SEED,
        "device": args.device,
        "source": "make_fx joint graph of loss + autograd.grad, "
                  "functionalized (functorch aot_autograd recipe)",
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "python": platform.python_version(),
        "parameters": n_params,
        "parameter_bytes": traced.parameter_bytes,
        "input_bytes": traced.input_bytes,
        "fx_nodes": len(traced.module.graph.nodes),
    }
    if args.cost == "flop":
        provenance["forward_flop"] = sum(
            n["cost"] for n in out if n["kind"] != "backward")
    else:
        provenance["cost_repeats"] = args.repeats
        provenance["threads"] = torch.get_num_threads()
        provenance["host"] = platform.node()
    graph = traced.document(provenance)
    write(args.out, graph)
    kinds = collections.Counter(n["kind"] for n in out)
    print(f"export_torch.py: {name}: {len(out)} nodes "
          f"({dict(sorted(kinds.items()))}) in {time.time() - t0:.1f} s "
          f"-> {args.out}", file=sys.stderr)


if __name__ == "__main__":
    script.run(main, sys.argv[1:])
