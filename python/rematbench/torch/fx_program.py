"""A schedule compiled into a program: an FX GraphModule whose body is the
calls of the lowered schedule (rematbench.torch.lowering) in order, with
no per-op interpretation. Behind Plan.step().

    built = fx_program.build(partition, events)
    loss, *grads = built(*flat)              # eager: plain Python code
    step = built.compiled(flat)              # inductor (.inductor)

Nothing is freed by hand: FX's code generator drops each value after its
last use (`x = None`), which is at or before the schedule's `f v`, so the
program never holds more than the schedule does. Static values (a
transposed weight) are emitted before their first use.
"""

import collections

import torch
import torch.fx

from rematbench.torch import rng
from rematbench.torch.checks import autocast_off
from rematbench.torch.lowering import Compute, Ref, lower


class BuiltProgram:
    """`module` (a GraphModule: inputs as the traced step's placeholders,
    then the recorded generator states if `recorded`, then the reducer if
    `reduce`; returns (loss,
    *grads); each node's meta["remat_event"] is the index in `events` of
    the computation that made it, meta["remat_segment"] its segment),
    `op_counts` (ATen op -> how many calls the body makes) and `events`."""

    def __init__(self, module, op_counts, events, recorded, reduce=False):
        self.module, self.op_counts, self.events = module, op_counts, events
        self.recorded, self.reduce = recorded, reduce
        self._compiled = None
        self.compiled_op_counts = None

    def __call__(self, *flat):
        with torch.no_grad(), autocast_off():
            return self.module(*flat)

    def compiled(self, example_inputs):
        """The program compiled by inductor (rematbench.torch.inductor),
        called like `module` and compiled here by one run on
        `example_inputs`, with the generator put back after it. The ATen
        op counts of every graph inductor lowers are added up in
        `compiled_op_counts`: recomputations_kept() checks them."""
        if self._compiled is None:
            from rematbench.torch import inductor
            self._compiled = inductor.compile_program(self, example_inputs)
        return self._compiled

    def recomputations_kept(self):
        """(ok, {op: (in the program, in the compiled graphs)}) for every
        op that inductor lowers as itself (matrix products, convolutions,
        ...): ok when none has fewer calls compiled than in the program,
        i.e. no recomputation was merged away."""
        from rematbench.torch.inductor import KEPT_OPS
        if self.compiled_op_counts is None:
            raise ValueError("compile the program first")
        rows = {op: (k, self.compiled_op_counts.get(op, 0))
                for op, k in self.op_counts.items() if op in KEPT_OPS}
        return all(c >= k for k, c in rows.values()), rows


def _op_name(n):
    """The ATen op (overload packet) FX node `n` of a program runs, or
    None."""
    t = n.target
    if t is rng.run_and_save_rng_state:
        t = n.args[0]
    elif t is rng.run_with_rng_state or isinstance(t, rng.Replay):
        t = n.args[1]
    t = rng.traced_random(t)
    return str(t.overloadpacket) \
        if isinstance(t, torch._ops.OpOverload) else None


def start_reduce(reducer, gradient):
    """Starts reducing a gradient the program has finished (a call in the
    program: its reducer is an input)."""
    return reducer.start(gradient)


def finish_reduce(reducer, works):
    reducer.finish(works)


def build(partition, events, recorded=False, anchoring=None, reduce=False):
    """The BuiltProgram of `events` ((kind, node, line) tuples) on
    `partition`; `recorded` and `anchoring` as lowering.lower takes them.
    With `reduce`, the program takes a reducer as its last input
    (distributed.GradientReducer) and starts reducing each parameter's
    gradient as soon as the schedule's last computation of it has run, so
    that the communication overlaps the rest of the backward; it waits for
    them all before it returns."""
    p = partition
    lowered = lower(p, events, "schedule", recorded, anchoring)
    fx, index = p.fx, p.index
    g = torch.fx.Graph()
    cur = {}  # slot -> the new graph's node holding its value
    for n in p.place:
        cur[index[n]] = g.placeholder(n.name)
    if recorded:
        cur[lowered.states_input] = g.placeholder("rng_states")
    reducer = g.placeholder("reducer") if reduce else None
    # Every rank must start the same reductions in the same order, whatever
    # its schedule: in reverse parameter order (the order of DDP's
    # buckets, about the order the backward finishes them), each once it
    # and every gradient before it in that order are final (after their
    # nodes' last computations). A gradient another op reads, and those
    # after it, are reduced at the end.
    last = {st.node: st.event for st in lowered.steps
            if isinstance(st, Compute)}
    final_at, ready = collections.defaultdict(list), -1
    for s in reversed(list(dict.fromkeys(lowered.outputs[1:]))
                      if reduce else []):
        readers = [u for u in fx[s].users if u.op != "output"]
        ready = None if readers or ready is None else \
            max(ready, last[p.owner[s]])
        final_at[ready].append(s)
    works = []

    def value(ref):
        i = ref.slot
        if i not in cur:
            n = fx[i]
            if n.op == "get_attr":
                cur[i] = g.get_attr(n.target)
            elif n.op == "call_function" and i in p.static:
                # A static value, computed before its first use.
                args, kwargs = torch.fx.node.map_arg(
                    (n.args, n.kwargs), lambda x: value(Ref(index[x])))
                cur[i] = g.call_function(n.target, args, kwargs)
                _copy_meta(cur[i], n)
            else:
                raise ValueError(f"{n.name} is read before it is computed")
        return cur[i]

    def resolve(a):
        if isinstance(a, Ref):
            return value(a)
        if isinstance(a, (tuple, list)):
            return type(a)(resolve(x) for x in a) \
                if type(a) in (tuple, list) else [resolve(x) for x in a]
        if isinstance(a, dict):
            return {k: resolve(x) for k, x in a.items()}
        return a

    firsts = set()

    def emit(c):
        new = g.call_function(c.target, resolve(c.args), resolve(c.kwargs))
        if c.meta_of is not None:
            _copy_meta(new, fx[c.meta_of])
        if c.first:
            firsts.add(new)
        cur[c.out] = new

    for c in lowered.prologue:
        emit(c)
    for step in lowered.steps:
        if not isinstance(step, Compute):
            continue
        for c in step.calls:
            emit(c)
        for s in final_at.get(step.event, ()):
            works.append(g.call_function(start_reduce,
                                         (reducer, value(Ref(s)))))
            firsts.add(works[-1])
        # The nodes made since the last computation, the last ones of the
        # graph (nodes are only appended), take this one's event; those
        # made before the first (inputs, the prologue) take the first's.
        for n in reversed(g.nodes):
            if "remat_segment" in n.meta:
                break
            n.meta["remat_segment"] = step.segment
            n.meta["remat_event"] = step.event
    if reduce:
        for s in final_at.get(None, ()):
            works.append(g.call_function(start_reduce,
                                         (reducer, value(Ref(s)))))
            firsts.add(works[-1])
        firsts.add(g.call_function(finish_reduce, (reducer, tuple(works))))
    g.output(tuple(value(Ref(s)) for s in lowered.outputs))
    # Recomputations no later op reads go; a first execution that writes
    # buffers (running statistics) or draws random numbers stays, read or
    # not: plain training runs it, and later masks and statistics depend
    # on it.
    g.eliminate_dead_code(
        is_impure_node=lambda n: n in firsts or n.is_impure())
    module = torch.fx.GraphModule(p.traced.module, g)
    counts = collections.Counter(
        name for name in map(_op_name, g.nodes) if name is not None)
    return BuiltProgram(module, counts, events, recorded, reduce)


def _copy_meta(new, n):
    new.meta.update({k: v for k, v in n.meta.items()
                     if k in ("val", "tensor_meta")})
