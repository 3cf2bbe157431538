"""Compiles a rematerialization schedule into a program: an FX GraphModule
whose body is the schedule's ops in order, with no per-op interpretation.

    prog = program.build(executor.Program(traced), events)
    loss, *grads = prog.module(*flat)          # eager: plain Python code
    step = prog.compiled()                     # torch.compile (inductor)

`c v` becomes a copy of the ATen ops node v covers (FX order); every
recomputation is a fresh copy of them, reading the values live at that
point of the schedule. Nothing is freed by hand: FX's code generator drops
each value after its last use (`x = None`), which is at or before the
schedule's `f v`, so the program never holds more than the schedule does.

Exactly as rematbench.executor does (and so as plain training):
- a random op (dropout's bernoulli) draws at its first execution from the
  generator as it stands, the program saves the generator's state there,
  and each recomputation runs from that saved state and puts the generator
  back (PyTorch's own run_and_save_rng_state and run_with_rng_state, which
  inductor keeps inside its graphs as calls of the eager op). With
  build(..., anchors=...) a recomputation may instead start from the state
  saved at an earlier random op (its anchor) and replay the draws in
  between (_Replay, run in Python between compiled graphs), so that the
  program holds fewer states for the draws' time, or from the state a
  recomputation of the random op before it left. That gives
  plain training's masks when the schedule first runs the random ops in
  their eager order (executor.Program.random_in_eager_order);
  otherwise build(..., rng_from_inputs=True) takes the states as extra
  inputs, recorded by executor.Program.record_rng;
- an op that writes a buffer (batch-norm running statistics) writes it at
  its first execution only; a recomputation writes clones;
- buffer updates outside the nodes run once, as soon as their inputs exist.

Values the executor computes once per replay from parameters and batch
alone (a transposed weight) are emitted before their first use.
"""

import collections
import functools
import operator
import warnings

import torch
import torch.fx

from torch._prims.rng_prims import run_and_save_rng_state, run_with_rng_state

from rematbench.executor import _bernoulli_in_layout as executor_bernoulli
from rematbench.executor import eager_op, traced_op


@torch.library.custom_op("rematbench::bernoulli_in_layout", mutates_args=(),
                         tags=(torch.Tag.flexible_layout,))
def _bernoulli_in_layout(like: torch.Tensor, size: list[int],
                         stride: list[int], p: float) -> torch.Tensor:
    """Plain training's dropout mask (executor's _bernoulli_in_layout) as
    an op of its own, with the layout plain training draws it in given
    explicitly (`like` gives only the device and dtype): inductor may lay
    out its own tensors otherwise, and the random numbers fill memory in
    order. An op, not a Python function, so that the generator's
    save-and-replay operators carry it into inductor's graphs; it
    allocates its result, so no compiled graph sees an alias."""
    return torch.empty_strided(size, stride, dtype=like.dtype,
                               device=like.device).bernoulli_(p)


@_bernoulli_in_layout.register_fake
def _(like, size, stride, p):
    return like.new_empty_strided(size, stride)


def _traced_random(op):
    """The traced random op that `op` (from _random_call) stands for."""
    if op is torch.ops.rematbench.bernoulli_in_layout.default:
        return torch.ops.aten.bernoulli.p
    return op


def _random_call(n, args, kwargs):
    """(op, args, kwargs) that run traced random op node `n` as plain
    training does, on `args` and `kwargs` (the new graph's values of n's)."""
    if eager_op(n.target) is executor_bernoulli:
        like = n.args[0].meta["val"]
        return (torch.ops.rematbench.bernoulli_in_layout.default,
                (args[0], list(like.shape), list(like.stride())) +
                tuple(args[1:]), kwargs)
    return n.target, tuple(args), kwargs


def _rng_get(cuda):
    return (torch.get_rng_state(),
            torch.cuda.get_rng_state() if cuda else None)


def _rng_set(state):
    torch.set_rng_state(state[0])
    if state[1] is not None:
        torch.cuda.set_rng_state(state[1])


def _clone(t):
    return t.clone() if isinstance(t, torch.Tensor) else t


class _Fresh:
    """A tensor argument of a replayed draw: made when the draw runs
    (zeros, so that a probability argument is in [0, 1]), since how far a
    random op moves the generator depends on its arguments' shapes, not
    their values (executor.Program.record_rng)."""

    def __init__(self, shape, stride, dtype):
        self.shape, self.stride, self.dtype = shape, stride, dtype

    def make(self, device):
        return torch.empty_strided(self.shape, self.stride, dtype=self.dtype,
                                   device=device).zero_()

    def nbytes(self):
        return torch.empty_strided(self.shape, self.stride, dtype=self.dtype,
                                   device="meta").untyped_storage().nbytes()


def _draw(n):
    """(op, args, kwargs) that move the generator as random op node `n`
    does, without its inputs: tensor arguments are _Fresh. Dropout's mask
    (bernoulli_in_layout) takes its input only for the dtype and device,
    so an empty one stands for it and the draw allocates the mask alone."""
    def fresh(x):
        m = x.meta["tensor_meta"]
        return _Fresh(tuple(m.shape), tuple(m.stride), m.dtype)

    args, kwargs = torch.fx.node.map_arg((n.args, n.kwargs), fresh)
    op, args, kwargs = _random_call(n, args, kwargs)
    if op is torch.ops.rematbench.bernoulli_in_layout.default:
        args = (_Fresh((0,), (1,), args[0].dtype),) + tuple(args[1:])
    return op, tuple(args), dict(kwargs)


# Random ops that move the generator by an amount set by their arguments'
# shapes and dtypes alone, so that _Replay can draw them again from fresh
# tensors. Others draw by value (RReLU's noise only for negative inputs;
# Poisson, gamma and binomial samples by rejection): replaying them from
# zeros would leave the generator elsewhere, so a recomputation of one
# starts from a state saved at it, and no replay runs past it.
_REPLAYABLE = frozenset((
    "bernoulli", "native_dropout", "rand", "rand_like", "randn",
    "randn_like", "randint", "randint_like", "randperm", "normal",
    "uniform", "exponential", "cauchy", "log_normal", "geometric",
    "random"))


def replayable(n):
    """Whether random op node `n` can be among a _Replay's draws."""
    op = traced_op(n.target)
    packet = getattr(op, "overloadpacket", None)
    return packet is not None and \
        str(packet).removeprefix("aten.").rstrip("_") in _REPLAYABLE


def draw_bytes(n):
    """The bytes a replayed draw of random op node `n` (_draw) holds while
    it runs: its fresh arguments and its result."""
    op, args, kwargs = _draw(n)
    fresh = sum(a.nbytes() for a in list(args) + list(kwargs.values())
                if isinstance(a, _Fresh))
    if op is torch.ops.rematbench.bernoulli_in_layout.default:
        return fresh + _Fresh(tuple(args[1]), tuple(args[2]),
                              args[0].dtype).nbytes()
    vals = n.meta["val"]
    vals = vals if isinstance(vals, (tuple, list)) else (vals,)
    return fresh + sum(v.untyped_storage().nbytes() for v in vals
                       if isinstance(v, torch.Tensor))


def run_draw(draw, device):
    """Runs a _draw triple on `device`, its result dropped."""
    op, args, kwargs = draw

    def make(a):
        return a.make(device) if isinstance(a, _Fresh) else a
    op(*map(make, args), **{k: make(a) for k, a in kwargs.items()})


class _Replay:
    """Recomputes a random op from the generator state saved at an earlier
    random op (its anchor) rather than from a state of its own: restores
    the anchor's state, draws the random ops between the anchor and this
    one (same ops, same shapes, results dropped at once) to reach this
    op's state, runs the op and puts the generator back. The program then
    holds one state per anchor instead of one per recomputed random op,
    for the draws' time; `draws` are _draw's triples, in eager order. With
    `save` or `after` it returns (the op's own state or None, the state
    after the op or None, its result): later recomputations of the op
    start from its own state, and the next random op's from the state
    after it, and replay nothing."""

    __name__ = "replay_rng"

    def __init__(self, draws, save=False, after=False):
        self.draws, self.save, self.after = draws, save, after

    def __call__(self, state, op, *args, **kwargs):
        device = next(a.device for a in args if isinstance(a, torch.Tensor))
        cuda = device.type == "cuda"
        get = torch.cuda.get_rng_state if cuda else torch.get_rng_state
        put = torch.cuda.set_rng_state if cuda else torch.set_rng_state
        saved = get()
        put(state)
        for d in self.draws:
            run_draw(d, device)
        own = get() if self.save else None
        out = op(*args, **kwargs)
        after = get() if self.after else None
        put(saved)
        return (own, after, out) if self.save or self.after else out


class BuiltProgram:
    """`module` (a GraphModule: inputs as the traced step's placeholders,
    then the RNG states if `rng_from_inputs`; returns (loss, *grads); each
    node's meta["remat_event"] is the index in `events` of the
    computation that made it),
    `op_counts` (ATen op -> how many calls the body makes) and `events`."""

    def __init__(self, module, op_counts, events, rng_from_inputs, cuda):
        self.module, self.op_counts, self.events = module, op_counts, events
        self.rng_from_inputs, self.cuda = rng_from_inputs, cuda
        self._compiled = None
        self.compiled_op_counts = None

    def __call__(self, *flat):
        with torch.no_grad():
            return self.module(*flat)

    def compiled(self, example_inputs):
        """The program compiled by inductor (its decompositions and its
        inner compiler, as torch.compile's backend uses them after dynamo
        and aot_autograd; _BoxedRunner), called like `module` and compiled
        here by one run on `example_inputs`, with the generator put back
        after it. Random ops stay in the compiled graphs as calls of the
        eager op through the generator's save/replay operators, so the
        masks are eager mode's and the ops around them still fuse. What
        inductor must not touch runs in Python between compiled segments:
        clones of written buffers and buffer updates. Inductor's
        reordering passes (for locality, for peak memory) are turned off
        so that each recomputation runs where the schedule puts it; its
        padding of unaligned matrix products runs, as in torch.compile
        (_padding_pass). The ATen op counts of every graph inductor lowers (after its own
        passes) are added up in `compiled_op_counts`:
        `recomputations_kept()` checks them."""
        if self._compiled is None:
            self._compiled = _compile(self, example_inputs)
        return self._compiled

    def recomputations_kept(self):
        """(ok, {op: (in the program, in the compiled graphs)}) for every
        op that inductor lowers as itself (matrix products, convolutions,
        ...): ok when none has fewer calls compiled than in the program,
        i.e. no recomputation was merged away."""
        if self.compiled_op_counts is None:
            raise ValueError("compile the program first")
        rows = {op: (k, self.compiled_op_counts.get(op, 0))
                for op, k in self.op_counts.items()
                if op in _KEPT_OPS}
        return all(c >= k for k, c in rows.values()), rows


# Ops that inductor neither decomposes nor fuses away: their counts in the
# lowered graphs are comparable with the program's.
_KEPT_OPS = ("aten.mm", "aten.addmm", "aten.bmm", "aten.baddbmm",
             "aten.convolution", "aten.convolution_backward",
             "aten._scaled_dot_product_flash_attention",
             "aten._scaled_dot_product_efficient_attention", "aten.relu")
# (max_pool2d_with_indices and its backward are not among them: inductor
# lowers them to loops on the CPU, so their count there is 0.)


def _in_python(n):
    """Nodes that stay out of inductor's graphs: writes to buffers
    (running statistics) and the clones a recomputation writes instead."""
    t = n.target
    if t is _clone or isinstance(t, _Replay):
        # (A replay sets the generator's state in Python.)
        return True
    if isinstance(t, torch._ops.OpOverload):
        from rematbench.executor import _writes
        return bool(_writes(t))
    return False


def _compile(prog, example_inputs):
    from torch.fx.passes.split_module import split_module
    gm = prog.module
    part, parts, python, seg = 0, {}, set(), 0
    for n in gm.graph.nodes:
        if n.op != "call_function":
            continue
        if n.meta.get("remat_segment", seg) != seg:
            seg = n.meta["remat_segment"]
            part += 1  # a node computed again (build): a new graph
        if n.target is operator.getitem and n.args[0] in python:
            parts[n] = parts[n.args[0]]  # a tuple stays where it was made
            python.add(n)
        elif _in_python(n) or (n.target is operator.getitem and
                               n.args[0].op == "placeholder"):
            part += 1
            parts[n] = part
            python.add(n)
            part += 1
        else:
            parts[n] = part
    split = split_module(gm, gm, lambda n: parts[n],
                         keep_original_order=True)
    python_parts = {f"submod_{parts[n]}" for n in python}
    counts = collections.Counter()
    prog.compiled_op_counts = counts
    run = _BoxedRunner(split, python_parts, counts)
    # The first run compiles every graph, on the inputs it really gets
    # (their strides are those of the compiled graphs before it).
    rng = _rng_get(prog.cuda)
    run(*example_inputs)
    _rng_set(rng)
    return run


@functools.cache
def _padding_pass(device_type):
    """Inductor's pad_mm pass alone (torch/_inductor/fx_passes/pad_mm.py):
    a matrix product whose sizes are not multiples of the alignment the
    device's kernels want (a vocabulary of 50,257) is computed on
    zero-padded copies where inductor measures that to be faster. Without
    it cuBLAS runs such products in kernels for unaligned operands: on an
    H200, GPT-2 small's two products of its output head took 11.6 ms of a
    37 ms step (results/torch_options/gpu-2026-11-28/README.md).
    torch.compile runs this pass among its joint-graph patterns, which
    compile_fx_inner alone does not; the others stay off here (fusing
    attention would draw dropout's masks anew). None, with a warning,
    where this torch's inductor has no such pass (its private API)."""
    def empty(*size):
        return torch.empty(size, device=device_type)

    try:
        from torch._inductor.fx_passes import pad_mm
        from torch._inductor.pattern_matcher import (PatternMatcherPass,
                                                     fwd_only,
                                                     register_replacement)
        # (addmm's scalars are traced as these values, pad_mm's own.)
        rules = (
            (pad_mm.mm_pattern, pad_mm.mm_replace, [empty(4, 4), empty(4, 4)],
             pad_mm.should_pad_mm, {}),
            (pad_mm.bmm_pattern, pad_mm.bmm_replace,
             [empty(4, 4, 4), empty(4, 4, 4)], pad_mm.should_pad_bmm, {}),
            (pad_mm.addmm_pattern, pad_mm.addmm_replace,
             [empty(4), empty(4, 4), empty(4, 4)], pad_mm.should_pad_addmm,
             {"beta": 0.213377, "alpha": 0.113377}))
    except (ImportError, AttributeError) as e:
        warnings.warn(f"rematbench: inductor's pad_mm pass is not available "
                      f"in torch {torch.__version__} ({e}); compiled "
                      "programs run unaligned matrix products unpadded")
        return None
    patterns = PatternMatcherPass()
    for search, replace, example, check, scalars in rules:
        register_replacement(search, replace, example, fwd_only, patterns,
                             extra_check=check, scalar_workaround=scalars)
    return patterns


# The devices whose operands pad_mm pads (elsewhere the pass, with its fake
# tensor propagation over each graph, would cost compile time and change
# nothing).
_PADDED_DEVICES = ("cuda", "xpu")


def _pad_matmuls(graph, args):
    """_padding_pass on `graph` (make_fx's, of ATen ops) for `args`."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp
    devices = sorted({a.device.type for a in args
                      if isinstance(a, torch.Tensor)} & set(_PADDED_DEVICES))
    if not devices or _padding_pass(devices[0]) is None:
        return
    # The pattern matcher reads each node's meta["val"] as fake tensors of
    # one mode; make_fx on real inputs gives each value a mode of its own.
    FakeTensorProp(graph, FakeTensorMode(allow_non_fake_inputs=True)) \
        .propagate(*args)
    # (No dead-code pass after it: this pass changes the products only. A
    # recomputed node's ops whose results the graph does not read stay, as
    # they do without it; recomputations_kept counts them.)
    if _padding_pass(devices[0]).apply(graph.graph):
        graph.recompile()


class _BoxedRunner:
    """Runs the split program, compiling each of its graphs with inductor
    when it is first reached. A value nothing later reads is freed as soon
    as the compiled graph that last reads it no longer needs it, as in the
    eager program: each graph gets its arguments in a list of its own
    (inductor's boxed calling convention: it clears the list and drops
    each input after its last use), and the runner has dropped its own
    references first. torch.compile's wrapper, which takes the arguments
    as *args, would keep every input alive until the graph returns."""

    def __init__(self, split, python_parts, counts):
        nodes = list(split.graph.nodes)
        last = {}
        for i, n in enumerate(nodes):
            for x in n.all_input_nodes:
                last[x] = i
        # A part with several outputs hands them on through getitem nodes;
        # its step unpacks them itself rather than taking one Python step
        # per output (a program returns every gradient, and each step
        # costs an argument mapping and dictionary work).
        unpacked = {n: [(u, u.args[1]) for u in n.users if u.users]
                    for n in nodes if n.op == "call_module" and n.users
                    and all(u.target is operator.getitem for u in n.users)}
        self.place = [n for n in nodes if n.op == "placeholder"]
        self.steps = []
        for i, n in enumerate(nodes):
            if n.op in ("placeholder", "output") or (
                    n.target is operator.getitem and n.args[0] in unpacked):
                continue
            dead = [x for x in n.all_input_nodes if last[x] == i]
            target = getattr(split, n.target) if n.op == "call_module" \
                else n.target
            compiled = n.op == "call_module" and \
                n.target not in python_parts
            self.steps.append([n, target, dead, compiled,
                               unpacked.get(n)])
        self.out = nodes[-1]
        self.split, self.counts = split, counts

    def _lower(self, sub, args):
        """Inductor's compiled function (boxed) of graph `sub` for `args`:
        inductor's decompositions, then its inner compiler, with its
        reordering passes off so that each recomputation stays where the
        schedule puts it."""
        import torch._inductor.config as inductor_config
        from torch._inductor.compile_fx import compile_fx_inner
        from torch._inductor.decomposition import select_decomp_table
        from torch.fx.experimental.proxy_tensor import make_fx

        def count(graph):
            for n in graph.nodes:
                if n.op == "call_function" and isinstance(
                        n.target, torch._ops.OpOverload):
                    self.counts[str(n.target.overloadpacket)] += 1

        out = [n for n in sub.graph.nodes if n.op == "output"][0]
        single = not isinstance(out.args[0], (tuple, list))
        if single:  # inductor wants a tuple of outputs
            out.args = ((out.args[0],),)
            sub.recompile()
        with inductor_config.patch(post_grad_custom_post_pass=count,
                                   reorder_for_locality=False,
                                   reorder_for_peak_memory=False,
                                   fallback_random=True):
            graph = make_fx(sub, decomposition_table=select_decomp_table())(
                *args)
            _pad_matmuls(graph, args)
            fn = compile_fx_inner(graph, list(args))
        return fn, single

    def __call__(self, *flat):
        env = dict(zip(self.place, flat))
        del flat
        get = env.__getitem__
        with torch.no_grad():
            for step in self.steps:
                n, target, dead, compiled, unpack = step
                args, kwargs = torch.fx.node.map_arg((n.args, n.kwargs),
                                                     get)
                for x in dead:
                    del env[x]
                if compiled and not isinstance(target, tuple):
                    # First reached: the entry keeps (function, single).
                    target = step[1] = self._lower(target, args)
                if compiled:
                    fn, single = target
                    boxed = list(args)
                    args = None
                    res = fn(boxed)
                    if single:
                        res = res[0]
                else:
                    res = target(*args, **kwargs)
                if unpack is None:
                    env[n] = res
                else:
                    for u, k in unpack:
                        env[u] = res[k]
                args = kwargs = res = None
            return torch.fx.node.map_arg(self.out.args[0], get)


def build(program, events, rng_from_inputs=False, anchoring=None):
    """The BuiltProgram of `events` ((kind, node, number) tuples, as
    executor.Program.run takes them) on `program` (an executor.Program).
    `anchoring`, (anchors, saves, chains), lets recomputations share saved
    states (_Replay): anchors maps the FX index of a random op to the FX
    index of the random op before it whose saved state its recomputations
    start from (one not in it starts from its own); saves maps such an op
    to the index in `events` of the recomputation that also saves its own
    state, from which the later ones start; chains maps (such an op, the
    index of one of its recomputations) to the index of the event that
    recomputed the random op just before it, whose state after that op it
    starts from. It applies when the states are saved at first
    executions, not with rng_from_inputs."""
    anchors, saves, chains = ({}, {}, {}) \
        if anchoring is None or rng_from_inputs else anchoring
    order = sorted(program.random)
    previous = dict(zip(order[1:], order))
    # (random op, event) of the runs that keep the state after them
    wanted = {(previous[m], j) for (m, _), j in chains.items()}
    after = {}  # (random op, event) -> the state after its run there
    fx, members, writes = program.fx, program.members, program.writes
    index, random = program.index, program.random
    cuda = program.step.device != "cpu"
    g = torch.fx.Graph()
    place = [g.placeholder(n.name) for n in program.place]
    rng_in = g.placeholder("rng_states") if rng_from_inputs else None
    cur = {}  # FX index -> the new graph's node holding its value now
    for n, p in zip(program.place, place):
        cur[index[n]] = p
    static_fx = {i for i, v in enumerate(program.static)
                 if v is not None and fx[i].op == "call_function"}

    def value(x):
        i = index[x]
        if i not in cur:
            n = x
            if n.op == "get_attr":
                cur[i] = g.get_attr(n.target)
            elif i in static_fx:
                emit(i)
            else:
                raise ValueError(f"{n.name} is read before it is computed")
        return cur[i]

    def args_of(n):
        return torch.fx.node.map_arg((n.args, n.kwargs), value)

    def emit(i, wrap=None):
        n = fx[i]
        args, kwargs = args_of(n)
        if wrap is not None:
            args, kwargs = wrap(args, kwargs)
        if n.target is operator.getitem:
            new = g.call_function(operator.getitem, args, kwargs)
        elif isinstance(n.target, torch._ops.OpOverload):
            new = g.call_function(eager_op(n.target), args, kwargs)
        else:
            new = g.call_function(n.target, args, kwargs)
        new.meta.update({k: v for k, v in n.meta.items()
                         if k in ("val", "tensor_meta")})
        cur[i] = new
        return new

    def tag(event):
        """Marks the nodes made for `event` (an index in `events`) and the
        segment they belong to."""
        for n in g.nodes:
            if "remat_segment" not in n.meta:
                n.meta["remat_segment"] = segment[0]
                n.meta["remat_event"] = event

    pending = list(program.side)

    def run_side():
        done = []
        for i in pending:
            if all(index[x] in cur or index[x] in static_fx or
                   x.op == "get_attr" for x in fx[i].all_input_nodes):
                emit(i)
                done.append(i)
        for i in done:
            pending.remove(i)

    run_side()
    # states: saved at first executions (or recorded); own: saved by a
    # recomputation that started from an anchor.
    ran, states, own, firsts = set(), {}, {}, set()
    rng_order = sorted(random)
    in_segment, segment = set(), [0]
    for event, (kind, v, _) in enumerate(events):
        if kind != "c":
            continue
        if v in in_segment:
            # A node computed again starts a new segment (a compiled graph
            # of its own): no compiler ever sees two computations of one
            # node in one graph, so it cannot merge them. Everything else
            # (first computations, other recomputations) shares the graph
            # and fuses.
            segment[0] += 1
            in_segment.clear()
        in_segment.add(v)
        for m in members[v]:
            n = fx[m]
            w = writes.get(m)
            if w and m in ran:
                args, kwargs = args_of(n)
                args = tuple(g.call_function(_clone, (a,))
                             if k in w and isinstance(a, torch.fx.Node)
                             else a for k, a in enumerate(args))
                cur[m] = g.call_function(n.target, args, kwargs)
            elif m in random:
                # The generator's own save-and-replay operators: each
                # recomputation runs from the state the first execution
                # saved and puts the generator back, inside a compiled
                # graph as in Python.
                op, args, kwargs = _random_call(n, *args_of(n))
                if m not in states and not rng_from_inputs:
                    # First execution: draws from the generator as it
                    # stands, as plain training's does.
                    pair = g.call_function(run_and_save_rng_state,
                                           (op,) + args, kwargs)
                    firsts.add(pair)
                    states[m] = g.call_function(operator.getitem, (pair, 0))
                    cur[m] = g.call_function(operator.getitem, (pair, 1))
                    ran.add(m)
                    continue
                a = anchors.get(m, m)
                keep = (m, event) in wanted
                source = chains.get((m, event))
                if source is not None:
                    # The generator after the random op before this one
                    # stands where it does before this one.
                    start, draws = after[(previous[m], source)], ()
                elif a != m and m not in own:
                    # From the anchor's state, drawing the random ops
                    # between (their first executions ran before: the
                    # schedule runs them in eager order).
                    start = states[a]
                    between = [fx[j] for j in rng_order if a <= j < m]
                    if not all(map(replayable, between)):
                        raise ValueError(
                            f"anchor {a} of random op {m}: a random op "
                            "between draws by value and cannot be replayed")
                    draws = tuple(map(_draw, between))
                else:
                    start, draws = own.get(m, states.get(m)), None
                if draws is not None or keep:
                    save = draws is not None and saves.get(m) == event
                    new = g.call_function(_Replay(draws or (), save, keep),
                                          (start, op) + args, kwargs)
                    if save or keep:
                        parts = [g.call_function(operator.getitem, (new, k))
                                 for k in range(3)]
                        if save:
                            own[m] = parts[0]
                        if keep:
                            after[(m, event)] = parts[1]
                        new = parts[2]
                    cur[m] = new
                    ran.add(m)
                    continue
                if m not in states:
                    recorded = g.call_function(
                        operator.getitem, (rng_in, rng_order.index(m)))
                    states[m] = g.call_function(
                        operator.getitem, (recorded, 1 if cuda else 0))
                cur[m] = g.call_function(run_with_rng_state,
                                         (own.get(m, states[m]), op) + args,
                                         kwargs)
            else:
                new = emit(m)
                if w and m not in ran:
                    firsts.add(new)
            ran.add(m)
        if pending:
            run_side()
        tag(event)
    out = fx[-1]
    outs = [cur[index[o]] for o in out.args[0]]
    g.output(tuple(outs))
    # Recomputations no later op reads go; a first execution that writes
    # buffers (running statistics) or draws random numbers stays, read or
    # not: plain training runs it, and later masks and statistics depend
    # on it.
    g.eliminate_dead_code(
        is_impure_node=lambda n: n in firsts or n.is_impure())
    module = torch.fx.GraphModule(program.step.g2, g)
    counts = collections.Counter(
        str(traced_op(n.target).overloadpacket) for n in g.nodes
        if n.op == "call_function" and isinstance(traced_op(n.target),
                                                  torch._ops.OpOverload))
    counts += collections.Counter(
        str(_traced_random(n.args[0] if n.target is run_and_save_rng_state
                           else n.args[1]).overloadpacket) for n in g.nodes
        if n.target in (run_and_save_rng_state, run_with_rng_state) or
        isinstance(n.target, _Replay))
    return BuiltProgram(module, counts, events, rng_from_inputs, cuda)
