#!/usr/bin/python3
"""Replays a rematerialization schedule on the real PyTorch training step a
graph was exported from, and measures what the simulator only predicts.

  scripts/replay_torch.py GRAPH.json SCHEDULE.txt [--json]
  scripts/replay_torch.py GRAPH.json --algorithm chen_sqrtn --budget 8MiB \\
      [-p k=v ...] [--remat build/remat]

GRAPH is an export of scripts/export_torch.py (its provenance names the
model, options and seed); SCHEDULE is the text format of DESIGN.md section 2
(`c <id>` / `f <id>`), or `--algorithm/--budget` asks `remat solve
--schedule-out` for one.

What happens:
 1. The training step is rebuilt from the provenance (torch_models.build:
    same model, shapes, seed, on --device) and traced again with the
    exporter's own code; the rebuilt nodes must equal the file's node by
    node (name, op, kind, grad_of, inputs, mem, workspace, traced ops, and
    cost when it is in FLOPs), or the replay stops with exit status 2: a
    schedule is only meaningful on the graph it was made for.
 2. Each node's traced ops are its `fx` list (or its `name` alone), the ops
    of the functionalized joint FX graph it covers. `c v` runs them, in FX
    order, on the live values of v's inputs (an op that reads a value of a
    node that is not live is a bad schedule: exit 2, naming the event);
    `f v` drops v's values. Views (members of the same node) share storage
    with their base; tuple results of multi-output ops are dropped once
    their parts are taken.
 3. What is measured, per replay:
    - peak live activation bytes: bytes of the distinct storages (by data
      pointer) held by live nodes' values, counted after every op, i.e. at
      every event and inside a node between its ops. Parameters, buffers,
      the batch, views of them and the parameter gradients (DESIGN.md's
      static_bytes) are excluded, as in the simulator. On CUDA also
      torch.cuda.max_memory_allocated() minus what was allocated before the
      step (this includes the parameter gradients and allocator rounding,
      which the simulator does not count);
    - wall time: median of --repeats replays after --warmup ones (CUDA
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
    - Batch-norm running statistics: torch 1.13's functionalized graph
      still updates them in place inside native_batch_norm (its schema does
      not declare the write). The first execution of each such op in a
      replay gets the real buffers; a recomputation gets copies, so the
      update takes effect exactly once. Ops outside every node that write
      a buffer (the num_batches_tracked increment's copy_, torch 2.x's
      copy_ of the functional batch norm's new statistics) run once, as
      soon as what they read is available.
Exit status: 0 replayed with gradients and running statistics equal to
the eager step's, 1 replayed but they differ, 2 bad usage or bad input (one
line on stderr naming the file and the event or node: a graph whose model
cannot be rebuilt or does not match the file, a schedule that is illegal
for it).
"""

import argparse
import gzip
import json
import math
import operator
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


class BadInput(Exception):
    """One line for stderr; exit status 2."""


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


def read_schedule(path, n):
    """[(kind 'c'|'f', node id, line number)]."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise BadInput(f"{path}: cannot read schedule: {e}")
    events = []
    for no, line in enumerate(lines, 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        parts = s.split()
        if len(parts) != 2 or parts[0] not in ("c", "f") or \
                not parts[1].isdigit():
            raise BadInput(f"{path}:{no}: expected 'c <id>' or 'f <id>', "
                           f"got '{s}'")
        v = int(parts[1])
        if v >= n:
            raise BadInput(f"{path}:{no}: node {v} does not exist (the graph "
                           f"has {n} nodes)")
        events.append((parts[0], v, no))
    return events


def simulate(graph, events, path, per_event=None):
    """DESIGN.md's simulator: (activation peak, cost, length); checks the
    schedule's legality the same way (exit 2 naming the event). Fills
    per_event[k] with the memory at compute event k."""
    nodes = graph["nodes"]
    live, mem, peak, cost, length = set(), 0, 0, 0, 0
    for k, (kind, v, no) in enumerate(events):
        n = nodes[v]
        if kind == "c":
            if v in live:
                raise BadInput(f"{path}:{no}: c {v}: node {v} ({n['name']}) "
                               "is already live")
            for u in n["inputs"]:
                if u not in live:
                    raise BadInput(
                        f"{path}:{no}: c {v}: input {u} "
                        f"({nodes[u]['name']}) of node {v} ({n['name']}) "
                        "is not live")
            at = mem + n["mem"] + n.get("workspace", 0)
            peak = max(peak, at)
            if per_event is not None:
                per_event[k] = at
            mem += n["mem"]
            live.add(v)
            cost += n["cost"]
            length += 1
        else:
            if v not in live:
                raise BadInput(f"{path}:{no}: f {v}: node {v} ({n['name']}) "
                               "is not live")
            live.remove(v)
            mem -= n["mem"]
    targets = target_ids(graph)
    done = {v for k, v, _ in events if k == "c"}
    missing = [v for v in targets if v not in done]
    if missing:
        raise BadInput(f"{path}: target node {missing[0]} "
                       f"({nodes[missing[0]]['name']}) is never computed")
    return peak, cost, length


def target_ids(graph):
    read = {u for n in graph["nodes"] for u in n["inputs"]}
    return [n["id"] for n in graph["nodes"]
            if n.get("target", n["id"] not in read)]


def solve(remat, graph_path, algorithm, budget, params, timeout=None):
    """Asks `remat solve` for a schedule; returns (schedule path, the
    solver's JSON). The caller deletes the file."""
    fd, sched = tempfile.mkstemp(prefix="replay_torch.", suffix=".txt")
    os.close(fd)
    cmd = [remat, "solve", "-a", algorithm, "-g", graph_path,
           "--schedule-out", sched, "--json"]
    if budget is not None:
        cmd += ["-b", str(budget)]
    for kv in params:
        cmd += ["-p", kv]
    if timeout:
        cmd += ["--timeout", str(timeout)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        os.unlink(sched)
        raise BadInput(f"{remat}: cannot run: {e}")
    try:
        out = json.loads(r.stdout)
    except ValueError:
        os.unlink(sched)
        msg = (r.stderr.strip().splitlines() or ["no output"])[-1]
        raise BadInput(f"{remat} solve -a {algorithm}: {msg}")
    if out.get("status") != "feasible" or os.path.getsize(sched) == 0:
        os.unlink(sched)
        raise BadInput(f"{graph_path}: {algorithm} at budget {budget}: "
                       f"status {out.get('status')}, no schedule to replay "
                       f"({out.get('message', '')})")
    return sched, out


# --------------------------------------------------------------------------
# Rebuilding the step and compiling its FX graph into per-node programs.

RANDOM_WORDS = ("bernoulli", "dropout", "rand", "normal", "uniform",
                "multinomial", "exponential", "geometric", "cauchy",
                "log_normal", "random_")
# Ops that update batch-norm running statistics in place although their
# schema does not mark the write (so functionalize keeps them): args 3, 4.
RUNNING_STAT_OPS = ("native_batch_norm", "_native_batch_norm_legit",
                    "cudnn_batch_norm", "miopen_batch_norm",
                    "_batch_norm_impl_index")
COMPARED = ("name", "op", "kind", "grad_of", "inputs", "mem", "workspace",
            "fx")


def _op_name(target):
    s = str(target)
    return s.split(".")[1] if s.startswith("aten.") else s


def _is_random(target):
    import torch
    tag = getattr(getattr(torch, "Tag", None), "nondeterministic_seeded",
                  None)
    if tag is not None and tag in getattr(target, "tags", ()):
        return True
    name = _op_name(target)
    return any(w in name for w in RANDOM_WORDS)


def _writes(target):
    """Argument positions an op writes: declared in its schema (`Tensor(a!)`)
    or known (running statistics)."""
    out = set()
    schema = getattr(target, "_schema", None)
    if schema is not None:
        for i, a in enumerate(schema.arguments):
            if a.alias_info is not None and a.alias_info.is_write:
                out.add(i)
    if _op_name(target) in RUNNING_STAT_OPS:
        out |= {3, 4}
    return out


def _storage(t):
    """(data pointer, bytes) of a tensor's storage."""
    s = t.untyped_storage() if hasattr(t, "untyped_storage") else \
        t.storage()
    return s.data_ptr(), s.nbytes()


def _tensors(v):
    if v is None:
        return []
    if isinstance(v, (tuple, list)):
        return [x for y in v for x in _tensors(y)]
    import torch
    return [v] if isinstance(v, torch.Tensor) else []


class Step:
    """The rebuilt training step of one export, checked against the file."""

    def __init__(self, path, graph, device="cpu"):
        import torch
        import torch_models as M
        import export_torch as E
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
        granularity = prov.get("granularity", "aten")
        nodes, g2, info = E.trace_nodes(step, inputs, granularity)
        self.check(nodes, graph["nodes"],
                   graph.get("units", {}).get("cost") == "flop")
        self.g2, self.info = g2, info
        self.seed = prov.get("seed", M.SEED)
        self.torch = torch

    def check(self, rebuilt, filed, flop):
        fields = COMPARED + (("cost",) if flop else ())
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
        torch.manual_seed(self.seed)
        if self.device != "cpu":
            torch.cuda.manual_seed_all(self.seed)
        loss = self.step(*self.inputs)
        grads = torch.autograd.grad(loss, self.params)
        out = ([g.detach().clone() for g in grads], loss.detach().clone(),
               [b.detach().clone() for b in self.buffers])
        self.reset_buffers()
        return out


class Program:
    """The FX graph cut into the export's nodes, ready to run event by
    event."""

    def __init__(self, step):
        import torch
        from torch.fx.node import map_arg
        self.torch, self.step, self.map_arg = torch, step, map_arg
        g2, nodes = step.g2, step.graph["nodes"]
        fx = list(g2.graph.nodes)
        self.fx = fx
        self.index = idx = {n: i for i, n in enumerate(fx)}
        by_name = {n.name: n for n in fx}
        self.members, owner = [], {}
        for n in nodes:
            names = n.get("fx") or [n["name"]]
            ms = sorted(idx[by_name[x]] for x in names)
            for m in ms:
                owner[m] = n["id"]
            self.members.append(ms)
        self.owner = owner
        place = [n for n in fx if n.op == "placeholder"]
        flat = step.params + step.buffers + list(step.inputs) + \
            [torch.ones((), device=step.params[0].device)]
        if len(flat) != len(place):
            raise BadInput(f"{step.path}: the traced graph has {len(place)} "
                           f"inputs, the step {len(flat)}")
        out_node = fx[-1]
        outs = list(out_node.args[0])
        # FX index -> parameter index of the gradient it is (the loss,
        # output 0, is activation memory like any node).
        self.grad_of_param = {idx[o]: i for i, o in enumerate(outs[1:])}
        self.loss_fx = idx[outs[0]]
        self.n_params = len(outs) - 1
        # Values that are parameter gradients (static, never counted):
        # the output, the views it was made through and the op that made
        # the storage (or, for a multi-output op, which of its parts).
        self.grad_src, self.grad_parts = set(), {}
        for o in self.grad_of_param:
            src = fx[o]
            while True:
                self.grad_src.add(idx[src])
                if src.op != "call_function" or not src.args or \
                        not isinstance(src.args[0], torch.fx.Node):
                    break
                if src.target is operator.getitem:
                    self.grad_parts.setdefault(idx[src.args[0]], set()).add(
                        src.args[1])
                    break
                if not _alias_op(src.target):
                    break
                src = src.args[0]
        # Static values: placeholders, constants and pure ops of them.
        self.static = [None] * len(fx)
        self.side = []  # FX indices of ops outside nodes that write
        member_set = set(owner)
        with torch.no_grad():
            for i, n in enumerate(fx):
                if n.op == "placeholder":
                    self.static[i] = flat[place.index(n)]
                elif n.op == "get_attr":
                    self.static[i] = getattr(g2, n.target)
                elif n.op == "call_function" and i not in member_set:
                    ins = [idx[x] for x in n.all_input_nodes]
                    if not _writes(n.target) and not _is_random(n.target) \
                            and all(self.static[j] is not None or
                                    fx[j].op == "placeholder" for j in ins):
                        self.static[i] = self._call(n, self.static)
                    elif self._side_effect(n, member_set):
                        self.side.append(i)
        self.static_ptrs = set()
        for v in self.static:
            for t in _tensors(v):
                self.static_ptrs.add(_storage(t)[0])
        # What a node keeps once computed: members read by ops of other
        # nodes, or the loss. Tuples of multi-output ops are never kept.
        self.keep = []
        for v, ms in enumerate(self.members):
            keep = []
            for m in ms:
                if m == self.loss_fx or any(
                        self.owner.get(idx[u], v) != v or idx[u] in self.side
                        for u in fx[m].users if u.op != "output"):
                    if not self._is_tuple(fx[m]):
                        keep.append(m)
            self.keep.append(keep)
        # Written arguments that are buffers (placeholders): copied when
        # the op is recomputed. A write to a node's own fresh value
        # (dropout's bernoulli_ on its empty_like) is left in place.
        self.writes = {}
        for ms in self.members:
            for m in ms:
                n = fx[m]
                w = {i for i in _writes(n.target) if i < len(n.args) and
                     isinstance(n.args[i], torch.fx.Node) and
                     n.args[i].op == "placeholder"}
                if w:
                    self.writes[m] = w
        self.random = {m for ms in self.members for m in ms
                       if _is_random(fx[m].target)}
        self.check_reads()
        # Each op's argument fetching compiled once: the replay loop is
        # timed, and fx's map_arg per call would add to every op's time.
        self.fetch = {m: (fx[m].target, _fetcher(fx[m].args, idx),
                          _fetcher(fx[m].kwargs, idx))
                      for ms in self.members for m in ms}
        self.rng_states = self.record_rng()

    def _is_tuple(self, n):
        return any(u.target is operator.getitem for u in n.users)

    def _side_effect(self, n, member_set):
        """An op outside every node matters only if it writes (or feeds an
        op that writes) a placeholder: a buffer update."""
        seen, stack = set(), [n]
        while stack:
            u = stack.pop()
            if u in seen:
                continue
            seen.add(u)
            if u.op == "call_function" and _writes(u.target):
                return True
            stack.extend(x for x in u.users if self.index[x] not in
                         member_set and x.op == "call_function")
        return False

    def check_reads(self):
        """Every op of node v must read only static values, v's own values
        or those of v's declared inputs: otherwise the export's mapping is
        wrong and a schedule valid for the graph could not run."""
        nodes = self.step.graph["nodes"]
        for v, ms in enumerate(self.members):
            allowed = set(nodes[v]["inputs"]) | {v}
            for m in ms:
                for x in self.fx[m].all_input_nodes:
                    u = self.owner.get(self.index[x])
                    if u is None and self.static[self.index[x]] is None:
                        raise BadInput(
                            f"{self.step.path}: node {v} "
                            f"({nodes[v]['name']}): op {self.fx[m].name} "
                            f"reads {x.name}, which no node computes")
                    if u is not None and u not in allowed:
                        raise BadInput(
                            f"{self.step.path}: node {v} "
                            f"({nodes[v]['name']}): op {self.fx[m].name} "
                            f"reads node {u} ({nodes[u]['name']}), not an "
                            "input of the node")

    def _call(self, n, env):
        args = self.map_arg(n.args, lambda a: env[self.index[a]])
        kwargs = self.map_arg(n.kwargs, lambda a: env[self.index[a]])
        return n.target(*args, **kwargs)

    def _rng_get(self):
        t = self.torch
        cpu = t.get_rng_state()
        return (cpu, t.cuda.get_rng_state() if self.step.device != "cpu"
                else None)

    def _rng_set(self, s):
        self.torch.set_rng_state(s[0])
        if s[1] is not None:
            self.torch.cuda.set_rng_state(s[1])

    def record_rng(self):
        """The RNG state before each random op when the graph runs in its
        own (eager) order from the step's seed."""
        torch = self.torch
        states = {}
        if not self.random:
            return states
        torch.manual_seed(self.step.seed)
        if self.step.device != "cpu":
            torch.cuda.manual_seed_all(self.step.seed)
        env = list(self.static)
        self.step.reset_buffers()
        with torch.no_grad():
            for i, n in enumerate(self.fx):
                if i in self.owner:
                    if i in self.random:
                        states[i] = self._rng_get()
                    env[i] = self._call(n, env)
        self.step.reset_buffers()
        return states

    # ----------------------------------------------------------------------

    def run(self, events, path, measure=False, profile=None):
        """One replay. Returns (live-storage peak bytes or None, where,
        gradients list, loss). With a list `profile`, appends (node, seconds)
        for each compute event."""
        torch = self.torch
        fx, members, keep, nodes = self.fx, self.members, self.keep, \
            self.step.graph["nodes"]
        env = list(self.static)
        grads = [None] * self.n_params
        # Storages of parameter gradients, excluded like static values:
        # those `grads` holds, and those the node being computed made (a
        # part of a multi-output op, or the op under a chain of views).
        # Kept by reference, not as a growing set: a gradient node that is
        # recomputed frees the old gradient, and the allocator may hand its
        # address to an activation.
        grad_ptr = {}  # parameter index -> data pointer
        node_grad_ptrs = set()
        live = set()
        held = set()  # FX indices whose values env holds for live nodes
        ran = set()  # FX indices run at least once in this replay
        pending = list(self.side)
        peak, where, loss = 0, None, None
        per_event = {}  # event index -> largest live bytes inside it
        self.step.reset_buffers()
        self._run_side(pending, env)

        stor = {}  # FX index -> [(data pointer, bytes)] of its value

        def live_bytes():
            seen, total = set(), 0
            grad_values = set(grad_ptr.values())
            for i in held:
                for p, b in stor[i]:
                    if p in seen or p in self.static_ptrs or \
                            p in node_grad_ptrs or p in grad_values:
                        continue
                    seen.add(p)
                    total += b
            return total

        with torch.no_grad():
            for k, (kind, v, no) in enumerate(events):
                if kind == "f":
                    if v not in live:
                        raise BadInput(f"{path}:{no}: f {v}: node {v} is not "
                                       "live")
                    for m in keep[v]:
                        env[m] = None
                        held.discard(m)
                    live.remove(v)
                    continue
                if v in live:
                    raise BadInput(f"{path}:{no}: c {v}: node {v} is already "
                                   "live")
                for u in nodes[v]["inputs"]:
                    if u not in live:
                        raise BadInput(
                            f"{path}:{no}: c {v}: input {u} "
                            f"({nodes[u]['name']}) of node {v} "
                            f"({nodes[v]['name']}) is not live")
                node_grad_ptrs.clear()
                if profile is not None:
                    t0 = time.perf_counter()
                for m in members[v]:
                    n = fx[m]
                    target, get_args, get_kwargs = self.fetch[m]
                    args, kwargs = get_args(env), get_kwargs(env)
                    w = self.writes.get(m)
                    if w and m in ran:
                        # Recomputation: the running statistics (and any
                        # other written input) were updated by the first
                        # execution; this one writes copies.
                        args = tuple(
                            a.clone() if i in w and
                            isinstance(a, torch.Tensor) else a
                            for i, a in enumerate(args))
                    if m in self.random:
                        saved = self._rng_get()
                        self._rng_set(self.rng_states[m])
                        r = target(*args, **kwargs)
                        self._rng_set(saved)
                    else:
                        r = target(*args, **kwargs)
                    ran.add(m)
                    env[m] = r
                    if measure:
                        stor[m] = [_storage(t) for t in _tensors(r)]
                    held.add(m)
                    if m == self.loss_fx:
                        loss = r
                    if m in self.grad_of_param:
                        grads[self.grad_of_param[m]] = r
                        grad_ptr[self.grad_of_param[m]] = _storage(r)[0]
                    if m in self.grad_src and isinstance(r, torch.Tensor):
                        node_grad_ptrs.add(_storage(r)[0])
                    for part in self.grad_parts.get(m, ()):
                        if r[part] is not None:
                            node_grad_ptrs.add(_storage(r[part])[0])
                    if measure:
                        b = live_bytes()
                        per_event[k] = max(per_event.get(k, 0), b)
                        if b > peak:
                            peak, where = b, (k, no, v, n.name)
                if profile is not None:
                    profile.append((v, time.perf_counter() - t0))
                if pending:
                    self._run_side(pending, env)
                for m in members[v]:
                    if m not in keep[v]:
                        env[m] = None
                        held.discard(m)
                live.add(v)
        self.per_event = per_event
        self.last_env, self.last_held = env, held  # for debugging
        return (peak if measure else None), where, grads, loss

    def _run_side(self, pending, env):
        """Runs, once, each buffer-writing op outside the nodes whose
        inputs are now available."""
        done = []
        for i in pending:
            n = self.fx[i]
            if all(env[self.index[x]] is not None for x in n.all_input_nodes):
                env[i] = self._call(n, env)
                done.append(i)
        for i in done:
            pending.remove(i)


def _fetcher(a, idx):
    """A function env -> `a` with every FX node replaced by env[its index]
    (tuples, lists and dicts rebuilt; constants shared)."""
    import torch
    if isinstance(a, torch.fx.Node):
        i = idx[a]
        return lambda env: env[i]
    if isinstance(a, (tuple, list)):
        fs = [_fetcher(x, idx) for x in a]
        if not any(getattr(f, "dynamic", True) for f in fs):
            return _const(a)
        if isinstance(a, tuple):
            return lambda env: tuple(f(env) for f in fs)
        return lambda env: [f(env) for f in fs]
    if isinstance(a, dict):
        fs = {k: _fetcher(x, idx) for k, x in a.items()}
        if not any(getattr(f, "dynamic", True) for f in fs.values()):
            return _const(a)
        return lambda env: {k: f(env) for k, f in fs.items()}
    return _const(a)


def _const(a):
    f = lambda env: a
    f.dynamic = False
    return f


def _alias_op(target):
    schema = getattr(target, "_schema", None)
    return schema is not None and any(r.alias_info is not None
                                      for r in schema.returns)


# --------------------------------------------------------------------------
# One replay, measured.


class Replayer:
    """Rebuilds one export once and replays any number of schedules on it."""

    def __init__(self, path, device="cpu", threads=1, remat="build/remat"):
        import torch
        if threads:
            torch.set_num_threads(threads)
        self.torch = torch
        self.path, self.device, self.remat = path, device, remat
        self.graph = load_graph(path)
        self.step = Step(path, self.graph, device)
        self.program = Program(self.step)
        self.eager_grads, self.eager_loss, self.eager_buffers = \
            self.step.eager()
        self._noremat = None

    def sync(self):
        if self.device != "cpu":
            self.torch.cuda.synchronize()

    def _time_one(self, events, path):
        """(wall seconds, CPU seconds of this process) of one replay. The
        CPU time does not count what other processes take from a shared
        machine, so on the CPU with one thread it is the steadier figure;
        on CUDA it counts only the host's share and is not comparable."""
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
            self.program.run(base, "noremat schedule")
            self.program.run(events, path)
        mine, theirs = [], []
        for _ in range(repeats):
            theirs.append(self._time_one(base, "noremat schedule"))
            mine.append(self._time_one(events, path))
        self.step.reset_buffers()
        return mine, theirs

    def noremat(self):
        """(events, simulated cost) of the graph's NoRemat schedule."""
        if self._noremat is None:
            sched, _ = solve(self.remat, self.path, "noremat", None, [])
            try:
                events = read_schedule(sched, len(self.graph["nodes"]))
            finally:
                os.unlink(sched)
            _, cost, _ = simulate(self.graph, events, "noremat schedule")
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
        events = read_schedule(sched_path, len(g["nodes"]))
        sim_at = {}
        sim_peak, sim_cost, length = simulate(g, events, sched_path, sim_at)
        cuda_peak = None
        if self.device != "cpu":
            self.sync()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
        t0 = time.perf_counter()
        peak, where, grads, loss = self.program.run(events, sched_path,
                                                    measure=True)
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
            "time_seconds": t,
            "time_samples_seconds": [x[0] for x in samples],
            "noremat_time_seconds": nr_time,
            "noremat_time_samples_seconds": [x[0] for x in nr_samples],
            "measured_overhead": overhead,
            "cpu_seconds": cpu,
            "noremat_cpu_seconds": nr_cpu,
            "measured_overhead_cpu": overhead_cpu,
            "gradients_equal": equal,
            "max_abs_gradient_difference": worst,
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


def write_json(path, obj):
    """Temp file + rename: no partial output."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".",
                               prefix=".replay.")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(obj, f, indent=1)
            f.write("\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def parse_args(argv):
    p = argparse.ArgumentParser(
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
        description="Replay a schedule on the real PyTorch training step an "
        "export of scripts/export_torch.py was traced from: measured peak "
        "of live activation storage, step time vs the NoRemat replay, and "
        "every parameter gradient vs a plain eager step.",
        )
    p.add_argument("graph", help="export of scripts/export_torch.py")
    p.add_argument("schedule", nargs="?",
                   help="schedule file (c <id> / f <id>); or use "
                   "--algorithm and --budget")
    p.add_argument("-a", "--algorithm",
                   help="get the schedule from `remat solve -a NAME`")
    p.add_argument("-b", "--budget", help="budget for --algorithm (bytes, "
                   "or 8MiB ...)")
    p.add_argument("-p", "--param", action="append", default=[],
                   help="algorithm parameter k=v (repeatable)")
    p.add_argument("--remat", default="build/remat",
                   help="the remat binary (default build/remat)")
    p.add_argument("--device", default="cpu", help="cpu or cuda[:N]")
    p.add_argument("--threads", type=int, default=1,
                   help="torch CPU threads (default 1: steadier timings; 0 "
                   "keeps torch's default)")
    p.add_argument("--repeats", type=int, default=5,
                   help="timed replays, each paired with one of NoRemat "
                   "(median); 0: measure memory and gradients only")
    p.add_argument("--warmup", type=int, default=1,
                   help="untimed replays before timing")
    p.add_argument("--cost-graph",
                   help="an export of the same step with --cost measured: "
                   "also predict the overhead with its costs")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object on stdout")
    p.add_argument("-o", "--out", help="also write the JSON object here")
    args = p.parse_args(argv)
    if (args.schedule is None) == (args.algorithm is None):
        p.error("give a schedule file or --algorithm, not both or neither")
    if args.repeats < 0 or args.warmup < 0:
        p.error("--repeats and --warmup must be >= 0")
    if args.device != "cpu" and not args.device.startswith("cuda"):
        p.error(f"--device must be cpu or cuda[:N], not '{args.device}'")
    return args


def main(argv):
    args = parse_args(argv)
    sched, tmp = args.schedule, None
    try:
        if args.device.startswith("cuda"):
            import torch
            if not torch.cuda.is_available():
                raise BadInput(f"--device {args.device}: torch "
                               f"{torch.__version__} sees no CUDA device")
        r = Replayer(args.graph, args.device, args.threads, args.remat)
        cost_graph = load_cost_graph(args.cost_graph, r.graph) \
            if args.cost_graph else None
        if args.algorithm:
            tmp, _ = solve(args.remat, args.graph, args.algorithm,
                           args.budget, args.param)
            sched = tmp
        out = r.replay(sched, args.repeats, args.warmup, cost_graph)
        if args.algorithm:
            out.update(schedule=None, algorithm=args.algorithm,
                       budget=args.budget, params=args.param)
    except BadInput as e:
        print(f"replay_torch.py: {e}", file=sys.stderr)
        return 2
    finally:
        if tmp:
            os.unlink(tmp)
    if args.out:
        write_json(args.out, out)
    if args.json:
        json.dump(out, sys.stdout, indent=1)
        print()
    else:
        timing = "not timed" if out["measured_overhead"] is None else (
            f"measured {out['measured_overhead']:.3f} "
            f"({out['time_seconds'] * 1e3:.1f} ms vs NoRemat "
            f"{out['noremat_time_seconds'] * 1e3:.1f} ms)")
        print(f"{out['graph']}: length {out['length']}, "
              f"peak simulated {out['simulated_peak_bytes']:,} measured "
              f"{out['measured_peak_bytes']:,} bytes; overhead predicted "
              f"{out['predicted_overhead']:.3f} {timing}; gradients "
              f"{'equal' if out['gradients_equal'] else 'DIFFER'}, buffers "
              f"{'equal' if out['buffers_equal'] else 'DIFFER'}")
    return 0 if out["gradients_equal"] and out["buffers_equal"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
