"""Writes the wide graphs that the deadline checks of docs/robustness.md
("Deadlines on wide graphs") run every algorithm on, as native JSON:

  star.json    one root read by 10^6 leaves (forward nodes only)
  fanin.json   10^6 inputs read by one node
  tstar.json   a training graph's star: a root read by 3*10^5 leaves, a
               loss reading them all, a gradient per leaf reading the loss
               and the leaf, the root's gradient reading every leaf's
               (600,003 nodes; tests/test_support.h TrainingStar)

No generator makes these shapes. Every value is 1 byte and every node
costs 1. Then, for example:

  build/remat solve -a checkmate_lp -g DIR/star.json --timeout 5 --json

Usage: bench/studies/wide_graphs.py DIR [--leaves N] [--training-leaves N]
"""
import argparse
import json
import os
import sys

from rematbench import files, script


def node(i, kind, inputs, grad_of=None):
    n = {"id": i, "name": f"n{i}", "kind": kind, "op": "op", "mem": 1,
         "cost": 1, "inputs": inputs}
    if grad_of is not None:
        n["grad_of"] = grad_of
    return n


def write(path, name, nodes):
    header = {"format": "rematbench-graph", "version": 1, "name": name,
              "static_bytes": 0, "units": {"memory": "bytes", "cost": "flop"}}
    with files.replacing(path) as out:
        # One node a line: json.dumps of the whole would hold it twice.
        out.write(json.dumps(header)[:-1] + ', "nodes": [\n')
        out.write(",\n".join(json.dumps(n) for n in nodes))
        out.write("]}\n")


def star(leaves):
    return [node(0, "forward", [])] + [
        node(i, "forward", [0]) for i in range(1, leaves + 1)]


def fan_in(inputs):
    return [node(i, "forward", []) for i in range(inputs)] + [
        node(inputs, "forward", list(range(inputs)))]


def training_star(leaves):
    nodes = star(leaves)
    loss = leaves + 1
    nodes.append(node(loss, "loss", list(range(1, leaves + 1))))
    grads = []
    for leaf in range(1, leaves + 1):
        grads.append(len(nodes))
        nodes.append(node(len(nodes), "backward", [loss, leaf], grad_of=leaf))
    nodes.append(node(len(nodes), "backward", grads, grad_of=0))
    return nodes


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir")
    parser.add_argument("--leaves", type=script.positive_count, default=10**6)
    parser.add_argument("--training-leaves", type=script.positive_count, default=3 * 10**5)
    args = parser.parse_args()
    try:
        write(os.path.join(args.dir, "star.json"), "star", star(args.leaves))
        write(os.path.join(args.dir, "fanin.json"), "fanin",
              fan_in(args.leaves))
        write(os.path.join(args.dir, "tstar.json"), "training_star",
              training_star(args.training_leaves))
    except OSError as e:
        print(f"wide_graphs.py: {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    script.run(main)
