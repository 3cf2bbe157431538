"""Two lower bounds on moccasin's class (C = 2), from the CP-SAT cost model
that moccasin writes (algorithms/checkmate/moccasin_cpsat.cc,
BuildIntervalModel, as of commit c3917e2), for README.md beside this file.

    python relaxations.py MODEL.txt BUDGET

MODEL.txt: the model's text, captured by pointing REMAT_CPSAT_PYTHON at a
wrapper that copies its second argument (README.md). The script reads the
model's variable layout (per value: stage, end and size of the first
interval; present, stage, end and size of the second), so it fits only that
layout and C = 2; it asserts what it relies on.

It prints:
- cover: values held across a stage whose compute-once memory is over the
  budget must be absent there, and each stretch of absence ends in a
  recompute at the value's cost; the cheapest such cover, solved exactly by
  CP-SAT;
- stage LP: the class with memory checked only at each value's first
  compute (presence P[u,t] and recompute R[u,t] per value and stage, a
  recompute's inputs held or recomputed in the same stage, at most C - 1
  recomputes per value), its LP relaxation on GLOP.
Both relax the class in the model's stage order, so both bound its optimum.
"""
import sys
import time

from google.protobuf import text_format
from ortools.linear_solver import pywraplp
from ortools.sat import cp_model_pb2
from ortools.sat.python import cp_model

C = 2
VARS_PER_VALUE = 7


def read(path):
    m = cp_model_pb2.CpModelProto()
    text_format.Parse(open(path).read(), m)
    n = m.constraints[1].interval.start.coeffs[0]  # the stage width
    stage_var = {}
    for i in range(n):
        stage_var[1 + VARS_PER_VALUE * i] = i
        stage_var[5 + VARS_PER_VALUE * i] = i
    inputs = [set() for _ in range(n)]
    for con in m.constraints:
        lin = con.linear
        if con.HasField('linear') and list(lin.coeffs) == [n, -n]:
            inputs[stage_var[lin.vars[0]]].add(stage_var[lin.vars[1]])
    cum = [c for c in m.constraints if c.HasField('cumulative')]
    assert len(cum) == 1
    mem, ws = [0] * n, [0] * n
    for k, ci in enumerate(cum[0].cumulative.intervals):
        iv = m.constraints[ci].interval
        i = stage_var[iv.start.vars[0]]
        (mem if iv.size.vars else ws)[i] = cum[0].cumulative.demands[k].offset
    assert len(m.objective.coeffs) == C * n, "not a cost model with C = 2"
    cost = [m.objective.coeffs[C * i] for i in range(n)]
    return n, inputs, mem, ws, cost


def main(path, budget):
    n, inputs, mem, ws, cost = read(path)
    consumers = [[] for _ in range(n)]
    for v in range(n):
        for u in inputs[v]:
            consumers[u].append(v)
    last = [max([i] + consumers[i]) for i in range(n)]
    base = sum(cost)
    once = [sum(mem[i] for i in range(t + 1) if last[i] >= t) + ws[t]
            for t in range(n)]
    print(f"{n} values, base cost {base}, compute-once peak {max(once)}, "
          f"budget {budget}, {sum(x > budget for x in once)} stages over it")

    # cover
    md = cp_model.CpModel()
    absent, extra = {}, []
    for i in range(n):
        uses = set([i] + consumers[i])
        for t in range(i + 1, last[i]):
            if t not in uses:
                absent[i, t] = md.NewBoolVar('')
    for i in range(n):
        starts = []
        for t in (t for (j, t) in absent if j == i):
            s = md.NewBoolVar('')
            md.Add(s >= absent[i, t] - absent.get((i, t - 1), 0))
            starts.append(s)
            extra.append(cost[i] * s)
        if starts:
            md.Add(sum(starts) <= C - 1)
    for t in range(n):
        if once[t] > budget:
            md.Add(sum(mem[i] * absent[i, t] for i in range(n)
                       if (i, t) in absent) >= once[t] - budget)
    md.Minimize(sum(extra))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 2
    started = time.time()
    status = solver.Solve(md)
    print(f"cover: {solver.StatusName(status)}, bound "
          f"{(base + solver.BestObjectiveBound()) / base:.4f}x the base cost "
          f"in {time.time() - started:.1f} s")

    # stage LP
    lp = pywraplp.Solver.CreateSolver('GLOP')
    horizon = [max([last[u]] + [last[v] for v in consumers[u]])
               for u in range(n)]
    P, R = {}, {}
    for u in range(n):
        for t in range(u, horizon[u] + 1):
            P[u, t] = lp.NumVar(0, 1, '')
        lp.Add(P[u, u] == 1)
        for t in range(u + 1, last[u] + 1):
            R[u, t] = lp.NumVar(0, 1, '')
        for t in range(u + 1, horizon[u] + 1):
            lp.Add(P[u, t] <= P[u, t - 1] + R.get((u, t), 0))
        if last[u] > u:
            lp.Add(sum(R[u, t] for t in range(u + 1, last[u] + 1)) <= C - 1)
        for v in consumers[u]:
            lp.Add(P[u, v] == 1)
    for v in range(n):
        for t in range(v + 1, last[v] + 1):
            for u in inputs[v]:
                lp.Add(R[v, t] <= P[u, t - 1] + R.get((u, t), 0))
    for t in range(n):
        lp.Add(sum(mem[u] * P[u, t] for u in range(t + 1) if (u, t) in P)
               <= budget - ws[t])
    lp.Minimize(sum(cost[u] * R[u, t] for (u, t) in R))
    started = time.time()
    status = lp.Solve()
    assert status == pywraplp.Solver.OPTIMAL, status
    print(f"stage LP: bound {(base + lp.Objective().Value()) / base:.4f}x "
          f"the base cost in {time.time() - started:.1f} s")


if __name__ == '__main__':
    if len(sys.argv) != 3:
        print(__doc__.split('\n\n')[1], file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1], int(sys.argv[2]))
