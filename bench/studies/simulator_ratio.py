#!/usr/bin/env python3
"""The critical path's cost to the simulator, as ratios within one run.

  bench/studies/simulator_ratio.py ROUNDS BINARY [BINARY ...]

Runs each simulator_bench binary's BM_SimulateCheckpointLastChain (10
repetitions a call), the binaries alternating, ROUNDS times, and prints
per binary and chain length the minimum and the median CPU time without
and with the critical path, and their ratios. On a shared machine the
minimum is the figure least moved by the other work; compare only
binaries of one run.
"""
import json
import statistics
import subprocess
import sys

from rematbench import script

NAME = "BM_SimulateCheckpointLastChain/n:{}/critical_path:{}"


def main(argv):
    if len(argv) < 3 or not argv[1].isdigit() or int(argv[1]) < 1:
        sys.exit(print(__doc__, file=sys.stderr) or 2)
    rounds, binaries = int(argv[1]), argv[2:]
    times = {}
    for _ in range(rounds):
        for binary in binaries:
            out = subprocess.run(
                [binary, "--benchmark_filter=SimulateCheckpoint",
                 "--benchmark_repetitions=10", "--benchmark_format=json"],
                capture_output=True, text=True, check=True).stdout
            for bm in json.loads(out)["benchmarks"]:
                if bm.get("run_type") == "iteration":
                    times.setdefault((binary, bm["run_name"]), []).append(
                        bm["cpu_time"])
    for binary in binaries:
        print(binary)
        for n in (1000, 2000):
            without = times[(binary, NAME.format(n, 0))]
            with_path = times[(binary, NAME.format(n, 1))]
            lo_w, lo_p = min(without), min(with_path)
            med_w = statistics.median(without)
            med_p = statistics.median(with_path)
            print(f"  n={n}: without min {lo_w:.3f} median {med_w:.3f} ms, "
                  f"with min {lo_p:.3f} median {med_p:.3f} ms; ratio of "
                  f"minima {lo_p / lo_w:.3f}, of medians {med_p / med_w:.3f} "
                  f"({len(without)} repetitions)")


if __name__ == "__main__":
    script.run(main, sys.argv)
