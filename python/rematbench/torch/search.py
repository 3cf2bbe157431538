"""The search behind plan(): every chosen algorithm solves the traced
step's graph at the budget, each schedule is judged as the program it
becomes (rematbench.torch.memory, with the anchoring that fits:
rematbench.torch.anchoring), a schedule whose program does not fit is
solved again below the budget by what the program holds beside it, and
the feasible row of least predicted overhead wins. When nothing fits,
NoFit names the smallest budget that does.
"""

import concurrent.futures
import dataclasses
import math
import os
import threading
import time

import rematbench
from rematbench.torch import anchoring
from rematbench.torch.memory import ProgramMemory
from rematbench.torch.partition import Partition


class NoFit(rematbench.Error):
    """No algorithm fits the budget. `budget_bytes`, the NoRemat peak
    `noremat_peak_bytes`, `smallest_budget_bytes` (the smallest budget at
    which a plan fits, to 1% or as close as plan_seconds allows),
    `closest_algorithm` (the one that fits there), `reach_bound_bytes` (no
    schedule that recomputes rather than offloads fits below it) and
    `lower_bound_bytes` (the graph's memory lower bound)."""

    def __init__(self, name, budget_bytes, noremat_peak_bytes,
                 smallest_budget_bytes, closest_algorithm, reach_bound_bytes,
                 lower_bound_bytes):
        super().__init__(
            f"{name}: no algorithm fits the budget of {budget_bytes} bytes "
            f"({budget_bytes / noremat_peak_bytes:.0%} of the NoRemat "
            f"activation peak {noremat_peak_bytes} bytes); the smallest "
            f"budget that fits is {smallest_budget_bytes} bytes "
            f"({closest_algorithm}; no schedule fits below "
            f"{reach_bound_bytes} bytes, the reach bound; the memory lower "
            f"bound is {lower_bound_bytes})")
        self.budget_bytes = budget_bytes
        self.noremat_peak_bytes = noremat_peak_bytes
        self.smallest_budget_bytes = smallest_budget_bytes
        self.closest_algorithm = closest_algorithm
        self.reach_bound_bytes = reach_bound_bytes
        self.lower_bound_bytes = lower_bound_bytes


# A schedule this close to the least overhead any schedule has (1: it
# recomputes nothing) is not worth waiting for a slower solver to beat:
# 0.1% is within the noise of measured op times.
SETTLED_OVERHEAD = 1.001


@dataclasses.dataclass
class SearchOptions:
    """What plan() searches with, checked once: `algorithms` ("all": every
    registered algorithm, exact ones only on graphs of at most
    `exact_max_nodes` nodes; or a list of names or 'name:k=v,...' specs),
    each solve's `timeout` in seconds, `threads` solving at once (None:
    one per CPU), and `plan_seconds`, the search's own time limit (a
    thirtieth more where solves cut at a first try of a thirtieth run
    again): the algorithms start fastest kind first (heuristics, then
    solvers that run in child processes, then exact ones), each with the
    time left, and the plan answers with the best found when it runs
    out."""
    algorithms: object = "all"
    timeout: float = 10.0
    exact_max_nodes: int = 100
    threads: int = None
    plan_seconds: float = 3.0

    def __post_init__(self):
        for name in ("timeout", "plan_seconds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(
                    value, (int, float)) or not 0 < value < math.inf:
                raise rematbench.Error(f"plan: {name} must be a positive "
                                       f"number of seconds, not {value!r}")
        if self.algorithms != "all":
            if isinstance(self.algorithms, str):
                self.algorithms = [self.algorithms]
            self.algorithms = list(self.algorithms)
            if not self.algorithms:
                raise rematbench.Error("plan: algorithms: give \"all\" or "
                                       "at least one name")
            for spec in self.algorithms:
                rematbench.algorithm(spec.split(":")[0])  # unknown: Error
        for name, least in (("threads", 1), ("exact_max_nodes", 0)):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not
                                      isinstance(value, int) or
                                      value < least):
                raise rematbench.Error(f"plan: {name} must be an integer >= "
                                       f"{least}, not {value!r}")
        self.threads = self.threads or os.cpu_count() or 1


def budget_bytes(budget, noremat_peak):
    """Bytes from an int (bytes), a str ('512MiB') or a float (a fraction
    of the NoRemat activation peak, rounded up)."""
    if isinstance(budget, bool):
        raise rematbench.Error("budget: give bytes (int or '512MiB') or a "
                               "fraction of the NoRemat peak (float)")
    if isinstance(budget, int):
        if budget < 0:
            raise rematbench.Error("budget: must be >= 0 bytes")
        return budget
    if isinstance(budget, float):
        if not budget > 0 or math.isinf(budget):
            raise rematbench.Error(f"budget: fraction {budget} of the NoRemat "
                                   "peak must be > 0")
        return math.ceil(budget * noremat_peak)
    if isinstance(budget, str):
        return rematbench.parse_bytes(budget)
    raise rematbench.Error(f"budget: {budget!r} is neither bytes nor a "
                           "fraction")


def _row(spec, solution, held=0, budget=None, overhead=None):
    if solution.json.get("transfer_bytes"):
        # Programs run computes and frees; offloads (vdnn, swap_remat
        # under a tight budget) are simulated only.
        return {"algorithm": spec, "status": "skipped", "peak_bytes": None,
                "overhead": None, "solve_seconds": solution.solve_seconds,
                "message": "moves values to host memory, which programs "
                           "do not run"}
    status, message = solution.status, solution.message
    if status == "feasible" and solution.peak_bytes + held > budget:
        status = "infeasible"
        message = (f"fits the budget only without the {held} bytes the "
                   "program holds beside the schedule (generator states, "
                   "the loss)")
    return {"algorithm": spec, "status": status,
            "peak_bytes": solution.peak_bytes + held if solution.valid
            else solution.peak_bytes,
            "overhead": solution.overhead if overhead is None else overhead,
            "solve_seconds": solution.solve_seconds,
            "message": message}


def _dearer(spec, solution, best):
    """The row of a schedule that at() did not judge as a program: its
    simulated overhead is already above `best`, the least predicted
    overhead of a program that fits, and a program only adds to it."""
    return {"algorithm": spec, "status": "dearer",
            "peak_bytes": solution.peak_bytes,
            "overhead": solution.overhead,
            "solve_seconds": solution.solve_seconds,
            "message": f"not judged as a program: its simulated overhead "
                       f"{solution.overhead:.3f} is above {best:.3f}, the "
                       "best that fits (Plan.use judges it)"}


def _rank(row):
    """Feasible first, by predicted overhead, then those not judged as
    programs (dearer), then solve time; skipped algorithms last."""
    ranked = row["status"] in ("feasible", "dearer")
    return (row["status"] != "feasible", not ranked,
            row["overhead"] if ranked else math.inf,
            row["status"] == "skipped", row["solve_seconds"] or 0)


@dataclasses.dataclass
class Found:
    """What a search at one budget found: `budget_bytes`, `table` (every
    algorithm's row, best first), `solutions` (spec -> Solution) and
    `anchorings` (spec -> lowering.lower's anchoring of its program)."""
    budget_bytes: int
    table: list
    solutions: dict
    anchorings: dict


class Search:
    """Searches the traced step `traced` (a TracedStep) for plans; its
    graph, partition and memory model are built once and shared by every
    budget searched."""

    def __init__(self, traced, options, provenance=None):
        self.traced, self.options = traced, options
        self.graph = traced.graph(provenance)
        self.partition = Partition(traced)
        self.memory = ProgramMemory(self.partition)
        # Plain training's activation peak as the program holds it (the
        # graph's NoRemat peak and the returned loss): budget 1.0.
        noremat = rematbench.solve(self.graph, "noremat")
        self.noremat_peak_bytes = self.memory.peak(noremat.schedule)
        # The least budget the NoRemat schedule fits: its program peak and
        # its simulated one (above it where the program frees the outputs
        # of a multi-output op apart) both within it.
        self.noremat_fit_bytes = max(self.noremat_peak_bytes,
                                     noremat.peak_bytes)

    def _specs(self):
        """(specs to run, {name: why skipped})."""
        o, graph = self.options, self.graph
        if o.algorithms != "all":
            return list(o.algorithms), {}
        infos = rematbench.algorithms()
        skipped = {a.name: f"exact; skipped above {o.exact_max_nodes} "
                   f"nodes (the graph has {graph.num_nodes})"
                   for a in infos
                   if a.exact and graph.num_nodes > o.exact_max_nodes}
        return [a.name for a in infos if a.name not in skipped], skipped

    def _solve_all(self, specs, budget, timeout):
        """{spec: Solution}, solved in parallel (the GIL is released)."""
        with concurrent.futures.ThreadPoolExecutor(
                self.options.threads) as pool:
            futures = {s: pool.submit(rematbench.solve, self.graph, s,
                                      budget, None, timeout)
                       for s in specs}
            return {s: f.result() for s, f in futures.items()}

    def _solve_within(self, specs, budget, deadline):
        """({spec: Solution}, {spec: why it did not run}, {specs cut short
        by the deadline}) of `specs` solved in parallel, fastest kind
        first, each with `timeout` or the time left before `deadline`
        (time.monotonic()), whichever is less. Every solve has a first try
        of a thirtieth of plan_seconds (short: what a solve cut there did
        is lost where it runs again); those that used all of it run again
        with the time left (and that thirtieth) unless a schedule within
        SETTLED_OVERHEAD of the least overhead any has (1: no
        recomputation) fits as a program by then: none could beat it by
        more. One that would start with no time left does not run, nor
        does any once a schedule of overhead 1 fits."""
        o, kinds = self.options, {a.name: a for a in rematbench.algorithms()}

        def kind(spec):
            # NoRemat first: instant, and what fits any budget at or above
            # the NoRemat peak, which a slow heuristic must not keep from
            # running.
            a = kinds[spec.split(":")[0]]
            return (a.exact, a.isolate, a.name != "noremat")

        lock, best = threading.Lock(), [math.inf]
        cut = set()  # solves given less than `timeout`
        first_try = min(o.timeout, o.plan_seconds / 30)

        def run(spec, limit, until):
            left = until - time.monotonic()
            with lock:
                if best[0] <= 1.0:
                    return ("no recomputation needed: a schedule of "
                            "overhead 1.000 fits, which nothing beats")
            if left < 0.05:
                return (f"not started: the plan's time limit "
                        f"(plan_seconds={o.plan_seconds:g}) ran out")
            if left < limit == o.timeout:
                cut.add(spec)
            sol = rematbench.solve(self.graph, spec, budget, None,
                                   min(limit, left))
            if sol.status == "feasible" and sol.overhead <= 1.0 and \
                    self.memory.peak(sol.schedule) <= budget:
                with lock:
                    best[0] = 1.0
            return sol

        with concurrent.futures.ThreadPoolExecutor(o.threads) as pool:
            order = sorted(specs, key=kind)
            futures = {s: pool.submit(run, s, first_try, deadline)
                       for s in order}
            done = {s: f.result() for s, f in futures.items()}
            # Those that used their whole first try (a timeout, or the
            # best an anytime search found in it).
            again = [s for s in order if first_try < o.timeout and
                     not isinstance(done[s], str) and
                     done[s].solve_seconds >= 0.95 * first_try]
            settled = self._settled(done, budget, deadline) if again \
                else None
            if settled is None:
                # Their first try spent no time of their own (the limit
                # moves by it), so none has less than before it.
                futures = {s: pool.submit(run, s, o.timeout,
                                          deadline + first_try)
                           for s in again}
                done.update({s: f.result() for s, f in futures.items()})
            else:
                done.update({s: settled for s in again
                             if done[s].status == "timeout"})
        solutions = {s: r for s, r in done.items() if not isinstance(r, str)}
        return (solutions,
                {s: r for s, r in done.items() if isinstance(r, str)},
                {s for s in cut & set(solutions)
                 if solutions[s].status == "timeout"})

    def _settled(self, done, budget, deadline):
        """Why the solves cut at their first try need not run again (the
        least simulated overhead of `done`, a {spec: Solution or reason},
        is within SETTLED_OVERHEAD of 1 and its schedule fits the budget
        as a program), or None."""
        close = sorted((r.overhead, s) for s, r in done.items()
                       if not isinstance(r, str) and r.status == "feasible"
                       and r.overhead <= SETTLED_OVERHEAD)
        for _, spec in close:
            sol, a = self._fitted(spec, done[spec], budget, deadline)
            if a is not None and a[1] <= budget and \
                    sol.overhead <= SETTLED_OVERHEAD:
                return (f"stopped at its first try: {spec}'s schedule of "
                        f"overhead {sol.overhead:.4f} fits, within "
                        f"{SETTLED_OVERHEAD - 1:.1%} of the least any has "
                        "(1, no recomputation)")
        return None

    def at(self, budget, reserve=0, first=()):
        """The Found at `budget` (bytes, '512MiB', or a fraction of the
        NoRemat peak) less `reserve` bytes, within the options'
        plan_seconds. The algorithms `first` (specs; a new shape's, those
        that won at its neighbours) are solved alone first, and the
        options' algorithms, with a time limit of their own, only where
        none of them fits. Raises NoFit when no algorithm fits."""
        budget = budget_bytes(budget, self.noremat_peak_bytes) - reserve
        specs, skipped = self._specs()
        if first and set(first) != set(specs):
            found = self._search(budget, list(first), {})
            if found.table[0]["status"] == "feasible":
                return found
        found = self._search(budget, specs, skipped)
        if found.table[0]["status"] != "feasible":
            raise self._no_fit(budget, [s for s in specs
                                        if s in found.solutions],
                               found.solutions)
        return found

    def _search(self, budget, specs, skipped):
        """The Found of `specs` at `budget` bytes (its table's first row
        not feasible where none fits) within plan_seconds; `skipped`
        ({name: why}) are rows of algorithms not run."""
        deadline = time.monotonic() + self.options.plan_seconds
        solutions, not_run, cut_short = self._solve_within(specs, budget,
                                                           deadline)
        skipped = dict(skipped, **not_run)
        # Judged as programs by simulated overhead, least first, so that
        # a schedule already dearer than a program that fits is not:
        # judging takes seconds on a schedule of 10^5 events.
        specs = sorted((s for s in specs if s in solutions), key=lambda s: (
            (0, solutions[s].overhead) if solutions[s].status == "feasible"
            else (1, 0)))
        anchored, rows, best = {}, [], math.inf
        for s in specs:
            if solutions[s].json.get("transfer_bytes"):
                rows.append(_row(s, solutions[s]))  # skipped: offloads
                continue
            if solutions[s].status == "feasible" and \
                    solutions[s].overhead > best:
                rows.append(_dearer(s, solutions[s], best))
                continue
            rows.append(self.judged(s, solutions, anchored, budget, deadline))
            if rows[-1]["status"] == "feasible":
                best = min(best, rows[-1]["overhead"])
        for r in rows:
            if r["algorithm"] in cut_short:
                r["message"] = (f"cut short by the plan's time limit "
                                f"(plan_seconds={self.options.plan_seconds:g})"
                                f"; {r['message']}")
        rows += [{"algorithm": n, "status": "skipped", "peak_bytes": None,
                  "overhead": None, "solve_seconds": None, "message": why}
                 for n, why in skipped.items()]
        rows.sort(key=_rank)
        return Found(budget, rows, solutions, anchored)

    def judge_rows(self, plan, algorithms=None):
        """Judges as programs the rows of `plan` (a Plan, or anything with
        its table, solutions, anchorings and budget_bytes) that at() left
        "dearer", of `algorithms` (None: all), in place, the table sorted
        again."""
        for row in plan.table:
            if row["status"] == "dearer" and (
                    algorithms is None or row["algorithm"] in algorithms):
                row.update(self.judged(row["algorithm"], plan.solutions,
                                       plan.anchorings, plan.budget_bytes))
        plan.table.sort(key=_rank)

    def judged(self, spec, solutions, anchorings, budget, deadline=math.inf):
        """The table row of `spec` at `budget` judged as a program
        (_fitted), which updates solutions[spec] and anchorings[spec]
        (lowering.lower's anchoring)."""
        sol, a = self._fitted(spec, solutions[spec], budget, deadline)
        solutions[spec] = sol
        if a is None:
            return _row(spec, sol)
        anchorings[spec] = a[0]
        return _row(spec, sol, a[1] - sol.peak_bytes, budget, a[2])

    def _fitted(self, spec, solution, budget, deadline=math.inf):
        """(solution, anchoring.anchored's triple or None) of `spec` at
        `budget`. The program also holds what the schedule does not model
        (generator states, the returned loss), with the fewest replayed
        draws that fit. A schedule that fits only with replays, or not at
        all, is solved again below the budget by what its program held
        beyond its simulated peak (with the fewest states held, with every
        state saved) and by the most a program can add with every state
        saved (ProgramMemory.most_held), smallest first, until one fits
        without replays: of those that fit, the one of least predicted
        overhead; the last one solved when none fits. Re-solves run within
        what is left before `deadline` (time.monotonic()), but at least a
        second."""
        if solution.status != "feasible":
            return solution, None
        memory = self.memory
        first = anchoring.anchored(memory, solution, budget)
        tried = [(solution, first)]
        if first[0][0] or first[1] > budget:
            margins = sorted({memory.peak(solution.schedule) -
                              solution.peak_bytes,
                              first[1] - solution.peak_bytes,
                              memory.most_held()})
            for margin in margins:
                if not 0 < margin <= budget:
                    continue
                left = deadline - time.monotonic()
                again = rematbench.solve(
                    self.graph, spec, budget - margin, None,
                    min(self.options.timeout, max(left, 1.0)))
                if again.status != "feasible":
                    break
                tried.append((again, anchoring.anchored(memory, again,
                                                        budget)))
                if not tried[-1][1][0][0] and tried[-1][1][1] <= budget:
                    break
        fits = [t for t in tried if t[1][1] <= budget]
        return min(fits, key=lambda t: t[1][2]) if fits else tried[-1]

    def _no_fit(self, budget, specs, solutions):
        """The NoFit when no schedule fits `budget`: the smallest budget at
        which one of these algorithms finds a schedule that fits as a
        program (bisection between the budget, or the graph's reach bound,
        and the least peak found; each probe solved as at() solves, to 1%
        or until plan_seconds runs out again: then the least budget found
        to fit, the NoRemat peak at worst), and the bounds no schedule
        goes below."""
        deadline = time.monotonic() + self.options.plan_seconds
        graph, memory = self.graph, self.memory
        # A budget fits when the schedule's simulated peak and its program
        # peak are both within it (the solvers judge the first).
        peaks = [(max(s.peak_bytes, anchoring.anchored(memory, s)[1]), spec)
                 for spec, s in solutions.items() if s.valid]
        noremat, top = self.noremat_peak_bytes, self.noremat_fit_bytes
        # The NoRemat schedule fits there (it recomputes nothing, so it
        # holds no generator state), whether or not it ran.
        hi = min([p for p, _ in peaks] + [top])
        # Probe with the heuristics: the exact methods would spend their
        # whole time limit at every probe.
        exact = {a.name for a in rematbench.algorithms() if a.exact}
        probes = [s for s in specs if s.split(":")[0] not in exact] or specs
        reach = graph.reach_lower_bound()["bytes"]
        if not probes:  # none had time to start
            return NoFit(graph.name, budget, noremat, top, "noremat",
                         reach, graph.lower_bound_bytes)
        # lo never fits: plans recompute and never offload, and no such
        # schedule peaks below the reach bound.
        lo = max(budget, reach - 1)
        most = memory.most_held()

        def fits(mid):
            # As a plan is made (_fitted).
            found = []
            left = max(0.05, deadline - time.monotonic())
            for spec, s in self._solve_all(
                    probes, mid, min(self.options.timeout, left)).items():
                _, a = self._fitted(spec, s, mid)
                if a is not None and a[1] <= mid:
                    found.append(spec)
            return found

        # The least peak found was solved for another budget: solved for
        # its own, an algorithm may choose a cheaper schedule that the
        # program holds more of. Up from it until a plan made there fits.
        found = fits(hi)
        while not found and hi < top and time.monotonic() < deadline:
            lo, hi = hi, min(top, hi + max(most, hi // 100))
            found = fits(hi)
        if not found:
            hi = top
        who = found[0] if found else "noremat"
        while hi - lo > max(1, hi // 100) and \
                time.monotonic() < deadline:  # to 1%
            mid = (lo + hi) // 2
            found = fits(mid)
            if found:
                hi, who = mid, found[0]
            else:
                lo = mid
        return NoFit(graph.name, budget, noremat, hi, who, reach,
                     graph.lower_bound_bytes)
