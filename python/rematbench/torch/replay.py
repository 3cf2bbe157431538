"""Replays a rematerialization schedule on the real PyTorch training step a
graph was exported from (scripts/export_torch.py), and measures what the
simulator only predicts; scripts/replay_torch.py and
scripts/replay_sweep.py are its command lines.

    r = Replayer("resnet.json")                 # rebuilds and checks the step
    figures = r.replay("schedule.txt")          # peak, time, gradients

Schedules are read, simulated and solved by the package's core
(rematbench.read_schedule, simulate, solve), as `remat validate` and
`remat solve` do.

 1. The training step is rebuilt from the provenance
    (rematbench.models.build: same model, shapes, seed, on the device asked
    for) and traced again with the exporter's own code; the rebuilt nodes
    must equal the file's node by node (name, op, kind, grad_of, inputs,
    mem, workspace, traced ops, and cost when it is in FLOPs), or BadInput
    is raised: a schedule is only meaningful on the graph it was made
    for.
 2. Each node's traced ops are its `fx` list (or its `name` alone), the ops
    of the functionalized joint FX graph it covers. `c v` runs them, in FX
    order, on the live values of v's inputs (an op that reads a value of a
    node that is not live is a bad schedule: BadInput, naming the event);
    `f v` drops v's values. Views (members of the same node) share storage
    with their base; tuple results of multi-output ops are dropped once
    their parts are taken.
 3. What is measured, per replay:
    - peak live activation bytes: bytes of the distinct storages (by data
      pointer) held by live nodes' values, counted after every op, i.e. at
      every event and inside a node between its ops. Parameters, buffers,
      the batch, views of them and the parameter gradients (docs/model.md's
      static_bytes) are excluded, as in the simulator. On CUDA also
      torch.cuda.max_memory_allocated() minus what was allocated before the
      step (this includes the parameter gradients and allocator rounding,
      which the simulator does not count);
    - wall time: median of `repeats` replays after `warmup` ones (CUDA
      synchronized), and the same for the NoRemat schedule of the graph
      replayed by this same code, so the interpreter's per-op cost is in
      both;
    - gradients of every parameter against a plain `loss.backward()`-style
      eager step (torch.autograd.grad of the same model on the same batch
      from the same RNG state): bit-identical on CPU, allclose on CUDA
      (rtol 1e-4, atol 1e-6: cuDNN's backward kernels are not
      deterministic);
    - batch-norm running statistics after the replay against the eager
      step's.
 4. Recomputation and side effects:
    - Random ops (dropout's bernoulli_, native_dropout, rand*): before the
      replay, the FX graph is run once in its own order (the order eager
      autograd ran the ops in) from the step's seed, recording the RNG
      state before each random op. Every execution of that op in a replay,
      first or recomputed, runs from that recorded state and restores the
      generator afterwards, so the masks are those of the eager step
      whatever order the schedule computes nodes in.
    - Batch-norm running statistics: the functionalized graph (torch
      2.14) still updates them in place inside native_batch_norm (its
      schema does not declare the write). The first execution of each such
      op in a replay gets the real buffers; a recomputation gets copies, so
      the update takes effect exactly once. Ops outside every node that
      write a buffer (the num_batches_tracked increment's copy_, the copy_
      of a functional batch norm's new statistics) run once, as soon as
      what they read is available.

Bad input raises BadInput (the scripts exit with status 2): one line
naming the file and the event or node (a graph whose model cannot be
rebuilt or does not match the file, a schedule that is illegal for it).
"""

import gzip
import json
import math
import os
import statistics
import tempfile
import time

import rematbench
from rematbench.torch import rng
from rematbench.torch.interpreter import Interpreter
from rematbench.torch.partition import BadInput, Partition
from rematbench.torch.traced_step import TracedStep

# --------------------------------------------------------------------------
# Files.


def load_graph(path):
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            g = json.load(f)
    except (OSError, ValueError) as e:
        raise BadInput(f"{path}: cannot read graph: {e}")
    if not isinstance(g, dict) or g.get("format") != "rematbench-graph" or \
            not isinstance(g.get("nodes"), list):
        raise BadInput(f"{path}: not a rematbench graph")
    prov = g.get("provenance") or {}
    if prov.get("generator") != "scripts/export_torch.py":
        raise BadInput(f"{path}: not an export of scripts/export_torch.py "
                       "(provenance.generator)")
    nodes = sorted(g["nodes"], key=lambda n: n.get("id", -1))
    if [n.get("id") for n in nodes] != list(range(len(nodes))):
        raise BadInput(f"{path}: node ids are not 0..n-1")
    g["nodes"] = nodes
    return g


def core_graph(graph, path):
    """The core's Graph of an export (what reads, simulates and solves
    schedules for it)."""
    try:
        return rematbench.parse_graph_json(json.dumps(graph), path)
    except rematbench.Error as e:
        raise BadInput(str(e))


def replay_events(schedule, lines, where):
    """[(kind 'c'|'f', node id, line)] of a core Schedule whose events are
    on `lines` of `where`."""
    events = []
    for (kind, v), line in zip(schedule, lines):
        if kind not in ("c", "f"):
            raise BadInput(f"{where}:{line}: offload, prefetch and wait "
                           f"events ('{kind} {v}') are not replayed; replay "
                           "a schedule of computes and frees")
        events.append((kind, v, line))
    return events


def read_schedule(path, core):
    """(events as replay_events gives them, the core's Schedule) of a
    schedule file."""
    try:
        schedule, lines = rematbench.read_schedule(path, core, lines=True)
    except rematbench.Error as e:
        raise BadInput(str(e))
    return replay_events(schedule, lines, path), schedule


def simulate(core, schedule, events, path):
    """The core's simulation of a legal schedule (exit 2 naming the event
    otherwise): (activation peak, cost, length, {compute event index:
    memory while it runs})."""
    sim = rematbench.simulate(core, schedule, timeline=True)
    if not sim.valid:
        i = sim.error_index
        line = events[i][2] if i < len(events) else \
            (events[-1][2] + 1 if events else 1)
        raise BadInput(f"{path}:{line}: {sim.error}")
    at = {k: sim.memory_at_event[k] for k, e in enumerate(events)
          if e[0] == "c"}
    return sim.peak_bytes, sim.cost, sim.length, at


def solve(core, graph_path, algorithm, budget, params, timeout=None):
    """A schedule from the core's solver, written to a temporary file;
    returns (its path, the solve document of `remat solve --json`). The
    caller deletes the file."""
    try:
        sol = rematbench.solve(core, algorithm, budget, list(params),
                               timeout)
    except rematbench.Error as e:
        raise BadInput(f"{graph_path}: {e}")
    if sol.status != "feasible":
        raise BadInput(f"{graph_path}: {algorithm} at budget {budget}: "
                       f"status {sol.status}, no schedule to replay "
                       f"({sol.json.get('message', '')})")
    fd, sched = tempfile.mkstemp(prefix="replay_torch.", suffix=".txt")
    with os.fdopen(fd, "w") as f:
        f.write(sol.schedule.to_text())
    return sched, sol.json


# --------------------------------------------------------------------------
# Rebuilding the step and compiling its FX graph into per-node programs.

COMPARED = ("name", "op", "kind", "grad_of", "inputs", "mem", "workspace",
            "fx")


class Step:
    """The rebuilt training step of one export, checked against the file:
    `traced` (its TracedStep), the module `step` and its `inputs`, and the
    `seed` its random ops are replayed from."""

    def __init__(self, path, graph, device="cpu"):
        import torch
        from rematbench import models as M
        self.path, self.graph, self.device = path, graph, device
        prov = graph["provenance"]
        try:
            args = M.model_args_from_provenance(prov)
            step, inputs = M.build(args, device)
        except Exception as e:  # any failure to rebuild is bad input
            raise BadInput(f"{path}: cannot rebuild the model from its "
                           f"provenance: {type(e).__name__}: {e}")
        self.args, self.step, self.inputs = args, step, inputs
        self.params = list(step.parameters())
        self.buffers = list(step.buffers())
        self.state0 = [b.detach().clone() for b in self.buffers]
        self.seed = prov.get("seed", M.SEED)
        # Measured workspaces, like measured costs, are the export's
        # measurements: the rebuilt step is checked for its structure.
        measured = prov.get("workspace") == "measured"
        self.traced = TracedStep.trace(
            step, inputs, path, prov.get("granularity", "aten"),
            workspace=False,
            copy_saved_parts=prov.get("saved_parts") == "cloned",
            seed=self.seed)
        self.check(self.traced.nodes, graph["nodes"],
                   graph.get("units", {}).get("cost") == "flop", measured)
        # Equal but for the file's measurements (costs, workspaces), which
        # the replay's memory count takes from the file.
        self.traced.nodes = graph["nodes"]
        self.torch = torch

    def check(self, rebuilt, filed, flop, measured_workspace):
        fields = COMPARED + (("cost",) if flop else ())
        if measured_workspace:
            fields = tuple(f for f in fields if f != "workspace")
        if len(rebuilt) != len(filed):
            raise BadInput(f"{self.path}: the rebuilt model has "
                           f"{len(rebuilt)} nodes, the file {len(filed)}")
        for a, b in zip(rebuilt, filed):
            for f in fields:
                x, y = a.get(f), b.get(f)
                if f == "workspace":
                    x, y = x or 0, y or 0
                if x != y:
                    raise BadInput(
                        f"{self.path}: node {b['id']} ({b.get('name')}): "
                        f"rebuilt model differs in {f}: file {y}, rebuilt "
                        f"{x}")

    def reset_buffers(self):
        with self.torch.no_grad():
            for b, v in zip(self.buffers, self.state0):
                b.copy_(v)

    def eager(self):
        """Gradients, loss and buffers after one plain eager step."""
        torch = self.torch
        self.reset_buffers()
        rng.seed(self.seed, self.device)
        loss = self.step(*self.inputs)
        grads = torch.autograd.grad(loss, self.params)
        out = ([g.detach().clone() for g in grads], loss.detach().clone(),
               [b.detach().clone() for b in self.buffers])
        self.reset_buffers()
        return out


# --------------------------------------------------------------------------
# One replay, measured.


class Replayer:
    """Rebuilds one export once and replays any number of schedules on it."""

    def __init__(self, path, device="cpu", threads=1):
        import torch
        if threads:
            torch.set_num_threads(threads)
        self.torch = torch
        self.path, self.device = path, device
        self.graph = load_graph(path)
        self.core = core_graph(self.graph, path)
        self.step = Step(path, self.graph, device)
        self.partition = Partition(self.step.traced)
        # Every execution of a random op runs from the state recorded
        # before it in an eager-order run from the step's seed.
        self.program = Interpreter(
            self.partition, rng.record(self.partition, self.step.seed))
        self.eager_grads, self.eager_loss, self.eager_buffers = \
            self.step.eager()
        self._noremat = None

    def run(self, events, path, **options):
        """Program.run from the buffers' state before the step."""
        self.step.reset_buffers()
        return self.program.run(events, path, **options)

    def sync(self):
        if self.device != "cpu":
            self.torch.cuda.synchronize()

    def _time_one(self, events, path):
        """(wall seconds, CPU seconds of this process) of one replay. The
        CPU time does not count what other processes take from a shared
        machine, so on the CPU with one thread it is the steadier figure;
        on CUDA it counts only the host's share and is not comparable."""
        self.step.reset_buffers()
        self.sync()
        t0, c0 = time.perf_counter(), time.process_time()
        self.program.run(events, path)
        self.sync()
        return time.perf_counter() - t0, time.process_time() - c0

    def timed(self, events, path, repeats, warmup):
        """Times the schedule and the NoRemat schedule alternately (after
        `warmup` untimed runs of each), so that a change of machine load
        hits both: (schedule samples, NoRemat samples), each a list of
        (wall, CPU) seconds."""
        base, _ = self.noremat()
        for _ in range(warmup):
            self.run(base, "noremat schedule")
            self.run(events, path)
        mine, theirs = [], []
        for _ in range(repeats):
            theirs.append(self._time_one(base, "noremat schedule"))
            mine.append(self._time_one(events, path))
        self.step.reset_buffers()
        return mine, theirs

    def noremat(self):
        """(events, simulated cost) of the graph's NoRemat schedule."""
        if self._noremat is None:
            schedule = rematbench.solve(self.core, "noremat").schedule
            where = "noremat schedule"
            events = replay_events(schedule, range(1, len(schedule) + 1),
                                   where)
            _, cost, _, _ = simulate(self.core, schedule, events, where)
            self._noremat = (events, cost)
        return self._noremat

    def compare_grads(self, grads):
        torch = self.torch
        equal, worst = True, 0.0
        for g, e in zip(grads, self.eager_grads):
            if g is None:
                return False, math.inf
            d = (g.double() - e.double()).abs().max().item() if g.numel() \
                else 0.0
            worst = max(worst, d)
            if self.device == "cpu":
                equal &= torch.equal(g, e)
            else:
                equal &= torch.allclose(g, e, rtol=1e-4, atol=1e-6)
        return bool(equal), worst

    def replay(self, sched_path, repeats=5, warmup=1, cost_graph=None,
               time_limit=None):
        """Replays one schedule file and returns its figures (a dict). With
        `time_limit` (seconds), fewer timed pairs are run when the
        memory-measuring replay shows that `repeats` would exceed it (at
        least one)."""
        torch = self.torch
        g = self.graph
        events, schedule = read_schedule(sched_path, self.core)
        sim_peak, sim_cost, length, sim_at = simulate(self.core, schedule,
                                                      events, sched_path)
        cuda_peak = None
        if self.device != "cpu":
            self.sync()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
        t0 = time.perf_counter()
        peak, where, grads, loss = self.run(events, sched_path, measure=True)
        once = time.perf_counter() - t0
        measured_at = self.program.per_event
        if time_limit and repeats:
            repeats = max(1, min(repeats, int(time_limit / once)))
        if self.device != "cpu":
            self.sync()
            cuda_peak = torch.cuda.max_memory_allocated() - base
        buffers_equal = all(
            torch.equal(b, e) if self.device == "cpu" else
            torch.allclose(b, e, rtol=1e-4, atol=1e-6)
            for b, e in zip(self.step.buffers, self.eager_buffers))
        equal, worst = self.compare_grads(grads)
        self.step.reset_buffers()
        nr_events, nr_cost = self.noremat()
        samples = nr_samples = []
        if repeats:
            samples, nr_samples = self.timed(events, sched_path, repeats,
                                             warmup)
            med = lambda xs, i: statistics.median(x[i] for x in xs)
            t, nr_time = med(samples, 0), med(nr_samples, 0)
            cpu, nr_cpu = med(samples, 1), med(nr_samples, 1)
            # Medians of the per-pair ratios: each pair ran back to back.
            overhead = statistics.median(
                a[0] / b[0] for a, b in zip(samples, nr_samples))
            overhead_cpu = statistics.median(
                a[1] / b[1] for a, b in zip(samples, nr_samples))
        else:  # --repeats 0: memory and gradients only
            t = nr_time = cpu = nr_cpu = overhead = overhead_cpu = None
        nodes = g["nodes"]
        # Where the measured live bytes inside a compute event differ from
        # the simulator's memory at that event: by op, the first of each.
        diffs = {}
        for k, b in sorted(measured_at.items()):
            d = b - sim_at[k]
            if d:
                v = events[k][1]
                op = nodes[v].get("op")
                e = diffs.setdefault(op, {"op": op, "events": 0,
                                          "first_event": k,
                                          "first_node": v,
                                          "first_node_name": nodes[v]["name"],
                                          "first_difference_bytes": d})
                e["events"] += 1
        out = {
            "graph": g.get("name"),
            "export": self.path,
            "schedule": sched_path,
            "device": self.device,
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "length": length,
            "simulated_peak_bytes": sim_peak,
            "simulated_cost": sim_cost,
            "noremat_cost": nr_cost,
            "predicted_overhead": sim_cost / nr_cost,
            "measured_peak_bytes": peak,
            "peak_ratio": peak / sim_peak if sim_peak else None,
            "peak_at": None if where is None else {
                "event": where[0], "line": where[1], "node": where[2],
                "node_name": nodes[where[2]]["name"], "op": where[3]},
            "event_differences": sorted(diffs.values(),
                                        key=lambda e: e["first_event"]),
            "cuda_peak_bytes": cuda_peak,
            "step_seconds": t,
            "step_samples_seconds": [x[0] for x in samples],
            "baseline_seconds": nr_time,
            "baseline_samples_seconds": [x[0] for x in nr_samples],
            "ratio_to_baseline": overhead,
            "cpu_seconds": cpu,
            "baseline_cpu_seconds": nr_cpu,
            "ratio_to_baseline_cpu": overhead_cpu,
            "gradients_equal": equal,
            "max_grad_diff": worst,
            "loss_equal": loss is not None and bool(
                torch.equal(loss, self.eager_loss)
                if self.device == "cpu" else
                torch.allclose(loss, self.eager_loss)),
            "buffers_equal": bool(buffers_equal),
            "repeats": repeats,
            "warmup": warmup,
        }
        if cost_graph is not None:
            cost = {i: n["cost"] for i, n in enumerate(cost_graph["nodes"])}
            c = sum(cost[v] for k, v, _ in events if k == "c")
            c0 = sum(cost[v] for k, v, _ in nr_events if k == "c")
            out["predicted_overhead_measured_costs"] = c / c0
            out["cost_graph_units"] = cost_graph.get("units", {}).get("cost")
        return out


def load_cost_graph(path, graph):
    """A graph with the same nodes as `graph` whose costs are used for the
    predicted overhead (an export of the same step with --cost measured)."""
    cg = load_graph(path)
    a = [(n["name"], n["inputs"]) for n in cg["nodes"]]
    b = [(n["name"], n["inputs"]) for n in graph["nodes"]]
    if a != b:
        raise BadInput(f"{path}: --cost-graph has other nodes than the "
                       "replayed graph")
    return cg
