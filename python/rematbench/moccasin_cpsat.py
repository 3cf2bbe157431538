"""Moccasin's retention-interval model on OR-Tools' CP-SAT: the child
process of `moccasin solver=cpsat` (algorithms/checkmate/moccasin_cpsat.cc
runs it with the build's Python, which has `ortools` from
python/requirements.txt).

    python moccasin_cpsat.py PROBLEM.json ANSWER.json

It imports nothing of rematbench, so that it runs from its file. The
problem is the one moccasin_cp.cc gives Gecode, in stage indices: the
positions (t, k), k <= t, stage by stage and node by node; each value i
has `computes` intervals of positions, the first starting at (i, i), the
others optional, starting at a recompute (t, i) after the previous one
ended; a compute needs each input held by an interval that started before
it and has not ended; one cumulative constraint holds the intervals (and
each compute's workspace) within `capacity`; the objective is the cost of
the present intervals. CP-SAT's integers are 64 bits: bytes and costs are
exact.

PROBLEM.json: {"computes", "capacity", "seconds", "workers", "nodes": [{
"mem", "workspace", "cost", "inputs", "consumers"}], "hint": null or, per
node, [[start, end], ...] (positions)}. ANSWER.json: {"status" (CP-SAT's:
OPTIMAL, FEASIBLE, INFEASIBLE, UNKNOWN, MODEL_INVALID), "objective" (null
without a solution), "bound", "intervals" (per node, the present
intervals' [start, end]), "seconds"}. Written whole (a temporary file
renamed) only when the solve ends; exit status 2 on a bad problem file.
"""
import json
import os
import sys
import time

STARTED = time.monotonic()  # the limit counts from the process's start


def position(t, k):
    return t * (t + 1) // 2 + k


def build(problem):
    from ortools.sat.python import cp_model
    nodes, c = problem["nodes"], problem["computes"]
    n = len(nodes)
    m = cp_model.CpModel()
    present, start, end = {}, {}, {}
    intervals, demands = [], []
    last = position(n - 1, n - 1)
    for i, node in enumerate(nodes):
        starts = [position(t, i) for t in range(i, n)]
        ends = set(starts)
        for k in node["consumers"]:
            ends.update(position(t, k) for t in range(k, n))
        for j in range(c):
            p = m.new_constant(1) if j == 0 else m.new_bool_var(f"p{i}.{j}")
            s = m.new_int_var_from_domain(cp_model.Domain.from_values(starts),
                                          f"s{i}.{j}")
            e = m.new_int_var_from_domain(
                cp_model.Domain.from_values(sorted(ends)), f"e{i}.{j}")
            size = m.new_int_var(1, last + 1, f"z{i}.{j}")
            m.add(size == e + 1 - s)
            if j == 0:
                m.add(s == position(i, i))
                interval = m.new_interval_var(s, size, e + 1, f"v{i}.{j}")
            else:
                m.add_implication(p, present[i, j - 1])
                m.add(s > end[i, j - 1]).only_enforce_if(p)
                # An absent interval is pinned, so that nothing branches on
                # it.
                m.add(s == starts[-1]).only_enforce_if(~p)
                m.add(e == starts[-1]).only_enforce_if(~p)
                interval = m.new_optional_interval_var(s, size, e + 1, p,
                                                       f"v{i}.{j}")
            intervals.append(interval)
            demands.append(node["mem"])
            if node["workspace"]:
                intervals.append(m.new_optional_fixed_size_interval_var(
                    s, 1, p, f"w{i}.{j}"))
                demands.append(node["workspace"])
            present[i, j], start[i, j], end[i, j] = p, s, e
    for v, node in enumerate(nodes):
        for j in range(c):
            for u in node["inputs"]:
                covers = []
                for k in range(c):
                    b = m.new_bool_var(f"c{v}.{j}.{u}.{k}")
                    m.add_implication(b, present[u, k])
                    m.add(start[u, k] < start[v, j]).only_enforce_if(b)
                    m.add(end[u, k] >= start[v, j]).only_enforce_if(b)
                    covers.append(b)
                m.add_bool_or(covers).only_enforce_if(present[v, j])
    m.add_cumulative(intervals, demands, problem["capacity"])
    m.minimize(sum(node["cost"] * present[i, j]
                   for i, node in enumerate(nodes) for j in range(c)))
    for i, spans in enumerate(problem.get("hint") or []):
        for j in range(c):
            if j < len(spans):
                if j:
                    m.add_hint(present[i, j], 1)
                m.add_hint(start[i, j], spans[j][0])
                m.add_hint(end[i, j], spans[j][1])
            elif j:
                m.add_hint(present[i, j], 0)
    return m, present, start, end


def solve(problem):
    from ortools.sat.python import cp_model
    model, present, start, end = build(problem)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(
        0.0, problem["seconds"] - (time.monotonic() - STARTED))
    solver.parameters.num_workers = problem["workers"]
    status = solver.solve(model)
    found = status in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    intervals = None
    if found:
        intervals = [[[solver.value(start[i, j]), solver.value(end[i, j])]
                      for j in range(problem["computes"])
                      if solver.boolean_value(present[i, j])]
                     for i in range(len(problem["nodes"]))]
    return {"status": solver.status_name(status),
            "objective": int(solver.objective_value) if found else None,
            "bound": solver.best_objective_bound,
            "intervals": intervals, "seconds": solver.wall_time}


def main(argv):
    if len(argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        with open(argv[1]) as f:
            problem = json.load(f)
    except (OSError, ValueError) as e:
        print(f"{argv[1]}: {e}", file=sys.stderr)
        return 2
    answer = solve(problem)
    tmp = f"{argv[2]}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(answer, f)
    os.replace(tmp, argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
