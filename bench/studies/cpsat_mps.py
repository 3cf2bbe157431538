"""Solves an MPS file with OR-Tools' CP-SAT, for bench/studies/solver_choice.py.

    .venv/bin/python bench/studies/cpsat_mps.py MODEL.mps START.sol|- SECONDS THREADS

(`ortools` is pinned in python/requirements.txt: moccasin's CP-SAT child
uses it.) START.sol is a HiGHS solution file (columns x<j>), given to
CP-SAT as hints; it prints one JSON line: status, objective, bound, gap,
seconds. Bad arguments exit 2 with one line.
"""
import argparse
import json
import os
import sys
import time

from ortools.linear_solver.python import model_builder

from rematbench import script


def read_start(path):
    """Column values of a HiGHS solution file, by column name."""
    values = {}
    with open(path) as f:
        lines = f.read().splitlines()
    try:
        at = lines.index("# Primal solution values")
        columns = next(i for i in range(at, len(lines))
                       if lines[i].startswith("# Columns "))
        count = int(lines[columns].split()[2])
        for line in lines[columns + 1:columns + 1 + count]:
            name, value = line.split()
            values[name] = float(value)
    except (ValueError, IndexError, StopIteration):
        raise SystemExit(f"cpsat_mps.py: {script.shown(path)}: not a HiGHS "
                         "solution file with primal column values") from None
    return values


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mps", help="the model, an MPS file")
    ap.add_argument("start", help="a HiGHS solution file to hint, or -")
    ap.add_argument("seconds", type=script.positive, help="time limit")
    ap.add_argument("threads", type=script.positive_count,
                    help="CP-SAT's workers")
    args = ap.parse_args(argv)
    for path in (args.mps, args.start):
        if path != "-" and not os.path.isfile(path):
            ap.error(f"{script.shown(path)}: not a readable file")
    mps, start, seconds, threads = (args.mps, args.start, args.seconds,
                                    args.threads)
    model = model_builder.Model()
    started = time.monotonic()
    if not model.import_from_mps_file(mps):
        print(json.dumps({"solver": "cpsat", "status": "unreadable"}))
        return 2
    if start != "-":
        hints = read_start(start)
        for i in range(model.num_variables):
            var = model.var_from_index(i)
            if var.name in hints:
                model.add_hint(var, hints[var.name])
    solver = model_builder.Solver("sat")
    solver.set_time_limit_in_seconds(seconds)
    solver.set_solver_specific_parameters(f"num_workers:{threads}")
    status = solver.solve(model)
    took = time.monotonic() - started
    out = {"solver": "cpsat", "seconds": took, "status": status.name.lower()}
    if status in (model_builder.SolveStatus.OPTIMAL,
                  model_builder.SolveStatus.FEASIBLE):
        objective = solver.objective_value
        bound = solver.best_objective_bound
        out.update(objective=objective, bound=bound,
                   gap=max(0.0, (objective - bound) / objective)
                   if objective > 0 else 0.0)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    script.run(main, sys.argv[1:])
