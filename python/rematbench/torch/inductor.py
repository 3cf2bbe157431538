"""A program (rematbench.torch.fx_program) compiled by inductor:
inductor's decompositions and its inner compiler, as torch.compile's
backend uses them after dynamo and aot_autograd. Random ops stay in the
compiled graphs as calls of the eager op through the generator's
save/replay operators, so the masks are eager mode's and the ops around
them still fuse. What inductor must not touch runs in Python between
compiled segments: clones of written buffers, buffer updates and replays
of draws. A node computed again starts a new segment, so that no compiler
sees two computations of one node in one graph and merges them.
Inductor's reordering passes (for locality, for peak memory) are turned
off so that each recomputation runs where the schedule puts it; its
padding of unaligned matrix products runs, as in torch.compile.
"""

import collections
import functools
import operator
import warnings

import torch
import torch.fx

from rematbench.torch import rng
from rematbench.torch.checks import autocast_off
from rematbench.torch.lowering import clone
from rematbench.torch.partition import writes

# Ops that inductor neither decomposes nor fuses away: their counts in the
# lowered graphs are comparable with the program's.
KEPT_OPS = ("aten.mm", "aten.addmm", "aten.bmm", "aten.baddbmm",
            "aten.convolution", "aten.convolution_backward",
            "aten._scaled_dot_product_flash_attention",
            "aten._scaled_dot_product_efficient_attention", "aten.relu")
# (max_pool2d_with_indices and its backward are not among them: inductor
# lowers them to loops on the CPU, so their count there is 0.)


def _in_python(n):
    """Nodes that stay out of inductor's graphs: writes to buffers
    (running statistics) and the clones a recomputation writes instead."""
    t = n.target
    if t is clone or isinstance(t, rng.Replay):
        # (A replay sets the generator's state in Python.)
        return True
    if isinstance(t, torch._ops.OpOverload):
        return bool(writes(t))
    return False


def compile_program(prog, example_inputs):
    """The _BoxedRunner of BuiltProgram `prog`, compiled by one run on
    `example_inputs`, the generator put back after it."""
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
    device = next(a.device for a in example_inputs
                  if isinstance(a, torch.Tensor))
    saved = rng.snapshot(device)
    run(*example_inputs)
    rng.restore(saved)
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
PADDED_DEVICES = ("cuda", "xpu")


def _pad_matmuls(graph, args):
    """_padding_pass on `graph` (make_fx's, of ATen ops) for `args`."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp
    devices = sorted({a.device.type for a in args
                      if isinstance(a, torch.Tensor)} & set(PADDED_DEVICES))
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
            if n.op == "call_module":
                target = getattr(split, n.target)
            elif n.op == "get_attr":  # a constant the trace kept (a mask)
                target = functools.partial(
                    lambda v: v, operator.attrgetter(n.target)(split))
            else:
                target = n.target
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

        # A graph's inputs may come from an earlier compiled graph with
        # strides of inductor's choosing, where eager's view would not
        # apply: reshape is the same view where it applies and a copy
        # where it does not (the traced graph is functional).
        for n in sub.graph.nodes:
            if n.target is torch.ops.aten.view.default:
                n.target = torch.ops.aten.reshape.default
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
        with torch.no_grad(), autocast_off():
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


