"""Which MILP solver for the staged model: CBC, HiGHS and CP-SAT on the very
models checkmate_milp (and moccasin) solve, written as MPS.

For each graph and each fraction of its NoRemat peak, `staged_milp_files
write` builds the model the way checkmate_milp does with its defaults
(warm start, stage order) and writes it with its warm start; then each
solver solves the same file from the same start with the same time limit
and thread count, the solvers of a model one after another (--jobs models at a time):
- cbc: CBC 2.10 (Debian) through `staged_milp_files cbc`, with the settings
  of algorithms/checkmate/staged_milp.cc;
- highs: the `highs` executable (highsbox), with the options
  algorithms/checkmate/highs_process.cc gives it;
- cpsat: OR-Tools' CP-SAT through bench/studies/cpsat_mps.py, when --cpsat-python
  names an interpreter that has ortools.

Writes OUT.json (every run) and OUT.md (the table), with the command and
the load average before and after. Each solver's time is the wall time of
its process, reading the file included; a process still running at 3x the
limit + 30 s is killed (status killed).

    .venv/bin/python bench/studies/solver_choice.py --build build \\
        --highs /tmp/hvenv/.../highs --cpsat-python /tmp/hvenv/bin/python \\
        --seconds 60 --out results/solver_choice/cpu
"""
import argparse
import concurrent.futures
import json
import os
import pathlib
import shlex
import subprocess
import sys
import tempfile
import time

from rematbench import script

ROOT = pathlib.Path(__file__).resolve().parents[2]

PEER = ROOT.parent / "shared" / "peer-graphs" / "checkmate2020"
DEFAULT_GRAPHS = [
    str(PEER / "random_layered_n100_w0.27_nlv0.75_ed0.2_scd0.14.json"),
    str(PEER / "random_layered_n250_w0.43_nlv0.75_ed0.2_scd0.14.json"),
    str(PEER / "random_layered_n500_w0.36_nlv0.75_ed0.2_scd0.14.json"),
    str(PEER / "random_layered_n1000_w0.31_nlv0.75_ed0.2_scd0.14.json"),
    str(PEER / "ResNet50_256_224x224_train.json"),
    "vgg:depth=19,batch=379,image=224",
]


def noremat_peak(remat, graph):
    out = subprocess.run([remat, "solve", "-a", "noremat", "-g", graph,
                          "-b", "1000000000000000", "--json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["peak_bytes"]


def graph_size(remat, graph):
    out = subprocess.run([remat, "graph", "info", graph, "--json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def highs_run(highs, prefix, seconds, threads, kill_after):
    lib = pathlib.Path(highs).resolve().parent.parent / "lib"
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = f"{lib}:{env.get('LD_LIBRARY_PATH', '')}"
    with tempfile.TemporaryDirectory() as tmp:
        options = pathlib.Path(tmp) / "options.txt"
        options.write_text("mip_rel_gap = 0\nrandom_seed = 0\n")
        solution = pathlib.Path(tmp) / "solution.sol"
        cmd = [highs, "--model_file", f"{prefix}.mps", "--options_file",
               str(options), "--solution_file", str(solution),
               "--time_limit", str(seconds), "--threads", str(threads)]
        if pathlib.Path(f"{prefix}.start.sol").exists():
            cmd += ["--read_solution_file", f"{prefix}.start.sol"]
        started = time.monotonic()
        try:
            log = subprocess.run(cmd, capture_output=True, text=True,
                                 env=env, timeout=kill_after).stdout
        except subprocess.TimeoutExpired:
            return {"solver": "highs", "status": "killed",
                    "seconds": time.monotonic() - started}
        took = time.monotonic() - started
    report = {}
    for line in log.splitlines():
        parts = line.split()
        if line.startswith("  Status ") and len(parts) >= 2:
            report["status"] = " ".join(parts[1:])
        elif line.startswith("  Primal bound ") and len(parts) >= 3:
            report["objective"] = float(parts[2])
        elif line.startswith("  Dual bound ") and len(parts) >= 3:
            report["bound"] = float(parts[2])
    out = {"solver": "highs", "seconds": took,
           "status": {"Optimal": "optimal",
                      "Time limit reached": "time_limit",
                      "Infeasible": "infeasible"}.get(
                          report.get("status"), report.get("status"))}
    if "objective" in report and report["objective"] < 1e300:
        out["objective"] = report["objective"]
        out["bound"] = report.get("bound")
        if out["bound"] is not None and out["objective"] > 0:
            out["gap"] = max(0.0, (out["objective"] - out["bound"]) /
                             out["objective"])
    return out


def timed_json(cmd, kill_after):
    started = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True,
                              timeout=kill_after)
    except subprocess.TimeoutExpired:
        return {"status": "killed", "seconds": time.monotonic() - started}
    took = time.monotonic() - started
    if proc.returncode != 0:
        return {"status": "error", "seconds": took,
                "error": proc.stderr.strip()[-300:]}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["seconds"] = took
    return out


def fmt(v, digits=0):
    if v is None:
        return "—"
    return f"{v:.{digits}f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--highs", required=True)
    parser.add_argument("--cpsat-python")
    parser.add_argument("--graphs", nargs="*", default=DEFAULT_GRAPHS)
    parser.add_argument("--fractions", type=script.positives,
                        default=[0.9, 0.8, 0.7])
    parser.add_argument("--seconds", type=script.positive, default=60)
    parser.add_argument("--threads", type=script.positive_count, default=1)
    parser.add_argument("--solvers", default="cbc,highs,cpsat")
    parser.add_argument("--max-nonzeros", type=script.positive_count, default=15_000_000,
                        help="write no model with more nonzeros than this "
                             "(memory of this machine); listed with its size")
    parser.add_argument("--cpsat-max-nonzeros", type=script.count, default=2_500_000,
                        help="run CP-SAT only on models up to this size")
    parser.add_argument("--jobs", type=script.positive_count, default=1,
                        help="models solved at the same time (each runs its "
                             "solvers one after another)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    remat = str(pathlib.Path(args.build) / "remat")
    tool = str(pathlib.Path(args.build) / "bench" / "staged_milp_files")
    solvers = [s for s in args.solvers.split(",")
               if s != "cpsat" or args.cpsat_python]
    load_before = os.getloadavg()
    work = tempfile.mkdtemp(prefix="solver_choice-")
    tasks = []
    for graph in args.graphs:
        peak = noremat_peak(remat, graph)
        for fraction in args.fractions:
            tasks.append({"graph": graph, "fraction": fraction,
                          "budget_bytes": int(peak * fraction),
                          "noremat_peak": peak})

    # A solver that overruns its limit this much is stopped (CBC does not
    # look at the clock in its root node).
    kill_after = 3 * args.seconds + 30

    def run(index):
        entry = tasks[index]
        graph, budget = entry["graph"], entry["budget_bytes"]
        prefix = os.path.join(work, f"m{index}")
        size = subprocess.run([tool, "count", graph], capture_output=True,
                              text=True, check=True)
        entry["model_size"] = json.loads(size.stdout)
        if entry["model_size"]["nonzeros"] > args.max_nonzeros:
            entry["skipped"] = (
                f"model has {entry['model_size']['nonzeros']} nonzeros > "
                f"--max-nonzeros {args.max_nonzeros}")
            print(json.dumps(entry), flush=True)
            return
        started = time.monotonic()
        subprocess.run([tool, "write", graph, str(budget), prefix],
                       check=True)
        entry["write_seconds"] = time.monotonic() - started
        entry["model"] = json.loads(pathlib.Path(f"{prefix}.json").read_text())
        entry["mps_bytes"] = os.path.getsize(f"{prefix}.mps")
        entry["results"] = {}
        for solver in solvers:
            if (solver == "cpsat" and entry["model_size"]["nonzeros"] >
                    args.cpsat_max_nonzeros):
                continue
            load = os.getloadavg()[0]
            if solver == "cbc":
                res = timed_json([tool, "cbc", prefix, str(args.seconds),
                                  str(args.threads)], kill_after)
            elif solver == "highs":
                res = highs_run(args.highs, prefix, args.seconds,
                                args.threads, kill_after)
            else:
                start = f"{prefix}.start.sol"
                res = timed_json([args.cpsat_python,
                                  str(ROOT / "bench" / "studies" / "cpsat_mps.py"),
                                  f"{prefix}.mps",
                                  start if os.path.exists(start) else "-",
                                  str(args.seconds), str(args.threads)],
                                 kill_after)
            res["load_before"] = load
            entry["results"][solver] = res
        for path in pathlib.Path(work).glob(f"m{index}.*"):
            path.unlink()
        print(json.dumps(entry), flush=True)

    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        list(pool.map(run, range(len(tasks))))
    runs = tasks
    load_after = os.getloadavg()
    command = " ".join(shlex.quote(a) for a in [
        ".venv/bin/python", "bench/studies/solver_choice.py"] + sys.argv[1:])
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short",
                             "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    document = {"command": command, "commit": commit, "seconds": args.seconds,
                "threads": args.threads, "load_average_before": load_before,
                "load_average_after": load_after, "cpus": os.cpu_count(),
                "runs": runs}
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(document, indent=1) + "\n")

    lines = [
        "# MILP solvers on the staged model",
        "",
        f"Command: `{command}` (commit {commit})",
        "",
        f"Each solver solved the same MPS file from the same warm start, "
        f"{args.seconds:g} s limit, {args.threads} thread(s), the solvers of "
        f"a model one after another, {args.jobs} model(s) at a time; time is the wall time of its process (reading the file "
        f"included). Load average before {load_before[0]:.2f}, after "
        f"{load_after[0]:.2f} ({os.cpu_count()} CPUs, shared). Objective "
        f"and bound are in the model's units (cost / cost_scale); gap = "
        f"(objective - bound) / objective.",
        "",
        "| graph | budget | columns | nonzeros | start | solver | status | "
        "objective | bound | gap | time (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for e in runs:
        name = pathlib.Path(e["graph"]).name.split("_w0")[0].replace(
            ".json", "")
        head = f"| {name} | {e['fraction']:.0%} |"
        if "skipped" in e:
            size = e.get("model_size", {})
            lines.append(f"{head} {size.get('cols', '—')} | "
                         f"{size.get('nonzeros', '—')} | — | — | not run: "
                         f"{e['skipped']} | | | | |")
            continue
        model = e["model"]
        for solver, r in e["results"].items():
            gap = r.get("gap")
            lines.append(
                f"{head} {model['columns']} | {model['nonzeros']} | "
                f"{fmt(model.get('start_objective'))} | {solver} | "
                f"{r.get('status')} | {fmt(r.get('objective'))} | "
                f"{fmt(r.get('bound'), 1)} | "
                f"{'—' if gap is None else f'{gap:.2%}'} | "
                f"{fmt(r.get('seconds'), 1)} |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    script.run(main)
