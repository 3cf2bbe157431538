"""Train a PyTorch model within an activation-memory budget, with the
fastest schedule any registered algorithm finds for it.

    import rematbench.torch as rt
    plan = rt.plan(model, (x, y), nn.CrossEntropyLoss(), budget=0.5)
    print(plan)                      # every algorithm: peak, overhead, time
    for x, y in batches:             # same shapes as the example batch
        opt.zero_grad()
        loss = plan.step(x, y)       # forward + backward under the schedule
        opt.step()                   # gradients are in each p.grad
    plan.replay()                    # measured peak and time vs NoRemat

plan() traces one training step with rematbench.trace (the exporter of
scripts/export_torch.py: the joint forward+backward graph of ATen ops,
costs measured on the model's device), solves it with every registered
algorithm that suits the graph's size, judges every schedule with the
harness's simulator and keeps the feasible one with the least predicted
overhead. plan.step runs that schedule compiled into a program
(rematbench.program: an FX GraphModule of the schedule's ops in order, run
eagerly or, after plan.compile(), by inductor), which gives the gradients,
loss and batch-norm statistics of plain training (bit for bit on the CPU,
eagerly). plan.replay() interprets the schedule with rematbench.executor
(the replayer of scripts/replay_torch.py) to count live storages.
remat(model, loss_fn, budget) is the same in one line: a callable training
step that plans on its first call.
"""

import collections
import concurrent.futures
import json
import math
import operator
import os
import platform
import statistics
import time
import types

import torch
import torch.nn as nn

import rematbench
from rematbench import executor, program as _program_mod, trace


class _LossStep(nn.Module):
    """The traced module: loss_fn(model(*inputs[:-1]), inputs[-1])."""

    def __init__(self, model, loss_fn):
        super().__init__()
        self.model = model
        self.loss_fn = loss_fn

    def forward(self, *inputs):
        *xs, target = inputs
        return self.loss_fn(self.model(*xs), target)


def _rng_state(device):
    return (torch.get_rng_state(),
            torch.cuda.get_rng_state(device) if device.type == "cuda"
            else None)


def _set_rng_state(state, device):
    torch.set_rng_state(state[0])
    if state[1] is not None:
        torch.cuda.set_rng_state(state[1], device)


def _budget_bytes(budget, noremat_peak):
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


def _chosen_algorithms(algorithms, graph, exact_max_nodes):
    """(specs to run, {name: why skipped})."""
    if algorithms == "all":
        infos = rematbench.algorithms()
        skipped = {a.name: f"exact; skipped above {exact_max_nodes} nodes "
                   f"(the graph has {graph.num_nodes})"
                   for a in infos
                   if a.exact and graph.num_nodes > exact_max_nodes}
        return [a.name for a in infos if a.name not in skipped], skipped
    if isinstance(algorithms, str):
        algorithms = [algorithms]
    for spec in algorithms:
        rematbench.algorithm(spec.split(":")[0])  # Error for unknown names
    return list(algorithms), {}


def _solve_all(graph, specs, budget, timeout, threads):
    """{spec: Solution}, solved in parallel (the GIL is released)."""
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        futures = {s: pool.submit(rematbench.solve, graph, s, budget,
                                  None, timeout) for s in specs}
        return {s: f.result() for s, f in futures.items()}


def _program_peak(program, traced, schedule, anchoring=None):
    """The activation peak of `schedule` run as a program with `anchoring`
    (program.build's): the largest of _program_timeline's figures."""
    return max((b for _, b in _program_timeline(program, traced, schedule,
                                                anchoring)), default=0)


def _program_timeline(program, traced, schedule, anchoring=None):
    """[(event index, bytes)]: for each computation in `schedule` (its
    index there), the activation memory while it runs as a program: the
    simulated memory (docs/model.md) of the schedule with each value, or
    each part of a multi-output value, freed after its last reader as the
    program frees it (_releases), plus what the program holds beside the
    schedule's values (_held_beside)."""
    events = Plan._as_events(schedule)
    return _held_beside(program, traced, events,
                        _schedule_timeline(program, traced, events),
                        anchoring)


def _schedule_timeline(program, traced, events):
    """[(event index, node, bytes before it, bytes it adds)] for each
    computation in `events`: the program's memory without the generator
    states (the loss included: it is returned, so it is held from its
    computation to the end), and the memory of the node's parts that the
    program computes there (_releases) with its workspace, and with the
    parameter gradients it makes where it is not the node's last
    computation (_gradient_bytes)."""
    nodes = traced.graph["nodes"]
    loss = next((n["id"] for n in nodes if n["kind"] == "loss"), None)
    released, skipped = _releases(program, events, nodes, loss)
    grads = _gradient_bytes(program, len(nodes))
    last = {v: i for i, (k, v, _) in enumerate(events) if k == "c"}
    mem, extra, timeline, loss_held = 0, 0, [], False
    for i, (k, v, _) in enumerate(events):
        n = nodes[v]
        if k == "f":  # other values are freed by `released`
            if v == loss:
                mem -= n["mem"]
                loss_held = True
                extra += n["mem"]
            continue
        if v == loss and loss_held:
            loss_held = False
            extra -= n["mem"]
        own = n["mem"] - skipped[i]
        # A computation before the last allocates the parameter gradients
        # it makes too, which only the last one's become (the step's
        # outputs).
        again = grads[v] if last[v] != i else 0
        timeline.append((i, v, mem + extra,
                         own + n.get("workspace", 0) + again))
        mem += own - released[i]
    return timeline


def _held_beside(program, traced, events, timeline, anchoring=None):
    """_schedule_timeline's `timeline` as (event index, bytes) with the
    generator states the program holds (CPU: a 5,056-byte tensor each on
    the model's device; on CUDA the states are in host memory). A random
    op that the schedule computes more than once has its recomputations
    start from a saved state: its own, saved at its first execution, or,
    with `anchoring` (program.build's (anchors, saves, chains)), its
    anchor's until the recomputation that saves its own (from then on its
    own), or the state a recomputation of the random op before it left.
    Each saved state is held from where it is saved to the last
    recomputation that starts from it. A first execution saves the state
    it starts from while it runs (run_and_save_rng_state), kept only if
    recomputations start from it. Each recomputation saves the state it
    interrupts while it runs, and one that starts from an anchor before it
    first replays the draws in between, one at a time: the largest of them
    (program's draw_bytes) is held before the op's own result is. States
    of random ops run out of eager order are recorded before the step and
    held through it, and every execution runs from one."""
    owner = program.owner
    state = _state_bytes(program, traced)
    in_order = program.random_in_eager_order(events)
    computed = collections.Counter(v for k, v, _ in events if k == "c")
    runs = collections.defaultdict(list)  # node -> its computation events
    for i, (k, v, _) in enumerate(events):
        if k == "c":
            runs[v].append(i)
    base = 0 if in_order else state * len(program.random)
    delta = collections.Counter()  # states saved (+) and dropped (-)
    draws = collections.Counter()  # event -> largest draw it replays
    # event -> states it takes after its draws (its op's own state, the
    # state after its op)
    saving = collections.Counter()
    kept = set()  # random ops whose first execution's state is held
    if in_order:
        anchors, saves, chains = anchoring or ({}, {}, {})
        order = sorted(program.random)
        sizes = _draw_sizes(program)
        until = {}  # saved state -> last event that starts from it
        for p, m in enumerate(order):
            v = owner[m]
            if computed[v] < 2:
                continue
            a = anchors.get(m, m)
            if a == m:
                until[a] = max(until.get(a, -1), runs[v][-1])
                continue
            save = saves.get(m)
            if save is not None:
                saving[save] += state
                delta[save] += state
                delta[runs[v][-1] + 1] -= state
            replaying = [i for i in runs[v][1:] if (m, i) not in chains and
                         (save is None or i <= save)]
            until[a] = max([until.get(a, -1)] + replaying)
            draw = max(sizes[j] for j in order[order.index(a):p])
            for i in replaying:
                draws[i] = max(draws[i], draw)
        # The state after the op run at j, one tensor however many of m's
        # recomputations start from it.
        spans = {}
        for (m, i), j in chains.items():
            spans[(m, j)] = max(spans.get((m, j), -1), i)
        for (m, j), i in spans.items():
            saving[j] += state
            delta[j] += state
            delta[i + 1] -= state
        for a, i in until.items():
            delta[runs[owner[a]][0]] += state
            delta[i + 1] -= state
        kept = set(until)
    random = {owner[m] for m in program.random}
    # Nodes whose first execution saves a state it drops after the op.
    dropped = {owner[m] for m in program.random if m not in kept}
    out, held, seen, at = [], base, set(), 0
    for i, v, before, own in timeline:
        while at <= i:
            held += delta.get(at, 0)
            at += 1
        again = v in seen
        seen.add(v)
        replay = state if v in random and (again or not in_order or
                                          v in dropped) else 0
        draw = draws.get(i, 0)
        # States taken here are taken after the draws.
        new = saving.get(i, 0)
        if draw:
            # The draws run before the op allocates; a node of other ops
            # besides the random one may hold some of its own by then.
            own = max(own + new, draw) if len(program.members[v]) == 1 \
                else own + new + draw
        else:
            own += new
        out.append((i, before + own + held - new + replay))
    return out


def _draw_sizes(program):
    """{FX index of a random op: the bytes its replayed draw holds}
    (program's draw_bytes), built once per program."""
    if getattr(program, "draw_sizes", None) is None:
        program.draw_sizes = {m: _program_mod.draw_bytes(program.fx[m])
                              for m in program.random}
    return program.draw_sizes


def _anchorings(program, events):
    """Candidate anchors (program.build's) for `events`, fewest replayed
    draws first: for k = 0, 1, 2, 3, 4, 6, 8, ... each random op the
    schedule recomputes starts from the state saved at the nearest anchor
    at most k random ops before it in eager order (an anchor is a
    recomputed random op), so a recomputation replays at most k draws and
    the program holds about one state per k + 1 random ops; the last
    candidate has the fewest anchors (one, unless a random op that draws
    by value stands between). Only where the schedule first runs the
    random ops in eager order (otherwise every state is recorded before
    the step); k = 0, {}, is every recomputed random op starting from its
    own state. A random op that is its own anchor is left out."""
    computed = collections.Counter(v for k, v, _ in events if k == "c")
    order = sorted(program.random)
    needed = [p for p, m in enumerate(order)
              if computed[program.owner[m]] > 1]
    if not needed or not program.random_in_eager_order(events):
        return [{}]
    # A replay draws the random ops from its anchor up to its own: none of
    # them may draw by value (program.replayable).
    barrier, last = [], -1
    for p, m in enumerate(order):
        barrier.append(last)
        if not _program_mod.replayable(program.fx[m]):
            last = p
    out, k = [], 0
    while True:
        anchors, a = {}, None
        for p in needed:
            if a is None or p - a > k or barrier[p] >= a:
                a = p
            anchors[order[p]] = order[a]
        shared = {m: a for m, a in anchors.items() if a != m}
        if not out or shared != out[-1]:
            out.append(shared)
        if k >= needed[-1] - needed[0]:
            return out
        k = k + 1 if k < 4 else k + k // 2


def _replay_cost(program, traced, events, anchoring):
    """The time (the graph's cost units) of the draws that recomputations
    replay with `anchoring` (program.build's): each draw costs what its
    random op's node costs (the op alone in a dropout's node)."""
    anchors, saves, chains = anchoring
    nodes = traced.graph["nodes"]
    order = sorted(program.random)
    pos = {m: p for p, m in enumerate(order)}
    computed = collections.defaultdict(list)
    for i, (k, v, _) in enumerate(events):
        if k == "c":
            computed[v].append(i)
    total = 0
    for m, a in anchors.items():
        recomputed = computed[program.owner[m]][1:]
        runs = sum(1 for i in recomputed if i <= saves.get(m, i) and
                   (m, i) not in chains)
        total += runs * sum(nodes[program.owner[j]]["cost"]
                            for j in order[pos[a]:pos[m]])
    return total


def _memory_walk(program, traced, events, timeline, anchoring):
    """What _saves and _chains place states on: a state's bytes, the
    program's memory beside the schedule event by event under `anchoring`
    (_held_beside's (event, bytes) figures, the position of each event
    among them and the bytes alone, which the caller raises where it holds
    a state), and the random ops in eager order with their positions."""
    figures = _held_beside(program, traced, events, timeline, anchoring)
    order = sorted(program.random)
    return (_state_bytes(program, traced), figures,
            {i: p for p, (i, _) in enumerate(figures)},
            [b for _, b in figures], order,
            {m: p for p, m in enumerate(order)})


def _saves(program, traced, events, timeline, anchors, limit):
    """program.build's saves for `anchors`: for each random op that
    starts from an anchor before it, the earliest recomputation from which
    holding its own state to its last recomputation keeps the program's
    memory within `limit` (the recomputations after it replay nothing);
    ops with the most replayed draws to spare first. Each state added
    raises the memory it spans; an anchor dropped earlier, or draws not
    replayed, only lower it, so the program stays within `limit`."""
    state, figures, at, mem, _, pos = _memory_walk(
        program, traced, events, timeline, (anchors, {}, {}))
    recomputed = collections.defaultdict(list)
    for i, (k, v, _) in enumerate(events):
        if k == "c":
            recomputed[v].append(at[i])
    saves = {}
    for m in sorted(anchors, key=lambda m: -(pos[m] - pos[anchors[m]]) *
                    len(recomputed[program.owner[m]])):
        runs = recomputed[program.owner[m]][1:]
        if len(runs) < 2:
            continue  # nothing after the only recomputation to spare
        top, best, q = -math.inf, None, runs[-1]
        for r in reversed(runs[:-1]):
            top = max(top, max(mem[r:q + 1]))
            q = r - 1
            if top + state > limit:
                break
            best = r
        if best is not None:
            saves[m] = figures[best][0]
            for p in range(best, runs[-1] + 1):
                mem[p] += state
    return saves


def _chains(program, traced, events, timeline, anchors, saves, limit):
    """program.build's chains for `anchors` and `saves`: a recomputation
    that would replay draws from an anchor starts instead from the state
    that the latest recomputation of the random op just before it (in
    eager order) left, kept from then on (that op ran from its own eager
    state, so the generator after it stands where it does before this
    one), where holding it keeps the memory within `limit`; earliest
    first. A forward recomputation running several random ops in order
    then replays only for its first one."""
    state, figures, at, mem, order, pos = _memory_walk(
        program, traced, events, timeline, (anchors, saves, {}))
    runs = collections.defaultdict(list)
    for i, (k, v, _) in enumerate(events):
        if k == "c":
            runs[v].append(i)
    found = []
    for m in anchors:
        v, u = program.owner[m], program.owner[order[pos[m] - 1]]
        if u == v:
            continue
        for i in runs[v][1:]:
            if i >= saves.get(m, math.inf):
                break  # the saving recomputation replays, later ones none
            before = [j for j in runs[u] if j < i]
            if len(before) > 1:  # a recomputation, not the first run
                found.append((i, m, before[-1]))
    chains, held = {}, {}  # held: (m, j) -> where its state is held to
    for i, m, j in sorted(found):
        lo = at[held[(m, j)]] + 1 if (m, j) in held else at[j]
        if max(mem[lo:at[i] + 1], default=-math.inf) + state <= limit:
            chains[(m, i)] = j
            held[(m, j)] = i
            for p in range(lo, at[i] + 1):
                mem[p] += state
    return chains


def _anchored(program, traced, solution, budget=None):
    """(anchoring, program peak, overhead) of `solution` run as a program,
    anchoring being program.build's (anchors, saves, chains): of the
    candidate anchors (_anchorings) whose program peak is within `budget`,
    with the saves (_saves) and then the chains (_chains) that fit, the
    one of least predicted overhead; when none is or no budget is given,
    those of the least peak, with the saves and chains that keep it. The
    overhead adds the replayed draws' time to the schedule's."""
    events = Plan._as_events(solution.schedule)
    timeline = _schedule_timeline(program, traced, events)
    base = solution.json.get("base_cost") or \
        solution.json["cost"] / solution.overhead

    def held(anchoring):
        return max((b for _, b in _held_beside(program, traced, events,
                                                timeline, anchoring)),
                   default=0)

    peaks = [(held((a, {}, {})), k, a)
             for k, a in enumerate(_anchorings(program, events))]
    fit = [t for t in peaks if budget is not None and t[0] <= budget]
    if fit and not fit[0][2]:
        return ({}, {}, {}), fit[0][0], solution.overhead
    if not fit:
        fit = [min(peaks)]
    best = None
    for peak, _, anchors in fit:
        limit = budget if budget is not None else peak
        saves = _saves(program, traced, events, timeline, anchors, limit)
        anchoring = (anchors, saves, _chains(program, traced, events,
                                             timeline, anchors, saves,
                                             limit))
        overhead = solution.overhead + _replay_cost(
            program, traced, events, anchoring) / base
        if best is None or overhead < best[2]:
            best = (anchoring, held(anchoring), overhead)
    return best


def _gradient_bytes(program, n):
    """[bytes of the parameter gradients that node v's ops allocate] for
    the n nodes: the storage of each gradient the step returns, made by one
    of v's members (a multi-output op's outputs among them, as a
    convolution's backward makes its weight's). The node's `mem` leaves
    them out (they are static memory), which holds for the computation
    whose gradients the step returns, its last; every computation before
    it allocates them again, briefly, and recomputing a convolution's
    backward in ResNet-50's layer4 allocates 9.4 MB that way. Built once
    per program."""
    if getattr(program, "gradient_bytes", None) is not None:
        return program.gradient_bytes
    fx = program.fx

    def nbytes(val):
        return val.untyped_storage().nbytes() \
            if isinstance(val, torch.Tensor) else 0

    out = [0] * n
    for m, v in program.owner.items():
        val = fx[m].meta.get("val")
        if m in program.grad_parts:
            out[v] += sum(nbytes(val[k]) for k in program.grad_parts[m])
        elif m in program.grad_src and fx[m].target is not \
                operator.getitem and not executor._alias_op(fx[m].target):
            out[v] += nbytes(val)
    program.gradient_bytes = out
    return out


def _node_parts(program, nodes):
    """(parts, member_reads, instance) of the traced step: parts[v] maps
    each storage that node v keeps for other nodes (an FX member, views
    followed to their base) to its bytes, for nodes that keep several whose
    sizes add up to the node's memory (a batch norm's output and
    statistics); member_reads[m] maps each other node that FX member m
    reads to the set of its parts m reads (None: the whole node, or a part
    not known); instance is _instance's. Built once per program."""
    if getattr(program, "node_parts", None) is not None:
        return program.node_parts
    fx, owner, index = program.fx, program.owner, program.index
    parts, root_of = {}, {}
    for v, keep in enumerate(program.keep):
        roots = {}
        for m in keep:
            r = m
            while fx[r].op == "call_function" and \
                    executor._alias_op(fx[r].target) and fx[r].args and \
                    isinstance(fx[r].args[0], torch.fx.Node) and \
                    owner.get(index[fx[r].args[0]]) == v:
                r = index[fx[r].args[0]]
            root_of[m] = r
            val = fx[r].meta.get("val")
            roots[r] = val.untyped_storage().nbytes() \
                if isinstance(val, torch.Tensor) else None
        if len(roots) > 1 and None not in roots.values() and \
                sum(roots.values()) == nodes[v]["mem"]:
            parts[v] = roots
    member_reads = {}
    for u, members in enumerate(program.members):
        for m in members:
            got = member_reads[m] = {}
            for x in fx[m].all_input_nodes:
                v = owner.get(index[x])
                if v is not None and v != u:
                    got.setdefault(v, set()).add(
                        root_of.get(index[x]) if v in parts else None)
    program.node_parts = parts, member_reads, _instance(program, parts,
                                                        root_of)
    return program.node_parts


def _instance(program, parts, root_of):
    """instance(v, read) -> (the parts of node v (_node_parts) that the
    program does not compute, the FX members it runs) when the other nodes
    read only the parts `read` of an instance of v: program.build leaves
    out an op whose result no later op reads (dead code), unless it draws
    random numbers, writes a buffer or feeds the step's outputs. A
    recomputation of a batch-norm-and-ReLU node for the batch norm's
    backward, which reads only the statistics, runs the batch norm without
    the ReLU, and so does not read the batch norm's output (which the batch
    norm still allocates, and frees at once)."""
    fx, index = program.fx, program.index
    pinned = set(program.random) | set(program.writes) | set(program.side)
    for n in fx[-1].all_input_nodes:
        pinned.add(index[n])
    memo = {}

    def made_by(r):
        """The member that allocates part r: a multi-output op allocates
        its outputs whichever of them are read."""
        n = fx[r]
        return index[n.args[0]] if n.target is operator.getitem else r

    def instance(v, read):
        key = (v, frozenset(read))
        if key not in memo:
            members = program.members[v]
            inside, keep = set(members), set(program.keep[v])
            needed = set()
            for m in reversed(members):
                if m in pinned or (m in keep and root_of[m] in read) or any(
                        index[u] in needed for u in fx[m].users
                        if index[u] in inside):
                    needed.add(m)
            memo[key] = ({r for r in parts[v] if made_by(r) not in needed},
                         frozenset(needed))
        return memo[key]
    return instance


def _releases(program, events, nodes, loss):
    """({position in `events`: bytes the program frees right after that
    event}, {position of a computation: bytes of its node's parts that it
    does not compute}): each value (or each part of it, _node_parts) is
    freed after the last computation that reads it before the schedule
    frees it, or after its own computation when none does; a part that no
    computation reads before then is not computed, nor are the ops only it
    needs, whose inputs are then not read (_instance; found again until
    nothing changes, since a computation left out can leave parts of its
    inputs unread). The program frees a value when its last reader has run
    (FX frees a node's value after its last use), which can be before the
    schedule's free; a value the schedule never frees is held to the end.
    The loss is left out (the program returns it: _program_timeline holds
    it)."""
    parts, member_reads, instance = _node_parts(program, nodes)
    memo = {}

    def reads(v, needed):
        """{input node: its parts read} by a computation of v that runs
        the members `needed` (None: all). An input that no member reads in
        FX (a relation only the export knows) is read whole."""
        if (v, needed) not in memo:
            out = {}
            for u in nodes[v]["inputs"]:
                whole = parts.get(u, (None,))
                every = set().union(*(member_reads[m].get(u, ())
                                      for m in program.members[v]))
                got = every if needed is None else set().union(
                    *(member_reads[m].get(u, ()) for m in needed))
                if not every:
                    out[u] = whole
                elif got:  # else only members left out read it
                    out[u] = whole if None in got else got
            memo[(v, needed)] = out
        return memo[(v, needed)]

    needed_at = {}  # computation -> the members it runs (None: all)
    while True:
        released, skipped = collections.Counter(), collections.Counter()
        last_compute, last_read, gone, found = {}, {}, {}, {}

        def close(v):
            """The instance of v computed at last_compute[v] ends."""
            i = last_compute[v]
            gone[v], found[i] = instance(v, set(last_read[v])) \
                if v in parts else (set(), None)
            skipped[i] += sum(parts[v][r] for r in gone[v])

        for i, (kind, v, _) in enumerate(events):
            if kind == "c":
                for u, keys in reads(v, needed_at.get(i)).items():
                    for key in keys:
                        last_read.setdefault(u, {})[key] = i
                if v in last_compute and v not in gone:
                    close(v)
                last_compute[v] = i
                last_read[v] = {}  # a new instance
                gone.pop(v, None)
            elif kind == "f" and v in last_compute and v != loss:
                if v not in gone:
                    close(v)
                for key, b in parts.get(v, {None: nodes[v]["mem"]}).items():
                    if key not in gone[v]:
                        released[last_read[v].get(key, last_compute[v])] += b
        for v in last_compute:
            if v not in gone:
                close(v)
        if found == needed_at:
            return released, skipped
        needed_at = found


def _state_bytes(program, traced):
    """Bytes of one saved generator state on the measured device: the CPU
    generator's state tensor when the model is on the CPU; 0 on CUDA
    (states are host tensors there) or without random ops."""
    if traced.device != "cpu" or not program.random:
        return 0
    return torch.get_rng_state().numel()


def _most_held(program, traced):
    """The most _program_peak can add to a schedule's simulated peak: every
    random op's state, one more while a replay runs, and the loss."""
    loss = sum(n["mem"] for n in traced.graph["nodes"]
               if n["kind"] == "loss")
    return _state_bytes(program, traced) * (len(program.random) + 1) + loss


def _row(spec, solution, held=0, budget=None, overhead=None):
    if solution.json.get("transfer_bytes"):
        # The executor runs computes and frees; offloads (vdnn, swap_remat
        # under a tight budget) are simulated only (README, "Time and
        # offloading").
        return {"algorithm": spec, "status": "skipped", "peak_bytes": None,
                "overhead": None, "solve_seconds": solution.solve_seconds,
                "message": "moves values to host memory, which replay does "
                           "not run"}
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


def _rank(row):
    """Feasible first, by predicted overhead, then solve time; skipped
    algorithms last."""
    feasible = row["status"] == "feasible"
    return (not feasible, row["overhead"] if feasible else math.inf,
            row["status"] == "skipped", row["solve_seconds"] or 0)


def plan(model, example_inputs, loss_fn, budget, algorithms="all",
         timeout=10.0, exact_max_nodes=100, cost="measured", repeats=3,
         threads=None):
    """Plans training `model` within an activation-memory budget.

    example_inputs: a tuple (model inputs..., target); a step computes
        loss = loss_fn(model(*inputs[:-1]), inputs[-1]). Later steps must
        have the same shapes and dtypes.
    budget: the bound on the simulated activation peak (what training
        holds besides parameters, gradients and the batch: the graph's
        static_bytes). An int or a str such as '512MiB' is bytes; a float
        is a fraction of the NoRemat activation peak (0.5: half of what
        plain training holds).
    algorithms: "all" (every registered algorithm; exact ones only on
        graphs of at most `exact_max_nodes` nodes) or a list of names or
        'name:k=v,...' specs. Each solve gets `timeout` seconds; they run
        on `threads` threads (default: one per CPU).
    cost: "measured" (each op's median time over `repeats` runs of the
        step on the model's device, nanoseconds) or "flop".

    Tracing and timing run the step several times; the model's buffers and
    the RNG state are restored afterwards. Raises rematbench.Error when no
    algorithm fits the budget, naming the smallest budget that fits.
    """
    params = list(model.parameters())
    if not params:
        raise rematbench.Error("plan: the model has no parameters")
    if not all(p.requires_grad for p in params):
        raise rematbench.Error("plan: every parameter must require grad "
                               "(frozen parameters are not supported)")
    device = params[0].device
    inputs = tuple(example_inputs)
    step = _LossStep(model, loss_fn)
    was_training = model.training
    rng = _rng_state(device)
    t0 = time.perf_counter()
    try:
        nodes, g2, _ = trace.trace_nodes(step, inputs, "aten", cost,
                                         repeats)
    except trace.Unsupported as e:
        raise rematbench.Error(f"plan: {e}") from None
    finally:
        _set_rng_state(rng, device)
        model.train(was_training)
    trace_seconds = time.perf_counter() - t0
    p_bytes = sum(p.numel() * p.element_size() for p in step.parameters())
    in_bytes = sum(t.numel() * t.element_size() for t in inputs)
    name = f"torch_{type(model).__name__}"
    doc = {"format": "rematbench-graph", "version": 1, "name": name,
           "static_bytes": 2 * p_bytes + in_bytes,
           "units": {"memory": "bytes",
                     "cost": "ns" if cost == "measured" else "flop"},
           "provenance": {"generator": "rematbench.torch",
                          "model": type(model).__name__,
                          "device": str(device), "torch": torch.__version__,
                          "python": platform.python_version(),
                          "host": platform.node(),
                          "threads": torch.get_num_threads()},
           "nodes": nodes}
    graph = rematbench.parse_graph_json(json.dumps(doc), name)
    traced = types.SimpleNamespace(
        g2=g2, graph={"nodes": nodes}, params=list(step.parameters()),
        buffers=list(step.buffers()), inputs=inputs, path=name,
        device=device.type, seed=None)
    return _solve_plan(model, traced, graph, budget, algorithms, timeout,
                       exact_max_nodes, threads, trace_seconds, None)


def _solve_plan(model, traced, graph, budget, algorithms, timeout,
                exact_max_nodes, threads, trace_seconds, program):
    program = program or executor.Program(traced)
    if not hasattr(traced, "noremat_peak_bytes"):
        traced.noremat_peak_bytes = _program_peak(
            program, traced, rematbench.solve(graph, "noremat").schedule)
    noremat = traced.noremat_peak_bytes
    budget_bytes = _budget_bytes(budget, noremat)
    specs, skipped = _chosen_algorithms(algorithms, graph, exact_max_nodes)
    threads = threads or os.cpu_count() or 1
    solutions = _solve_all(graph, specs, budget_bytes, timeout, threads)
    anchored = {}
    for s in specs:
        solutions[s], a = _fitted(graph, s, solutions[s], budget_bytes,
                                  timeout, program, traced)
        if a is not None:
            anchored[s] = a
    rows = [_row(s, solutions[s], anchored[s][1] - solutions[s].peak_bytes
                 if s in anchored else 0, budget_bytes,
                 anchored[s][2] if s in anchored else None)
            for s in specs]
    rows += [{"algorithm": n, "status": "skipped", "peak_bytes": None,
              "overhead": None, "solve_seconds": None, "message": why}
             for n, why in skipped.items()]
    rows.sort(key=_rank)
    if rows[0]["status"] != "feasible":
        raise rematbench.Error(_nothing_fits(graph, budget_bytes, specs,
                                             solutions, timeout, threads,
                                             program, traced))
    plan = Plan(model, traced, graph, budget_bytes, rows, solutions,
                trace_seconds, program,
                {s: a for s, (a, _, _) in anchored.items()})
    plan._solve_args = (algorithms, timeout, exact_max_nodes, threads)
    return plan


def _fitted(graph, spec, solution, budget, timeout, program, traced):
    """(solution, _anchored's triple or None) of `spec` at `budget`. The
    program also holds what the schedule does not model (generator states,
    the returned loss), with the fewest replayed draws that fit. A
    schedule that fits only with replays, or not at all, is solved again
    below the budget by what its program held beyond its simulated peak
    (with the fewest states held, with every state saved) and by the most
    a program can add with every state saved (_most_held), smallest first,
    until one fits without replays: of those that fit, the one of least
    predicted overhead; the last one solved when none fits."""
    if solution.status != "feasible":
        return solution, None
    first = _anchored(program, traced, solution, budget)
    tried = [(solution, first)]
    margins = sorted({_program_peak(program, traced, solution.schedule) -
                      solution.peak_bytes, first[1] - solution.peak_bytes,
                      _most_held(program, traced)})
    if first[0][0] or first[1] > budget:
        for margin in margins:
            if not 0 < margin <= budget:
                continue
            again = rematbench.solve(graph, spec, budget - margin, None,
                                     timeout)
            if again.status != "feasible":
                break
            tried.append((again, _anchored(program, traced, again, budget)))
            if not tried[-1][1][0][0] and tried[-1][1][1] <= budget:
                break
    fits = [t for t in tried if t[1][1] <= budget]
    return min(fits, key=lambda t: t[1][2]) if fits else tried[-1]


def _nothing_fits(graph, budget, specs, solutions, timeout, threads,
                  program, traced):
    """The error text when no schedule fits: the budget against the NoRemat
    peak, the smallest budget at which one of these algorithms finds a
    schedule that fits as a program (bisection between the budget, or the
    graph's reach bound, and the least peak found; each probe solved as
    _solve_plan solves), and the bounds no schedule goes below."""
    def peak(s):
        return _anchored(program, traced, s)[1]

    # A budget fits when the schedule's simulated peak and its program
    # peak are both within it (the solvers judge the first).
    peaks = [(max(s.peak_bytes, peak(s)), spec)
             for spec, s in solutions.items() if s.valid]
    noremat = traced.noremat_peak_bytes
    hi = min(peaks)[0] if peaks else noremat
    # Probe with the heuristics: the exact methods would spend their whole
    # time limit at every probe.
    exact = {a.name for a in rematbench.algorithms() if a.exact}
    probes = [s for s in specs if s.split(":")[0] not in exact] or specs
    # lo never fits: plans recompute and never offload, and no such
    # schedule peaks below the reach bound.
    reach = graph.reach_lower_bound()["bytes"]
    lo = max(budget, reach - 1)
    most = _most_held(program, traced)

    def fits(mid):
        # As a plan is made (_fitted).
        found = []
        for spec, s in _solve_all(graph, probes, mid, timeout,
                                  threads).items():
            _, a = _fitted(graph, spec, s, mid, timeout, program, traced)
            if a is not None and a[1] <= mid:
                found.append(spec)
        return found

    # The least peak found was solved for another budget: solved for its
    # own, an algorithm may choose a cheaper schedule that the program
    # holds more of. Up from it until a plan made there fits.
    found = fits(hi)
    while not found and hi < noremat:
        lo, hi = hi, min(noremat, hi + max(most, hi // 100))
        found = fits(hi)
    who = found[0] if found else "noremat"
    while hi - lo > max(1, hi // 100):  # to 1%
        mid = (lo + hi) // 2
        found = fits(mid)
        if found:
            hi, who = mid, found[0]
        else:
            lo = mid
    return (f"{graph.name}: no algorithm fits the budget of {budget} bytes "
            f"({budget / noremat:.0%} of the NoRemat activation peak "
            f"{noremat} bytes); the "
            f"smallest budget that fits is {hi} bytes ({who}; no schedule "
            f"fits below {reach} bytes, the reach bound; the memory lower "
            f"bound is {graph.lower_bound_bytes})")


class Plan:
    """The planned training step: `table` (every algorithm's row, best
    first), `algorithm`, `schedule` and the traced `graph`."""

    def __init__(self, model, traced, graph, budget_bytes, table, solutions,
                 trace_seconds, program=None, anchorings=None):
        self.model, self.traced, self.graph = model, traced, graph
        self.budget_bytes, self.table = budget_bytes, table
        self._program = program or executor.Program(traced)
        # Plain training's activation peak as the program holds it (the
        # graph's NoRemat peak and the returned loss): budget 1.0.
        self.noremat_peak_bytes = traced.noremat_peak_bytes
        self.trace_seconds = trace_seconds
        self.algorithm = table[0]["algorithm"]
        self.solution = solutions[self.algorithm]
        self.schedule = self.solution.schedule
        self._solutions = solutions
        # algorithm -> its program's (anchors, saves, chains)
        self._anchorings = anchorings or {}
        self._events = self._as_events(self.schedule)
        self._built = {}  # (algorithm, rng_from_inputs) -> BuiltProgram
        self.compiled = False

    @property
    def predicted_peak_bytes(self):
        """The activation peak the plan's program will have: the schedule's
        simulated peak and what the program holds beside it (generator
        states of recomputed random ops, the returned loss)."""
        return next(r["peak_bytes"] for r in self.table
                    if r["algorithm"] == self.algorithm)

    @property
    def predicted_overhead(self):
        """The program's predicted step time against plain training's: the
        schedule's overhead and the draws its recomputations replay to
        reach a random op's generator state from an anchor's."""
        return next(r["overhead"] for r in self.table
                    if r["algorithm"] == self.algorithm)

    @property
    def anchoring(self):
        """(anchors, saves, chains) of the plan's program (program.build's):
        the random ops whose recomputations start from another's saved
        generator state, where each saves its own, and the recomputations
        that start from the state the one before left."""
        return self._anchorings.get(self.algorithm, ({}, {}, {}))

    @staticmethod
    def _as_events(schedule):
        return [(op, v, k) for k, (op, v) in enumerate(schedule)]

    def at(self, budget, algorithms=None, timeout=None):
        """A plan for the same traced step at another budget (bytes, or a
        fraction of the NoRemat peak), solved again without tracing again.
        Raises rematbench.Error as plan() does when nothing fits."""
        algos, t, exact_max, threads = self._solve_args
        return _solve_plan(self.model, self.traced, self.graph, budget,
                           algorithms or algos, timeout or t, exact_max,
                           threads, self.trace_seconds, self._program)

    def use(self, algorithm):
        """Runs later steps with another feasible row of the table."""
        s = self._solutions.get(algorithm)
        row = next((r for r in self.table if r["algorithm"] == algorithm),
                   None)
        if s is None or row is None or row["status"] != "feasible":
            raise rematbench.Error(f"plan: {algorithm} has no feasible "
                                   "schedule at this budget")
        self.algorithm, self.solution, self.schedule = algorithm, s, \
            s.schedule
        self._events = self._as_events(s.schedule)

    def _check(self, inputs):
        ref = self.traced.inputs
        if len(inputs) != len(ref):
            raise rematbench.Error(f"plan.step: {len(inputs)} inputs, the "
                                   f"plan was made for {len(ref)}")
        for i, (a, b) in enumerate(zip(inputs, ref)):
            if a.shape != b.shape or a.dtype != b.dtype or \
                    a.device != b.device:
                raise rematbench.Error(
                    f"plan.step: input {i} is {a.dtype} {tuple(a.shape)} on "
                    f"{a.device}; the plan was made for {b.dtype} "
                    f"{tuple(b.shape)} on {b.device} (plan again for other "
                    "shapes)")

    def program(self, algorithm=None):
        """The schedule of `algorithm` (default: the plan's) compiled into
        a program (rematbench.program.BuiltProgram: an FX GraphModule of
        the schedule's ops in order), built once."""
        algorithm = algorithm or self.algorithm
        s = self._solutions[algorithm]
        events = self._as_events(s.schedule)
        in_order = self._program.random_in_eager_order(events)
        key = (algorithm, not in_order)
        if key not in self._built:
            self._built[key] = _program_mod.build(
                self._program, events, rng_from_inputs=not in_order,
                anchoring=self._anchorings.get(algorithm))
        return self._built[key]

    def compile(self, compiled=True):
        """Later steps run the program compiled by inductor (compiled
        once, at the next step), or, with compiled=False, eagerly again.
        Compiled, gradients equal plain training's within float rounding
        (inductor's kernels sum in other orders), not bit for bit. The
        plan predicts the eager program's peak, not what inductor's graphs
        hold (its decompositions keep values of their own: 1.8x on a
        ResNet-50 on the CPU); compiled_within_budget() measures it."""
        self.compiled = compiled
        return self

    def compiled_within_budget(self, *inputs, tries=2):
        """A plan whose program compiled by inductor measures at or below
        this plan's budget: this one, or one solved again below the
        budget by the overshoot (at most `tries` times). Each try compiles
        the program and measures the allocator-level activation peak of a
        step on `inputs` (rematbench.measure.measure_step: two steps, one
        compiling, one measured; the model's gradients, buffers and
        generator are put back). When no compiled program fits, this plan
        comes back eager (compile(False)), whose peak is the predicted
        one. The plan returned has `compiled_attempts`: (budget solved
        for, algorithm, measured compiled peak) of every try."""
        from rematbench import measure
        budget, planned, p, attempts = self.budget_bytes, \
            self.budget_bytes, self, []
        for _ in range(tries + 1):
            p.compile(True)
            params = list(p.model.parameters())
            grads = [q.grad for q in params]
            try:
                peak = measure.measure_step(lambda: p.step(*inputs), p.model,
                                            timing=False)["peak_bytes"]
            finally:
                for q, g in zip(params, grads):
                    q.grad = g
            attempts.append((planned, p.algorithm, peak))
            if peak <= budget:
                p.compiled_attempts = attempts
                return p
            p.compile(False)
            p._built.clear()  # free the compiled graphs
            planned -= peak - budget + 1
            try:
                p = self.at(planned)
            except rematbench.Error:
                break
        self.compile(False)
        self.compiled_attempts = attempts
        return self

    def _flat_inputs(self, built, inputs):
        program = self._program
        flat = program._flat(inputs)
        # The gradient seed (a 1): made once, not in every step.
        if getattr(self, "_seed", None) is None:
            self._seed = flat[-1]
        flat[-1] = self._seed
        if built.rng_from_inputs:
            # The schedule draws random ops out of eager order: record the
            # generator's state before each in an eager-order pass.
            program.rebind(inputs)
            states = program.record_rng()
            flat.append([states[i] for i in sorted(program.random)])
        return flat

    def _run_program(self, inputs):
        built = self.program()
        flat = self._flat_inputs(built, inputs)
        if self.compiled:
            out = built.compiled(flat)(*flat)
        else:
            out = built(*flat)
        return out[1:], out[0]

    def _run(self, events, inputs, measure=False):
        """One step's ops under `events`: (peak or None, grads, loss)."""
        program = self._program
        program.rebind(inputs)
        program.rng_states = None if program.random_in_eager_order(events) \
            else program.record_rng()
        peak, _, grads, loss = program.run(events, "plan", measure=measure)
        return peak, grads, loss

    def step(self, *inputs):
        """Forward and backward of one batch (the layout of the example
        inputs) under the plan's schedule, run as a program (program(),
        eagerly or, after compile(), by inductor). Adds each parameter's
        gradient to its .grad (as loss.backward() does), updates
        batch-norm statistics once, and returns the loss (detached)."""
        self._check(inputs)
        grads, loss = self._run_program(inputs)
        with torch.no_grad():
            for p, g in zip(self.traced.params, grads):
                if p.grad is None:
                    p.grad = g.detach()
                else:
                    p.grad += g
        return loss.detach()

    def replay(self, repeats=3, warmup=1):
        """Runs the plan's schedule and the NoRemat schedule on the example
        batch and measures them: the peak of live activation storage (as
        scripts/replay_torch.py counts it; on CUDA also
        torch.cuda.max_memory_allocated above the step's start) and the
        median wall time of `repeats` back-to-back pairs after `warmup`.
        Buffers and the RNG state are restored, parameters and gradients
        untouched."""
        traced = self.traced
        device = traced.params[0].device
        saved = [b.detach().clone() for b in traced.buffers]
        rng = _rng_state(device)
        noremat = rematbench.solve(self.graph, "noremat")
        base_events = self._as_events(noremat.schedule)

        def restore():
            with torch.no_grad():
                for b, v in zip(traced.buffers, saved):
                    b.copy_(v)
            _set_rng_state(rng, device)

        def sync():
            if device.type == "cuda":
                torch.cuda.synchronize(device)

        cuda_peak = None
        if device.type == "cuda":
            sync()
            torch.cuda.reset_peak_memory_stats(device)
            start = torch.cuda.memory_allocated(device)
        peak, _, _ = self._run(self._events, traced.inputs, measure=True)
        if device.type == "cuda":
            sync()
            cuda_peak = torch.cuda.max_memory_allocated(device) - start
        restore()
        base_peak, _, _ = self._run(base_events, traced.inputs, measure=True)
        restore()

        def timed(events):
            sync()
            t0 = time.perf_counter()
            self._run(events, traced.inputs)
            sync()
            seconds = time.perf_counter() - t0
            restore()
            return seconds

        for _ in range(warmup):
            timed(base_events)
            timed(self._events)
        pairs = [(timed(self._events), timed(base_events))
                 for _ in range(repeats)]
        return {
            "algorithm": self.algorithm,
            "budget_bytes": self.budget_bytes,
            "simulated_peak_bytes": self.solution.peak_bytes,
            "measured_peak_bytes": peak,
            "noremat_simulated_peak_bytes": noremat.peak_bytes,
            "noremat_measured_peak_bytes": base_peak,
            "cuda_peak_bytes": cuda_peak,
            "predicted_overhead": self.solution.overhead,
            "measured_overhead": statistics.median(a / b for a, b in pairs),
            "time_seconds": statistics.median(a for a, _ in pairs),
            "noremat_time_seconds": statistics.median(b for _, b in pairs),
        }

    def format_table(self):
        peak = self.noremat_peak_bytes
        lines = [f"{self.graph.name}: {self.graph.num_nodes} nodes, budget "
                 f"{self.budget_bytes} bytes ({self.budget_bytes / peak:.0%} "
                 f"of the NoRemat peak {peak}); using {self.algorithm}",
                 f"{'algorithm':<16} {'status':<11} {'peak bytes':>12} "
                 f"{'overhead':>9} {'solve s':>8}"]
        for r in self.table:
            peak = "-" if r["peak_bytes"] is None else str(r["peak_bytes"])
            over = "-" if r["overhead"] is None else f"{r['overhead']:.3f}"
            secs = "-" if r["solve_seconds"] is None else \
                f"{r['solve_seconds']:.3f}"
            lines.append(f"{r['algorithm']:<16} {r['status']:<11} "
                         f"{peak:>12} {over:>9} {secs:>8}")
        return "\n".join(lines)

    def __str__(self):
        return self.format_table()

    def __repr__(self):
        return (f"<rematbench.torch.Plan {self.algorithm}: peak "
                f"{self.solution.peak_bytes} <= {self.budget_bytes} bytes, "
                f"overhead {self.predicted_overhead:.3f}>")


class RematStep:
    """One training step within an activation-memory budget, as one call:

        train_step = rt.remat(model, nn.CrossEntropyLoss(), budget=0.5)
        for x, y in batches:
            opt.zero_grad()
            loss = train_step(x, y)   # was: loss = loss_fn(model(x), y)
            opt.step()                #      loss.backward()

    The first call with a new layout of shapes plans it (plan(), with the
    batch as the example) and later calls run that plan's program:
    gradients are added to .grad, batch-norm statistics updated once,
    dropout's masks those of plain training; the loss comes back
    detached. compile=True runs the program compiled by inductor, planned
    so that its measured peak is within the budget
    (Plan.compiled_within_budget; else the plan runs eagerly).
    `plans` maps each input layout to its Plan."""

    def __init__(self, model, loss_fn, budget, compile=False, **plan_args):
        self.model, self.loss_fn, self.budget = model, loss_fn, budget
        self.compile, self.plan_args = compile, plan_args
        self.plans = {}

    def _key(self, inputs):
        return tuple((tuple(t.shape), t.dtype, str(t.device))
                     for t in inputs)

    def __call__(self, *inputs):
        key = self._key(inputs)
        p = self.plans.get(key)
        if p is None:
            p = plan(self.model, inputs, self.loss_fn, self.budget,
                     **self.plan_args)
            if self.compile:
                p = p.compiled_within_budget(*inputs)
            self.plans[key] = p
        return p.step(*inputs)


def remat(model, loss_fn, budget, compile=False, **plan_args):
    """The one-line entry point: a callable `train_step(*inputs, target)`
    that runs forward and backward of `loss_fn(model(*inputs), target)`
    within `budget` (bytes as an int or '512MiB', or a float: a fraction of
    the NoRemat activation peak) and returns the loss. `plan_args` go to
    plan() (algorithms, timeout, ...). See RematStep."""
    return RematStep(model, loss_fn, budget, compile, **plan_args)
