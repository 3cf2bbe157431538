"""Solves an MPS file with OR-Tools' CP-SAT, for bench/studies/solver_choice.py.

Run with an interpreter that has `ortools` (it is not in the project's
environment: rematbench does not use CP-SAT, see docs/algorithms.md):

    python bench/studies/cpsat_mps.py MODEL.mps START.sol|- SECONDS THREADS

START.sol is a HiGHS solution file (columns x<j>), given to CP-SAT as
hints; it prints one JSON line: status, objective, bound, gap, seconds.
"""
import json
import sys
import time

from ortools.linear_solver.python import model_builder


def read_start(path):
    """Column values of a HiGHS solution file, by column name."""
    values = {}
    with open(path) as f:
        lines = f.read().splitlines()
    at = lines.index("# Primal solution values")
    columns = next(i for i in range(at, len(lines))
                   if lines[i].startswith("# Columns "))
    count = int(lines[columns].split()[2])
    for line in lines[columns + 1:columns + 1 + count]:
        name, value = line.split()
        values[name] = float(value)
    return values


def main():
    mps, start, seconds, threads = sys.argv[1:5]
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
    solver.set_time_limit_in_seconds(float(seconds))
    solver.set_solver_specific_parameters(f"num_workers:{int(threads)}")
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
    sys.exit(main())
