"""Traces a PyTorch training step into the nodes of a rematbench graph
(docs/model.md, "Training graphs", and docs/formats.md: the joint
forward+backward graph of ATen operations, or one node per leaf-module
call), for scripts/export_torch.py and rematbench.torch.

How the graph is obtained (aot_autograd's recipe, which docs/formats.md,
"PyTorch exports", describes; we trace ourselves so that every op can be
tagged with where it came from): `make_fx` traces `loss = model(batch);
torch.autograd.grad(loss, params)` on real tensors, once, with the
parameters, buffers and batch wrapped as functional tensors so that the
graph has no in-place ops. During the forward, a TorchFunctionMode
records, for each autograd Function (`grad_fn`) created, the FX node
that produced its output, and module hooks record which module call each
op ran in. During the backward, a pre-hook on every `grad_fn` tags the FX
nodes that the autograd engine emits while running it; a post-hook tags
the gradient accumulations that follow it. The tags travel in FX's
`stack_trace` field, exactly as aot_autograd's own stack-trace hooks do.
(One pass: tracing the step, then its graph again through
`functionalize`, gives the same graph at about 1.5 times the time.)
Where the step cannot be replayed, the refusal names the module and op
from the step traced as it runs, without functionalization.
See `Mapping` in graphs/corpus/torch/README.md for how ops become nodes.
"""

import contextlib
import sys
import threading

import torch
import torch.nn as nn
from torch.fx import traceback as fx_traceback
from torch.fx.experimental import proxy_tensor
from torch.fx.experimental.proxy_tensor import make_fx

from torch._guards import TracingContext, tracing
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

from rematbench.torch.checks import (Guards, Unsupported, autocast_off,
                                     check_replayable, refuse_changed_input)
from rematbench.torch.nodes import (by_module, flops, measure, op_memory,
                                    to_native)
from rematbench.torch.saved_parts import clone_saved_parts
from rematbench.torch.tagging import (Tagger, reachable, reset_stack_trace,
                                      setter, stack_trace_scope)

aten = torch.ops.aten
# Tracing from two threads at once would share make_fx's global state:
# one traces at a time.
_TRACING = threading.Lock()

# --------------------------------------------------------------------------
# The joint graph with tags.


def _current_tracer():
    """The FX tracer of the make_fx call being traced (other modes are on
    the dispatch stack too; ask for the proxy mode)."""
    return proxy_tensor.get_innermost_proxy_mode().tracer


def mkldnn_rnn_layer(*args, **kwargs):
    """aten.mkldnn_rnn_layer (an LSTM or GRU layer on the CPU) as the traced
    graph runs it: oneDNN keeps the workspace its backward reads only when
    grad mode is on, and every engine runs without it, so the op runs with
    grad mode on, on detached inputs (no autograd graph is recorded)."""
    args = [a.detach() if isinstance(a, torch.Tensor) else a for a in args]
    with torch.enable_grad():
        return aten.mkldnn_rnn_layer.default(*args, **kwargs)


@contextlib.contextmanager
def _fast_metadata():
    """One fake-tensor mode for the metadata of every op a pass records,
    made directly. Tracing real tensors, make_fx describes each output by
    a fake tensor made in the mode it finds in the tracing context, or
    else in a new mode of its own, whose making (a stack capture, weak
    references) was 40% of tracing a 4-layer decoder; and it makes it by
    dispatching empty_strided through that mode, about 110 us an output
    (a quarter of tracing a new shape of the bench-size Llama) where
    building the same fake tensor on a meta tensor takes 13 us. While a
    pass traces, make_fx's extract_val does the latter for plain strided
    tensors of this thread's pass; the graphs are the same. The
    `tensor_meta` beside it leaves out the memory format, which nothing
    here reads and which make_fx found by testing contiguity in three
    formats in Python (8% of a pass)."""
    mode = FakeTensorMode(allow_fallback_kernels=True)
    context = TracingContext(mode)
    original = proxy_tensor.extract_val, proxy_tensor._extract_tensor_metadata

    def ours():
        return TracingContext.try_get() is context

    def extract_val(val, include_real=False):
        if type(val) is torch.Tensor and val.layout is torch.strided and \
                not val.is_quantized and ours():
            meta = torch.empty_strided(val.shape, val.stride(),
                                       dtype=val.dtype, device="meta")
            return FakeTensor(mode, meta, val.device)
        return original[0](val, include_real)

    def tensor_metadata(val, include_contiguity=True):
        return original[1](val, include_contiguity and not ours())

    with tracing(context):
        proxy_tensor.extract_val = extract_val
        proxy_tensor._extract_tensor_metadata = tensor_metadata
        try:
            yield
        finally:
            (proxy_tensor.extract_val,
             proxy_tensor._extract_tensor_metadata) = original


def static_inputs(step):
    """(the parameters that train, every other tensor the step holds) of
    module `step`: the traced graph's inputs before the batch. Frozen
    parameters (requires_grad=False: LoRA's base weights, a frozen
    backbone) get no gradient and are static memory, as buffers are;
    they come first among the others, then the buffers."""
    params = list(step.parameters())
    return ([p for p in params if p.requires_grad],
            [p for p in params if not p.requires_grad] + list(step.buffers()))


def trace_joint(step, inputs, copy_saved_parts=True):
    """Returns (the functionalized joint GraphModule, info) for one
    training step. Tracing runs the step on real tensors; the buffers
    (batch-norm running statistics) and the batch are restored
    afterwards, so the step is left as it was. A value the step reads in
    Python (`.item()`, a mask check) is the example batch's:
    info["guards"] (Guards) says which, and checks that a later batch
    gives the same. A step that cannot be replayed is refused (Unsupported)
    naming the module and op, found in the step traced as it runs, without
    functionalization (which fails on sparse tensors and turns an in-place
    write into a copy)."""
    params, buffers = static_inputs(step)
    saved_buffers = [b.detach().clone() for b in step.buffers()]
    saved_inputs = [t.detach().clone() for t in inputs]
    flat = params + buffers + list(inputs) + [seed_like(params)]
    n_p, n_b = len(params), len(buffers)
    try:
        try:
            g, where, used = _traced(step, flat, n_p, n_b, functional=True)
        except Unsupported:
            raise
        except Exception:
            g1, where, _ = _traced(step, flat, n_p, n_b, functional=False)
            check_replayable(g1, where)
            raise
    finally:
        changed = _restore(step, saved_buffers, inputs, saved_inputs)
    if changed:
        try:
            g1, where1, _ = _traced(step, flat, n_p, n_b, functional=False)
        finally:
            _restore(step, saved_buffers, inputs, saved_inputs)
        refuse_changed_input(g1, where1, n_p + n_b, changed[0])
    check_replayable(g, where)
    guards = Guards(g, where, flat)
    if copy_saved_parts:
        clone_saved_parts(g)
    for n in g.graph.nodes:
        if n.target is aten.mkldnn_rnn_layer.default:
            n.target = mkldnn_rnn_layer
    g.recompile()
    info = dict(n_params=n_p, n_buffers=n_b, n_inputs=len(inputs),
                grad_params=used, guards=guards, **where)
    return g, info


def _unwrapped(t):
    """The value of functional tensor `t` (pending updates applied)."""
    torch._sync(t)
    return torch._from_functional_tensor(t)


@contextlib.contextmanager
def _holding(step, tensors):
    """While the block runs, every module of `step` holds `tensors` (the
    functional tensors of its parameters and buffers, in static_inputs'
    order; or those themselves) in their place, by identity, so that a
    parameter tied to several modules is one tensor in all of them."""
    params, others = static_inputs(step)
    by_id = {id(t): w for t, w in zip(params + others, tensors)}
    swapped = []
    for m in step.modules():
        for store in (m._parameters, m._buffers):
            for k, v in store.items():
                if v is not None and by_id.get(id(v), v) is not v:
                    swapped.append((store, k, v))
                    store[k] = by_id[id(v)]
    try:
        yield
    finally:
        for store, k, v in swapped:
            store[k] = v


def _restore(step, saved_buffers, inputs, saved_inputs):
    """Puts back the buffers and the batch as they were before a trace;
    returns the indices of the batch's tensors the step had changed."""
    with torch.no_grad():
        for b, v in zip(step.buffers(), saved_buffers):
            b.copy_(v)
        changed = [k for k, (t, v) in enumerate(zip(inputs, saved_inputs))
                   if not torch.equal(t, v)]
        for k in changed:
            inputs[k].copy_(saved_inputs[k])
    return changed


def _traced(step, flat, n_p, n_b, functional):
    """(GraphModule, where, used) of one make_fx trace of
    `loss = step(*batch); torch.autograd.grad(loss, params)` on `flat`
    (the trained parameters, the other tensors the step holds, the batch,
    the seed), every node tagged (its stack trace `name|tag`). `where`:
    fwd_node (grad_fn index -> the node of its forward output), grad_name
    (grad_fn index -> its name), calls (call id -> (module path, is leaf,
    class name)) and g1 (the graph); `used`: the indices of the parameters
    the loss depends on. `functional`: the step runs on functional tensors
    (C++ functionalization, as torch.func.functionalize runs it, with the
    tensors' autograd metadata mirrored so that autograd runs above it):
    the graph has no in-place ops, and a write to a tensor of `flat` is a
    copy_ into it after the step's last op."""
    used = []
    fwd_of = {}
    groups = []  # index -> grad_fn, for the backward tags
    calls = []
    names = {m: name for name, m in step.named_modules()}
    stack = ["top"]

    def pre_hook(mod, _inp):
        if mod not in names:
            return
        calls.append((names[mod], len(list(mod.children())) == 0,
                      type(mod).__name__))
        stack.append(f"mod:{len(calls) - 1}")
        fx_traceback.set_stack_trace([stack[-1]])

    def post_hook(mod, _inp, _out):
        if mod not in names:
            return
        stack.pop()
        fx_traceback.set_stack_trace([stack[-1]])

    def forward_backward(flat):
        ps, rest = flat[:n_p], flat[n_p + n_b:]
        *batch, tangent = rest
        h1 = nn.modules.module.register_module_forward_pre_hook(pre_hook)
        h2 = nn.modules.module.register_module_forward_hook(post_hook)
        try:
            tracer = _current_tracer()
            with stack_trace_scope(), Tagger(fwd_of, tracer), \
                    _holding(step, flat[:n_p + n_b]):
                fx_traceback.set_stack_trace(["top"])
                loss = step(*batch)
        finally:
            h1.remove()
            h2.remove()
        for g in reachable(loss.grad_fn):
            k = len(groups)
            groups.append(g)
            g.register_prehook(setter(f"bwd:{k}"))
            g.register_hook(setter(f"acc:{k}", post=True))
        with stack_trace_scope():
            fx_traceback.set_stack_trace(["seed"])
            grads = torch.autograd.grad(loss, ps, grad_outputs=tangent,
                                        allow_unused=True)
        used[:] = [i for i, g in enumerate(grads) if g is not None]
        if not used:
            raise Unsupported("the training step: the loss depends on no "
                              "parameter that requires grad")
        # A parameter the loss does not depend on gets no gradient, as in
        # plain training.
        return (loss, *[g for g in grads if g is not None])

    def joint(*flat):
        if not functional:
            return forward_backward(flat)
        wrapped = [torch._to_functional_tensor(t) for t in flat]
        for t, w in zip(flat, wrapped):
            torch._mirror_autograd_meta_to(t, w)
        torch._enable_functionalization(reapply_views=True)
        try:
            out = forward_backward(wrapped)
        finally:
            torch._disable_functionalization()
        reset_stack_trace()  # the copies below belong to no op
        for t, w in zip(flat, wrapped):
            value = _unwrapped(w)
            if value is not t:
                t.copy_(value)
        return tuple(_unwrapped(t) for t in out)

    # Values read in Python are taken from the real tensors and become
    # guards (check_replayable) rather than errors.
    with _fast_metadata():
        g = make_fx(joint, _error_on_data_dependent_ops=False)(*flat)
    reset_stack_trace()
    for node in g.graph.nodes:
        node.stack_trace = f"{node.name}|{node.stack_trace or ''}"
        # A tensor the step made from Python values (torch.tensor(...)) is
        # a constant of the graph, which make_fx keeps as the functional
        # tensor the step saw (usable only under functionalization): the
        # graph keeps the tensor inside it.
        value = getattr(g, node.target, None) if node.op == "get_attr" \
            else None
        if isinstance(value, torch.Tensor) and \
                torch._is_functional_tensor(value):
            setattr(g, node.target, torch._from_functional_tensor(value))
    where = {"g1": g, "calls": calls,
             "fwd_node": {k: fwd_of.get(gf) for k, gf in enumerate(groups)},
             "grad_name": {k: gf.name() for k, gf in enumerate(groups)}}
    return g, where, used


def seed_like(params):
    """The gradient seed d(loss)/d(loss) = 1, the last input of the traced
    graph, on the parameters' device."""
    return torch.ones((), device=params[0].device if params else "cpu")


# --------------------------------------------------------------------------
# From the FX graph to native nodes.


def trace_nodes(step, inputs, granularity="aten", cost="flop", repeats=5,
                workspace=True, copy_saved_parts=True):
    """(native nodes as JSON dicts with ids, the joint GraphModule, info) of
    one training step of `step` (a module returning the loss) on `inputs`.
    The replayer calls this to rebuild an export and runs the GraphModule.
    A node's traced ops are its `name` (the op that owns its memory) and,
    when there are more, all of them in FX order in `fx`. With
    `workspace`, what each op allocates beyond its outputs is measured
    (op_memory) and carried as the node's workspace; without, workspace
    is only what a module-granularity node holds inside itself.
    `copy_saved_parts`: see saved_parts.clone_saved_parts (exports made
    before it existed are rebuilt without it)."""
    step.train()
    with _TRACING:  # make_fx's tracer state is global to the process
        g2, info = trace_joint(step, inputs, copy_saved_parts)
    params, others = static_inputs(step)
    flat = params + others + list(inputs) + [seed_like(params)]
    saved = [b.detach().clone() for b in step.buffers()]
    try:
        with autocast_off():
            memory = op_memory(g2, flat, workspace)
            times = measure(g2, flat, repeats, warm=True) \
                if cost == "measured" else None
    finally:  # the runs updated running statistics (Ctrl-C included)
        with torch.no_grad():
            for b, v in zip(step.buffers(), saved):
                b.copy_(v)
    if times is not None:
        # A node's time is that of all its traced ops: a replay runs the
        # views and getitems too, and on small tensors they are not free.
        cost_of = lambda n, names: sum(times.get(x, 0) for x in names)
    else:
        cost_of = lambda n, names: flops(n)
    nodes = to_native(g2, info, cost_of, memory)
    if granularity == "module":
        nodes = by_module(nodes, info["calls"])
    out = []
    for i, n in enumerate(nodes):
        m = {"id": i, "name": n["name"], "kind": n["kind"], "op": n["op"],
             "mem": n["mem"], "cost": n["cost"]}
        if n.get("workspace"):
            m["workspace"] = n["workspace"]
        if n["grad_of"] is not None:
            m["grad_of"] = n["grad_of"]
        m["inputs"] = n["inputs"]
        if len(n["fx"]) > 1:
            m["fx"] = n["fx"]
        out.append(m)
    if info["grad_of_by_neighbour"] or info["grad_of_default_loss"]:
        print(f"rematbench.torch.trace: {info['grad_of_by_neighbour']} "
              f"backward ops without a grad_fn tag, "
              f"{info['grad_of_default_loss']} given grad_of = the loss",
              file=sys.stderr)
    return out, g2, info


def export(step, inputs, granularity="aten", cost="flop", repeats=5,
           workspace=True, copy_saved_parts=True):
    """The native nodes (JSON dicts with ids) of one training step and the
    number of FX nodes traced."""
    out, g2, _ = trace_nodes(step, inputs, granularity, cost, repeats,
                             workspace, copy_saved_parts)
    return out, len(g2.graph.nodes)
