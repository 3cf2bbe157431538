#!/usr/bin/env python3
"""What the Python module adds to a solve's time over the CLI.

  .venv/bin/python bench/studies/python_api_bench.py [--remat build/remat]
      [--corpus graphs/corpus/default.json] [--repeats 5] [--timeout 10]
      [--out results/python_api]

For every graph of the corpus and every heuristic (the registered
algorithms that are not exact and run in-process; exact methods spend
their time limit and the CBC MILP runs in a child process either way), at
the middle of the graph's budget range, alternately:
  - cli: `remat solve --json -a A -g G -b B`, wall time of the process
    (start, graph load, solve, simulation, JSON output);
  - api: rematbench.solve(G, A, budget=B) with G the same spec, wall time of
    the call (graph load, solve, simulation, the answer as a dict);
  - api_loaded: rematbench.solve on an already loaded Graph;
and each one's reported solve_seconds (the algorithm's own run). Medians of
`--repeats` runs. A pair whose first CLI solve ends at the time limit
(status timeout) is left out: both sides then take the limit. Each answer
is compared with the CLI's (solve_seconds aside); an algorithm that adapts
to its deadline (dp_exact near the limit) may answer differently when a
run is slower, and such pairs are listed. The overhead of the API is
api / cli - 1 (negative: the API is faster); the goal is under 5%.
Writes OUT/overhead.json and OUT/overhead.md.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

from rematbench import files, script

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--remat", default=os.path.join(ROOT, "build", "remat"))
    p.add_argument("--corpus",
                   default=os.path.join(ROOT, "graphs/corpus/default.json"))
    p.add_argument("--repeats", type=script.positive_count, default=5)
    p.add_argument("--timeout", type=script.positive, default=10)
    p.add_argument("--out", default=os.path.join(ROOT, "results/python_api"))
    return p.parse_args(argv)


def cli_solve(remat, algorithm, spec, budget, timeout):
    t0 = time.perf_counter()
    r = subprocess.run([remat, "solve", "--json", "-a", algorithm, "-g", spec,
                        "-b", str(budget), "--timeout", str(timeout)],
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode not in (0, 1):
        raise SystemExit(f"remat solve -a {algorithm} -g {spec}: "
                         f"{r.stderr.strip()}")
    return wall, json.loads(r.stdout)


def api_solve(rb, algorithm, graph, budget, timeout):
    t0 = time.perf_counter()
    s = rb.solve(graph, algorithm, budget=budget, timeout=timeout)
    doc = s.json
    return time.perf_counter() - t0, doc


def main(argv):
    args = parse_args(argv)
    import rematbench as rb
    specs = rb.read_corpus(args.corpus)
    algorithms = [a.name for a in rb.algorithms()
                  if not a.exact and not a.isolate]
    rows, timeouts = [], []  # timeouts: pairs left out
    for spec in specs:
        graph = rb.load_graph(spec)
        budget = rb.budget_grid(graph.lower_bound_bytes,
                                graph.noremat_peak_bytes, 3)[1]
        for algorithm in algorithms:
            samples = {k: [] for k in ("cli", "api", "api_loaded",
                                       "cli_solve", "api_solve")}
            equal = []
            for _ in range(args.repeats):
                wall, doc = cli_solve(args.remat, algorithm, spec, budget,
                                      args.timeout)
                if doc["status"] == "timeout":
                    break
                samples["cli"].append(wall)
                samples["cli_solve"].append(doc["solve_seconds"])
                wall, mine = api_solve(rb, algorithm, spec, budget,
                                       args.timeout)
                samples["api"].append(wall)
                samples["api_solve"].append(mine["solve_seconds"])
                wall, _ = api_solve(rb, algorithm, graph, budget,
                                    args.timeout)
                samples["api_loaded"].append(wall)
                doc.pop("solve_seconds")
                mine.pop("solve_seconds")
                equal.append(doc == mine)
            if doc["status"] == "timeout":
                timeouts.append({"graph": graph.name, "algorithm": algorithm})
                print(f"{graph.name:<40} {algorithm:<16} timeout: left out",
                      file=sys.stderr)
                continue
            row = {"graph": graph.name, "spec": spec, "nodes": graph.num_nodes,
                   "algorithm": algorithm, "budget_bytes": budget,
                   "status": doc["status"], "answers_equal": all(equal)}
            row.update({k + "_seconds": statistics.median(v)
                        for k, v in samples.items()})
            row["overhead"] = row["api_seconds"] / row["cli_seconds"] - 1
            rows.append(row)
            print(f"{graph.name:<40} {algorithm:<16} cli "
                  f"{row['cli_seconds'] * 1e3:8.2f} ms  api "
                  f"{row['api_seconds'] * 1e3:8.2f} ms  ({row['overhead']:+.1%})",
                  file=sys.stderr)
    total = {k: sum(r[k] for r in rows) for k in
             ("cli_seconds", "api_seconds", "api_loaded_seconds",
              "cli_solve_seconds", "api_solve_seconds")}
    summary = {
        "pairs": len(rows),
        "total_overhead": total["api_seconds"] / total["cli_seconds"] - 1,
        "max_overhead": max(r["overhead"] for r in rows),
        "answers_differ": [f"{r['graph']} {r['algorithm']}" for r in rows
                           if not r["answers_equal"]],
        "median_overhead": statistics.median(r["overhead"] for r in rows),
        "solve_seconds_ratio": total["api_solve_seconds"] /
        total["cli_solve_seconds"],
        # Time outside the algorithm's run: the CLI's process, graph load,
        # simulation and output against the API's load, simulation and
        # conversion, free of the algorithms' own run-to-run noise.
        "cli_outside_solve_seconds": total["cli_seconds"] -
        total["cli_solve_seconds"],
        "api_outside_solve_seconds": total["api_seconds"] -
        total["api_solve_seconds"],
        **{"total_" + k: v for k, v in total.items()},
    }
    doc = {"command": " ".join(["bench/studies/python_api_bench.py"] + argv),
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "host": platform.node(), "cpu_count": os.cpu_count(),
           "load_average": os.getloadavg(), "repeats": args.repeats,
           "summary": summary, "rows": rows, "timeouts_left_out": timeouts}
    files.write_json(os.path.join(args.out, "overhead.json"), doc, indent=1)
    left_out = ", ".join(f"{t['graph']} {t['algorithm']}" for t in timeouts)
    md = ["# Python API vs CLI: time per solve\n",
          f"`{doc['command']}` on {doc['host']} ({doc['cpu_count']} cores, "
          f"load average {', '.join(f'{x:.1f}' for x in doc['load_average'])}"
          f"), medians of {args.repeats} runs, time limit {args.timeout} s; "
          "answers that differ from the CLI's (solve_seconds aside): "
          f"{', '.join(summary['answers_differ']) or 'none'}.\n",
          f"- {summary['pairs']} (graph, algorithm) pairs at the middle "
          f"budget of each graph of {os.path.relpath(args.corpus, ROOT)}; "
          "left out (time limit "
          f"reached): {left_out or 'none'}",
          f"- all solves: CLI {total['cli_seconds']:.3f} s, API "
          f"{total['api_seconds']:.3f} s from the spec "
          f"({summary['total_overhead']:+.1%}), "
          f"{total['api_loaded_seconds']:.3f} s on loaded graphs",
          f"- per pair: median {summary['median_overhead']:+.1%}, worst "
          f"{summary['max_overhead']:+.1%}",
          f"- algorithm time alone (solve_seconds): API / CLI = "
          f"{summary['solve_seconds_ratio']:.3f}",
          "- time outside the algorithm, all solves: CLI "
          f"{summary['cli_outside_solve_seconds']:.3f} s, API "
          f"{summary['api_outside_solve_seconds']:.3f} s\n",
          "| graph | algorithm | CLI ms | API ms | API on loaded graph ms | "
          "solve ms (CLI / API) | API vs CLI |",
          "|---|---|---|---|---|---|---|"]
    for r in rows:
        md.append(f"| {r['graph']} | {r['algorithm']} | "
                  f"{r['cli_seconds'] * 1e3:.2f} | {r['api_seconds'] * 1e3:.2f} "
                  f"| {r['api_loaded_seconds'] * 1e3:.2f} | "
                  f"{r['cli_solve_seconds'] * 1e3:.2f} / "
                  f"{r['api_solve_seconds'] * 1e3:.2f} | {r['overhead']:+.1%} |")
    files.write_text(os.path.join(args.out, "overhead.md"),
                     "\n".join(md) + "\n")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    script.run(main, sys.argv[1:])
