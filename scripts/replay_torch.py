#!/usr/bin/env python3
"""Replays a rematerialization schedule on the real PyTorch training step a
graph was exported from, and measures what the simulator only predicts.

  scripts/replay_torch.py GRAPH.json SCHEDULE.txt [--json]
  scripts/replay_torch.py GRAPH.json --algorithm chen_sqrtn --budget 8MiB \\
      [-p k=v ...]

GRAPH is an export of scripts/export_torch.py (its provenance names the
model, options and seed); SCHEDULE is the text format of docs/formats.md
(`c <id>` / `f <id>`), or `--algorithm/--budget` has the package's core
(rematbench.solve, what `remat solve` runs) make one. The core reads the
schedule and the export and simulates the schedule, as `remat validate`
does.

What is replayed and measured: rematbench.torch.replay
(python/rematbench/torch/replay.py).

Exit status: 0 replayed with gradients and running statistics equal to
the eager step's, 1 replayed but they differ, 2 bad usage or bad input (one
line on stderr naming the file and the event or node: a graph whose model
cannot be rebuilt or does not match the file, a schedule that is illegal
for it).
"""

import argparse
import json
import os
import sys

from rematbench import files, script
from rematbench.torch.replay import BadInput, Replayer, load_cost_graph, solve


def parse_args(argv):
    p = argparse.ArgumentParser(
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
        description="Replay a schedule on the real PyTorch training step an "
        "export of scripts/export_torch.py was traced from: measured peak "
        "of live activation storage, step time vs the NoRemat replay, and "
        "every parameter gradient vs a plain eager step.",
        )
    p.add_argument("graph", help="export of scripts/export_torch.py")
    p.add_argument("schedule", nargs="?",
                   help="schedule file (c <id> / f <id>); or use "
                   "--algorithm and --budget")
    p.add_argument("-a", "--algorithm",
                   help="make the schedule with this algorithm (as `remat "
                   "solve -a NAME`)")
    p.add_argument("-b", "--budget", help="budget for --algorithm (bytes, "
                   "or 8MiB ...)")
    p.add_argument("-p", "--param", action="append", default=[],
                   help="algorithm parameter k=v (repeatable)")
    p.add_argument("--device", default="cpu", help="cpu or cuda[:N]")
    p.add_argument("--threads", type=script.count, default=1,
                   help="torch CPU threads (default 1: steadier timings; 0 "
                   "keeps torch's default)")
    p.add_argument("--repeats", type=script.count, default=5,
                   help="timed replays, each paired with one of NoRemat "
                   "(median); 0: measure memory and gradients only")
    p.add_argument("--warmup", type=script.count, default=1,
                   help="untimed replays before timing")
    p.add_argument("--cost-graph",
                   help="an export of the same step with --cost measured: "
                   "also predict the overhead with its costs")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object on stdout")
    p.add_argument("-o", "--out", help="also write the JSON object here")
    args = p.parse_args(argv)
    if (args.schedule is None) == (args.algorithm is None):
        p.error("give a schedule file or --algorithm, not both or neither")
    if args.repeats < 0 or args.warmup < 0:
        p.error("--repeats and --warmup must be >= 0")
    if args.device != "cpu" and not args.device.startswith("cuda"):
        p.error(f"--device must be cpu or cuda[:N], not '{args.device}'")
    return args


def main(argv):
    args = parse_args(argv)
    sched, tmp = args.schedule, None
    try:
        if args.device.startswith("cuda"):
            import torch
            if not torch.cuda.is_available():
                raise BadInput(f"--device {args.device}: torch "
                               f"{torch.__version__} sees no CUDA device")
        r = Replayer(args.graph, args.device, args.threads)
        cost_graph = load_cost_graph(args.cost_graph, r.graph) \
            if args.cost_graph else None
        if args.algorithm:
            tmp, _ = solve(r.core, args.graph, args.algorithm,
                           args.budget, args.param)
            sched = tmp
        out = r.replay(sched, args.repeats, args.warmup, cost_graph)
        if args.algorithm:
            out.update(schedule=None, algorithm=args.algorithm,
                       budget=args.budget, params=args.param)
    except BadInput as e:
        print(f"replay_torch.py: {e}", file=sys.stderr)
        return 2
    finally:
        if tmp:
            os.unlink(tmp)
    if args.out:
        files.write_json(args.out, out, indent=1)
    if args.json:
        json.dump(out, sys.stdout, indent=1)
        print()
    else:
        timing = "not timed" if out["ratio_to_baseline"] is None else (
            f"measured {out['ratio_to_baseline']:.3f} "
            f"({out['step_seconds'] * 1e3:.1f} ms vs NoRemat "
            f"{out['baseline_seconds'] * 1e3:.1f} ms)")
        print(f"{script.shown(out['graph'])}: length {out['length']}, "
              f"peak simulated {out['simulated_peak_bytes']:,} measured "
              f"{out['measured_peak_bytes']:,} bytes; overhead predicted "
              f"{out['predicted_overhead']:.3f} {timing}; gradients "
              f"{'equal' if out['gradients_equal'] else 'DIFFER'}, buffers "
              f"{'equal' if out['buffers_equal'] else 'DIFFER'}")
    return 0 if out["gradients_equal"] and out["buffers_equal"] else 1


if __name__ == "__main__":
    script.run(main, sys.argv[1:])
