"""The measuring engine: runs a lowered schedule (rematbench.torch.lowering)
call by call and, with measure=True, counts the bytes of the distinct
storages that live nodes hold after every op: the measured activation
peak, which the simulator predicts. Behind Plan.replay() and the
replayer of exported graphs (rematbench.torch.replay).

Values are held as the schedule holds them (from a node's computation to
its `f` event), not freed at their last use as the FX program frees them,
so that what is measured is what the simulator models.
"""

import time

import torch

from rematbench.torch import rng
from rematbench.torch.checks import autocast_off
from rematbench.torch.lowering import Compute, Ref, lower
from rematbench.torch.partition import storage, tensors


def _fetcher(a):
    """A function env -> `a` with every Ref replaced by env[its slot]
    (tuples, lists and dicts rebuilt; constants shared): each call's
    arguments are mapped once, not per call, since replays are timed."""
    if isinstance(a, Ref):
        i = a.slot
        return lambda env: env[i]
    if isinstance(a, (tuple, list)):
        fs = [_fetcher(x) for x in a]
        if not any(getattr(f, "dynamic", True) for f in fs):
            return _const(a)
        if isinstance(a, tuple):
            return lambda env: tuple(f(env) for f in fs)
        return lambda env: [f(env) for f in fs]
    if isinstance(a, dict):
        fs = {k: _fetcher(x) for k, x in a.items()}
        if not any(getattr(f, "dynamic", True) for f in fs.values()):
            return _const(a)
        return lambda env: {k: f(env) for k, f in fs.items()}
    return _const(a)


def _const(a):
    f = lambda env: a  # noqa: E731
    f.dynamic = False
    return f


class Interpreter:
    """Runs schedules on `partition` (rematbench.torch.partition).
    `states`: the recorded generator state before each random op
    (rng.record), from which every execution of it runs; None: a random
    op's first execution draws from the generator as it stands (only
    valid where the schedule runs the random ops first in eager order)."""

    def __init__(self, partition, states=None):
        self.partition, self.states = partition, states
        self._lowered = {}  # (events, recorded) -> (Lowered, fetchers)
        self.per_event = {}

    def _compiled(self, events, where, anchoring):
        key = (tuple(events), self.states is not None)
        if anchoring is not None or key not in self._lowered:
            lowered = lower(self.partition, events, where,
                            recorded=self.states is not None,
                            anchoring=anchoring)
            fetch = {id(c): (c.target, _fetcher(c.args), _fetcher(c.kwargs))
                     for c in lowered.prologue + [
                         c for s in lowered.steps if isinstance(s, Compute)
                         for c in s.calls]}
            if anchoring is not None:
                return lowered, fetch
            self._lowered[key] = lowered, fetch
        return self._lowered[key]

    def run(self, events, where, measure=False, profile=None,
            anchoring=None):
        """One run of `events` ((kind, node, line) tuples; `where` names
        them in errors) from the buffers as they are (the caller resets
        them), on the partition's current bind(). Returns (live-storage
        peak bytes or None, where it was (event index, line, node, op
        name), gradients list, loss). With a list `profile`, appends
        (node, seconds) for each compute event. `per_event` maps each
        compute event to the most live bytes inside it."""
        p = self.partition
        lowered, fetch = self._compiled(events, where, anchoring)
        fx, owner, nodes = p.fx, p.owner, p.traced.nodes
        env = [None] * lowered.slots
        for i, v in p.static.items():
            env[i] = v
        if lowered.states_input is not None:
            env[lowered.states_input] = [self.states[m]
                                         for m in sorted(p.random)]
        grads = [None] * p.n_params
        # Storages of parameter gradients, excluded like static values:
        # those `grads` holds, and those the node being computed made (a
        # part of a multi-output op, or the op under a chain of views).
        # Kept by reference, not as a growing set: a gradient node that is
        # recomputed frees the old gradient, and the allocator may hand its
        # address to an activation.
        grad_ptr = {}  # parameter index -> data pointer
        node_grad_ptrs = set()
        held = set()  # member slots whose values live nodes hold
        stor = {}  # member slot -> [(data pointer, bytes)] of its value
        peak, at, loss = 0, None, None
        per_event = {}

        def live_bytes():
            seen, total = set(), 0
            grad_values = set(grad_ptr.values())
            for i in held:
                for ptr, b in stor[i]:
                    if ptr in seen or ptr in p.static_ptrs or \
                            ptr in node_grad_ptrs or ptr in grad_values:
                        continue
                    seen.add(ptr)
                    total += b
            return total

        def call(c):
            target, get_args, get_kwargs = fetch[id(c)]
            r = env[c.out] = target(*get_args(env), **get_kwargs(env))
            return r

        with torch.no_grad(), autocast_off():
            for c in lowered.prologue:
                call(c)
            for step in lowered.steps:
                if not isinstance(step, Compute):
                    for s in step.drop:
                        env[s] = None
                        held.discard(s)
                    continue
                v = step.node
                node_grad_ptrs.clear()
                if profile is not None:
                    t0 = time.perf_counter()
                for c in step.calls:
                    r = call(c)
                    m = c.out
                    if owner.get(m) != v:
                        continue  # a buffer update or an intermediate
                    held.add(m)
                    if m == p.loss_fx:
                        loss = r
                    if m in p.grad_of_param:
                        grads[p.grad_of_param[m]] = r
                        grad_ptr[p.grad_of_param[m]] = storage(r)[0]
                    if not measure:
                        continue
                    stor[m] = [storage(t) for t in tensors(r)]
                    if m in p.grad_src and isinstance(r, torch.Tensor):
                        node_grad_ptrs.add(storage(r)[0])
                    for part in p.grad_parts.get(m, ()):
                        if r[part] is not None:
                            node_grad_ptrs.add(storage(r[part])[0])
                    # What the op allocates beyond its outputs is not a
                    # live storage: the graph's workspace stands for it
                    # (rematbench.torch.measure sees it).
                    b = live_bytes() + nodes[v].get("workspace", 0)
                    k = step.event
                    per_event[k] = max(per_event.get(k, 0), b)
                    if b > peak:
                        peak, at = b, (k, step.line, v, fx[m].name)
                if profile is not None:
                    profile.append((v, time.perf_counter() - t0))
                for s in step.drop:
                    env[s] = None
                    held.discard(s)
        self.per_event = per_event
        return (peak if measure else None), at, grads, loss


def run_step(partition, events, inputs, where="plan", measure=False):
    """One step of `events` on `inputs`: the partition bound to them and
    the generator states recorded first where the schedule runs the random
    ops out of eager order. (peak or None, grads, loss)."""
    partition.bind(inputs)
    states = None if partition.random_in_eager_order(events) \
        else rng.record(partition)
    peak, _, grads, loss = Interpreter(partition, states).run(
        events, where, measure=measure)
    return peak, grads, loss
