"""Solves a CP-SAT model: the child process of `moccasin solver=cpsat`
(algorithms/checkmate/moccasin_cpsat.cc writes Moccasin's retention-interval
model and runs this with the build's Python, which has `ortools` from
python/requirements.txt).

    python moccasin_cpsat.py MODEL.txt ANSWER.json SECONDS WORKERS

It imports nothing of rematbench, so that it runs from its file, and only
CP-SAT's compiled extension of ortools: the model comes whole, as the text
of CP-SAT's protocol buffer (operations_research.sat.CpModelProto), so
nothing is built here and the modelling layer (which imports pandas, 0.3 s
a start) is not needed.

MODEL.txt: the CpModelProto in text format. SECONDS: CP-SAT's limit, counted
from this process's start; WORKERS: its threads. ANSWER.json: {"status"
(CP-SAT's: OPTIMAL, FEASIBLE, INFEASIBLE, UNKNOWN, MODEL_INVALID),
"objective" (null without a solution), "bound", "solution" (every
variable's value in the model's order, null without a solution),
"seconds"}. Written whole (a temporary file renamed) only when the solve
ends; exit status 2 on a bad model file or arguments.
"""
import json
import os
import sys
import time

STARTED = time.monotonic()  # the limit counts from the process's start


def solve(text, seconds, workers):
    from ortools.sat.python import cp_model_helper as cp

    model = cp.CpModelProto()
    if not model.parse_text_format(text):
        return None
    parameters = cp.SatParameters()
    parameters.max_time_in_seconds = max(
        0.0, seconds - (time.monotonic() - STARTED))
    parameters.num_workers = workers
    solver = cp.SolveWrapper()
    solver.set_parameters(parameters)
    response = solver.solve(model)
    status = response.status
    found = status in (cp.CpSolverStatus.OPTIMAL, cp.CpSolverStatus.FEASIBLE)
    return {"status": status.name,
            "objective": int(response.objective_value) if found else None,
            "bound": response.best_objective_bound,
            "solution": list(response.solution) if found else None,
            "seconds": response.wall_time}


def main(argv):
    if len(argv) != 5:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        with open(argv[1]) as f:
            text = f.read()
        seconds, workers = float(argv[3]), int(argv[4])
    except (OSError, ValueError) as e:
        print(f"{argv[1]}: {e}", file=sys.stderr)
        return 2
    answer = solve(text, seconds, workers)
    if answer is None:
        print(f"{argv[1]}: not a CP-SAT model in text format", file=sys.stderr)
        return 2
    tmp = f"{argv[2]}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(answer, f)
    os.replace(tmp, argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
