#!/usr/bin/env python3
"""rt.remat's time to answer a new sequence length, as the Python package is
now against its Python sources at another revision, on the same machine
at the same time: the two run alternately, each in a process of its own,
on the zoo's bench-size Llama (4 layers, width 256, batch 4) with a budget
in bytes (half of plain training's activation peak at length 128). Each
process times the first call (trace, search, one step) of each length in
turn: the first planned with every algorithm, the later ones by its
winners. The other revision gets the installed package with its Python
files replaced by that revision's, so the two must share the C++ module
(no change under python/*.cc between them).

    .venv/bin/python bench/studies/new_shape_ab.py --base 6a90461 \\
        -o results/planning/studies/new-shape-ab.md

Prints one JSON line per process; writes them and a table (markdown) to
`-o`, appending where the file exists.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from rematbench import files, script

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

# One process's work: plan lengths[0], then time the first call of each
# later length.
CHILD = """
import json, sys, time, torch
import rematbench, rematbench.torch as rt
from rematbench import zoo
from rematbench.torch import measure
torch.set_num_threads(2)
torch.manual_seed(0)
model, _ = zoo.build("llama", size="bench")
ids = torch.randint(1, 1024, (4, 128))
budget = measure.measure_step(
    lambda: model(input_ids=ids, labels=ids).loss.backward(), model,
    timing=False)["measured_peak_bytes"] // 2
step = rt.remat(model, budget=budget)
out = {"code": sys.argv[1]}
for length in [int(x) for x in sys.argv[2].split(",")]:
    ids = torch.randint(1, 1024, (4, length))
    t = time.perf_counter()
    step(input_ids=ids, labels=ids)
    out[str(length)] = round(time.perf_counter() - t, 3)
print(json.dumps(out))
"""


def package_at(rev, into):
    """A copy of the installed rematbench package with its Python files
    replaced by revision `rev`'s (python/rematbench/**.py)."""
    import rematbench
    dest = os.path.join(into, "rematbench")
    shutil.copytree(os.path.dirname(rematbench.__file__), dest,
                    ignore=shutil.ignore_patterns("__pycache__"))
    names = subprocess.run(
        ["git", "-C", ROOT, "ls-tree", "-r", "--name-only", rev,
         "python/rematbench"], check=True, capture_output=True,
        text=True).stdout.split()
    for name in names:
        if name.endswith(".py"):
            text = subprocess.run(["git", "-C", ROOT, "show", f"{rev}:{name}"],
                                  check=True, capture_output=True).stdout
            path = os.path.join(into, os.path.relpath(name, "python"))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(text)
    return into


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True,
                    help="the revision to compare with (its Python sources)")
    ap.add_argument("--lengths", default="64,48,40,56,32,24,16,8,72,80",
                    help="sequence lengths in order; the first is planned "
                    "with every algorithm, the others are timed")
    ap.add_argument("--rounds", type=script.positive_count, default=2)
    ap.add_argument("-o", "--out", help="markdown file to append to")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        base = package_at(args.base, os.path.join(tmp, "base"))
        runs = []
        for _ in range(args.rounds):
            for code, path in (("base", base), ("now", None)):
                env = dict(os.environ)
                if path is not None:
                    env["PYTHONPATH"] = path
                r = subprocess.run([sys.executable, "-c", CHILD, code,
                                    args.lengths], env=env, check=True,
                                   capture_output=True, text=True)
                runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
                print(json.dumps(runs[-1]), flush=True)
    timed = args.lengths.split(",")
    lines = [f"## {args.lengths} after {args.base}", "",
             f"{json.dumps(files.run_context())}", "",
             f"| length | {args.base} s | now s |", "|---:|---|---|"]
    for n in timed:
        cells = [", ".join(f"{r[n]:.2f}" for r in runs if r["code"] == c)
                 for c in ("base", "now")]
        first = " (the first: every algorithm)" if n == timed[0] else ""
        lines.append(f"| {n}{first} | {cells[0]} | {cells[1]} |")
    ratios = [b[n] / a[n] for a, b in zip(runs[0::2], runs[1::2])
              for n in timed[1:]]
    lines += ["", f"Median of now / {args.base} over the pairs of later "
              "lengths: "
              f"{statistics.median(ratios):.2f}.", "", "```",
              *[json.dumps(r) for r in runs], "```", ""]
    text = "\n".join(lines)
    print(text, file=sys.stderr)
    if args.out:
        old = open(args.out).read() if os.path.exists(args.out) else ""
        files.write_text(args.out, old + text)


if __name__ == "__main__":
    script.run(main, sys.argv[1:])
