"""A schedule lowered into the calls a program makes: the one place the
rules of running a schedule live, walked by both engines (the measuring
interpreter behind replay() and the FX program behind step()).

`c v` becomes the ATen ops node v covers, in FX order, each a Call on the
values live at that point; every recomputation is a fresh copy of them.
The rules that make a schedule's step plain training's, bit for bit:
- a random op (dropout's mask) draws at its first execution from the
  generator as it stands and saves the state it started from
  (run_and_save_rng_state); each recomputation runs from that state and
  puts the generator back (run_with_rng_state). With an anchoring
  (rematbench.torch.anchoring) a recomputation may instead start from the
  state saved at an earlier random op and replay the draws in between
  (rng.Replay), or from the state a recomputation of the random op before
  it left. When the schedule first runs the random ops out of eager order,
  every execution runs from states recorded beforehand (rng.record),
  which the program takes as an input;
- an op that writes a buffer (batch-norm running statistics) writes it at
  its first execution only; a recomputation writes clones;
- buffer updates outside the nodes run once, as soon as what they read is
  held;
- static values (pure ops of parameters and batch) are each engine's to
  place: computed before the step, or before their first use.
A value is a slot: FX index i holds FX node i's value; slots past the FX
graph hold generator states and other intermediate results.
"""

import dataclasses
import operator
from typing import Any

import torch
import torch.fx

from rematbench.torch import rng
from rematbench.torch.partition import BadInput


@dataclasses.dataclass(frozen=True)
class Ref:
    """The value in slot `slot`, as an argument of a Call."""
    slot: int


@dataclasses.dataclass
class Call:
    """out = target(*args, **kwargs), with every Ref read from its slot.
    `first`: a first execution that writes a buffer or draws random
    numbers, run whether or not anything reads it (plain training does);
    `meta_of`: the FX index whose traced metadata the result shares."""
    target: Any
    args: tuple
    kwargs: dict
    out: int
    first: bool = False
    meta_of: int = None


@dataclasses.dataclass
class Compute:
    """Event `event` (line `line`): node `node` computed by `calls`, then
    the slots in `drop` released (members no other node reads, and
    intermediates). `segment` changes where a node is computed again since
    the segment began: no compiler may merge two computations of one
    node."""
    event: int
    node: int
    line: Any
    calls: list
    drop: list
    segment: int


@dataclasses.dataclass
class Free:
    """Event `event`: node `node` freed, its kept slots released."""
    event: int
    node: int
    line: Any
    drop: list


@dataclasses.dataclass
class Lowered:
    """`prologue` (calls before the first event: buffer updates of static
    values, and taking the recorded states from the input slot
    `states_input`, which is None when states are saved at first
    executions) and `steps` (a Compute or Free per event)."""
    prologue: list
    steps: list
    states_input: Any
    outputs: list  # slots of (loss, *parameter gradients)
    slots: int  # how many slots the program uses


def _refs(a, index):
    """FX argument structure `a` with each FX node replaced by its Ref."""
    return torch.fx.node.map_arg(a, lambda x: Ref(index[x]))


def clone(t):
    """The copy a recomputation writes instead of a buffer."""
    return t.clone() if isinstance(t, torch.Tensor) else t


def lower(partition, events, where, recorded=False, anchoring=None):
    """The Lowered program of `events` ((kind, node, line) tuples, `where`
    naming the schedule in errors) on `partition`. `recorded`: every random
    op runs from a recorded state (a schedule that first runs them out of
    eager order). `anchoring`, (anchors, saves, chains), lets
    recomputations share saved states: anchors maps the FX index of a
    random op to the FX index of the random op before it whose saved state
    its recomputations start from; saves maps such an op to the event of
    the recomputation that also saves its own state, from which the later
    ones start; chains maps (such an op, the event of one of its
    recomputations) to the event that recomputed the random op just
    before it, whose state after that op it starts from. Raises BadInput
    for an event illegal in the schedule."""
    p = partition
    fx, index, members, nodes = p.fx, p.index, p.members, p.traced.nodes
    anchors, saves, chains = ({}, {}, {}) \
        if anchoring is None or recorded else anchoring
    order = sorted(p.random)
    previous = dict(zip(order[1:], order))
    # (random op, event) of the runs that keep the state after them
    wanted = {(previous[m], j) for (m, _), j in chains.items()}
    next_slot = [len(fx)]

    def slot():
        next_slot[0] += 1
        return next_slot[0] - 1

    state, own, after = {}, {}, {}  # slots of saved generator states
    prologue = []
    states_input = None
    if recorded:
        states_input = slot()
        for k, m in enumerate(order):
            state[m] = slot()
            prologue.append(Call(operator.getitem, (Ref(states_input), k),
                                 {}, state[m]))
    held = set(p.static)  # FX indices whose values are held now
    pending = list(p.side)

    def run_side(calls):
        """Buffer updates outside the nodes whose inputs are held."""
        for i in list(pending):
            n = fx[i]
            if all(index[x] in held for x in n.all_input_nodes):
                args, kwargs = _refs((n.args, n.kwargs), index)
                calls.append(Call(n.target, args, kwargs, i, meta_of=i))
                held.add(i)
                pending.remove(i)

    def random(m, n, args, kwargs, event, calls, scratch):
        """The calls of random op m at `event`."""
        op, args, kwargs = rng.random_call(n, args, kwargs)
        if m not in state:
            # First execution: draws from the generator as it stands, as
            # plain training's does, and saves the state it started from.
            pair = slot()
            scratch.append(pair)
            state[m] = slot()
            calls += [Call(rng.run_and_save_rng_state, (op,) + args, kwargs,
                           pair, first=True),
                      Call(operator.getitem, (Ref(pair), 0), {}, state[m]),
                      Call(operator.getitem, (Ref(pair), 1), {}, m)]
            return
        a = anchors.get(m, m)
        keep = (m, event) in wanted
        source = chains.get((m, event))
        if source is not None:
            # The generator after the random op before this one stands
            # where it does before this one.
            start, draws = after[(previous[m], source)], ()
        elif a != m and m not in own:
            # From the anchor's state, drawing the random ops between
            # (their first executions ran before: the schedule runs them
            # in eager order).
            start = state[a]
            between = [fx[j] for j in order if a <= j < m]
            if not all(map(rng.replayable, between)):
                raise ValueError(
                    f"anchor {a} of random op {m}: a random op between "
                    "draws by value and cannot be replayed")
            draws = tuple(map(rng.draw, between))
        else:
            start, draws = own.get(m, state[m]), None
        if draws is None and not keep:
            calls.append(Call(rng.run_with_rng_state,
                              (Ref(start), op) + args, kwargs, m))
            return
        save = draws is not None and saves.get(m) == event
        out = slot()
        scratch.append(out)
        calls.append(Call(rng.Replay(draws or (), save, keep),
                          (Ref(start), op) + args, kwargs, out))
        if not (save or keep):
            calls[-1].out = m
            scratch.pop()
            return
        if save:
            own[m] = slot()
            calls.append(Call(operator.getitem, (Ref(out), 0), {}, own[m]))
        if keep:
            after[(m, event)] = slot()
            calls.append(Call(operator.getitem, (Ref(out), 1), {},
                              after[(m, event)]))
        calls.append(Call(operator.getitem, (Ref(out), 2), {}, m))

    run_side(prologue)
    live, ran, steps = set(), set(), []
    in_segment, segment = set(), 0
    for event, (kind, v, line) in enumerate(events):
        if kind == "f":
            if v not in live:
                raise BadInput(f"{where}:{line}: f {v}: node {v} is not "
                               "live")
            live.remove(v)
            held.difference_update(p.keep[v])
            steps.append(Free(event, v, line, list(p.keep[v])))
            continue
        if v in live:
            raise BadInput(f"{where}:{line}: c {v}: node {v} is already "
                           "live")
        for u in nodes[v]["inputs"]:
            if u not in live:
                raise BadInput(
                    f"{where}:{line}: c {v}: input {u} ({nodes[u]['name']}) "
                    f"of node {v} ({nodes[v]['name']}) is not live")
        if v in in_segment:
            segment += 1
            in_segment.clear()
        in_segment.add(v)
        calls, scratch = [], []
        for m in members[v]:
            n = fx[m]
            args, kwargs = _refs((n.args, n.kwargs), index)
            w = p.writes.get(m)
            if w and m in ran:
                # Recomputation: the first execution updated the buffers.
                copies = []
                for k, a in enumerate(args):
                    if k in w and isinstance(a, Ref):
                        c = slot()
                        scratch.append(c)
                        calls.append(Call(clone, (a,), {}, c))
                        a = Ref(c)
                    copies.append(a)
                calls.append(Call(n.target, tuple(copies), kwargs, m))
            elif m in p.random:
                random(m, n, args, kwargs, event, calls, scratch)
            else:
                calls.append(Call(n.target, args, kwargs, m,
                                  first=bool(w), meta_of=m))
            ran.add(m)
        held.update(members[v])
        run_side(calls)
        drop = [m for m in members[v] if m not in p.keep[v]] + scratch
        held.difference_update(drop)
        steps.append(Compute(event, v, line, calls, drop, segment))
        live.add(v)
    return Lowered(prologue, steps, states_input,
                   [index[o] for o in fx[-1].args[0]], next_slot[0])
