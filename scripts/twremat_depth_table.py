#!/usr/bin/env python3
"""TwRemat at increasing network depth: does its memory stay flat, and at
what cost in schedule length? (The question the NeurIPS 2019 reviewers of
Kumar et al. asked.)

For each generator (ResNet, CIFAR-style 6n+2 and ImageNet depths;
Transformer encoders) and each depth, runs `remat graph info`, `remat solve
--algorithm noremat` and `remat solve --algorithm twremat --param
search=off` (the full-depth recursion, no budget) and writes one table:
depth, nodes, treewidth upper bound, hierarchy levels, the memory lower
bound, NoRemat peak, TwRemat peak, their ratio, and the schedule length ratio (TwRemat computes / NoRemat computes).
Every figure is the harness simulator's. If a generator is not registered
(`remat list`), its rows are skipped; if none is, chains are used instead.

    scripts/twremat_depth_table.py [--remat build/remat] \
        [--out results/twremat_depth]

writes results/twremat_depth.md and results/twremat_depth.json.
"""
import argparse
import datetime
import os
import sys

from rematbench import client, files, script

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FAMILIES = [
    ("resnet (CIFAR, 32x32, batch 32)", "resnet",
     [(d, f"resnet:depth={d},image=32") for d in
      (20, 56, 110, 218, 434, 866, 1730)]),
    ("resnet (ImageNet, 224x224, batch 32)", "resnet",
     [(d, f"resnet:depth={d}") for d in (18, 34, 50, 101, 152, 200)]),
    ("transformer encoder (d_model 512, seq 512, batch 8)", "transformer",
     [(n, f"transformer:layers={n}") for n in (1, 2, 4, 8, 16, 32, 64, 128)]),
]
FALLBACK = ("chain (unit memory and cost)", "chain",
            [(n, f"chain:n={n}") for n in (16, 64, 256, 1024, 4096, 16384)])


def human(nbytes):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= size:
            return f"{nbytes / size:.1f} {unit}"
    return f"{nbytes} B"


def measure(remat, spec):
    info = remat.info(spec)
    plain = remat.call(["solve", "--algorithm", "noremat", "--graph", spec,
                        "--json"])
    tw = remat.call(["solve", "--algorithm", "twremat", "--graph", spec,
                     "--param", "search=off", "--json"])
    if not (plain["valid"] and tw["valid"]):
        sys.exit(f"{spec}: invalid schedule: {plain} {tw}")
    return {
        "spec": spec,
        "nodes": info["nodes"],
        "treewidth_upper_bound": info.get("treewidth_upper_bound"),
        "lower_bound_bytes": info["lower_bound_bytes"],
        "noremat_peak_bytes": plain["peak_bytes"],
        "noremat_length": plain["length"],
        "twremat_status": tw["status"],
        "twremat_peak_bytes": tw["peak_bytes"],
        "twremat_length": tw["length"],
        "twremat_overhead": tw["overhead"],
        "twremat_solve_seconds": tw["solve_seconds"],
        "hierarchy_height": tw.get("details", {}).get("hierarchy_height"),
    }


def markdown(families, command, commit):
    lines = [
        "# TwRemat at increasing depth",
        "",
        f"Written by `{command}` at commit `{commit}` on "
        f"{datetime.date.today().isoformat()}. Full-depth TwRemat "
        "(`search=off`, no budget) against NoRemat; every figure is the "
        "simulator's activation peak (static bytes excluded). Length ratio = "
        "TwRemat computes / NoRemat computes; overhead = TwRemat cost / base "
        "cost.",
    ]
    for title, rows in families:
        lines += ["", f"## {title}", "",
                  "| depth | nodes | width | hierarchy levels "
                  "| memory lower bound | NoRemat peak | TwRemat peak "
                  "| TwRemat / NoRemat peak | length ratio | overhead |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for depth, r in rows:
            lines.append(
                f"| {depth} | {r['nodes']} | {r['treewidth_upper_bound']} "
                f"| {r['hierarchy_height']} "
                f"| {human(r['lower_bound_bytes'])} "
                f"| {human(r['noremat_peak_bytes'])} "
                f"| {human(r['twremat_peak_bytes'])} "
                f"| {r['twremat_peak_bytes'] / r['noremat_peak_bytes']:.3f} "
                f"| {r['twremat_length'] / r['noremat_length']:.2f} "
                f"| {r['twremat_overhead']:.2f} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--remat", default=os.path.join(ROOT, "build", "remat"))
    parser.add_argument("--out", default=os.path.join(ROOT, "results",
                                                      "twremat_depth"))
    args = parser.parse_args()
    remat = client.Remat(args.remat, ROOT, name="twremat_depth_table")
    generators = {g["name"] for g in remat.call(["list", "--json"])["generators"]}
    chosen = [f for f in FAMILIES if f[1] in generators] or [FALLBACK]
    families = []
    for title, _, specs in chosen:
        rows = []
        for depth, spec in specs:
            print(f"  {spec}", file=sys.stderr)
            rows.append((depth, measure(remat, spec)))
        families.append((title, rows))
    commit = client.git_commit(ROOT) or "unknown"
    command = " ".join(["scripts/twremat_depth_table.py"] + sys.argv[1:])
    files.write_text(args.out + ".md",
                     markdown(families, command, commit).rstrip() + "\n")
    files.write_json(args.out + ".json",
                     {"command": command, "commit": commit,
                      "families": [{"title": t, "rows": [r for _, r in rows]}
                                   for t, rows in families]}, indent=1)
    print(f"wrote {args.out}.md and {args.out}.json", file=sys.stderr)


if __name__ == "__main__":
    script.run(main)
