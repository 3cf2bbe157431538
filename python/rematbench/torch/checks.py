"""What a traced step cannot replay on the next batch, refused in one line
naming the module and the op, and what it holds for only as traced: the
values it read in Python, which a plan checks on every batch (Guards), and
the autocast state it was traced in.
"""

import contextlib

import torch
import torch.fx
from torch.utils._pytree import tree_flatten

aten = torch.ops.aten

AUTOCAST_DEVICES = ("cpu", "cuda")


def autocast_state():
    """Whether autocast is on, and to which dtype, on each device: a
    traced step's casts are those of the state it was traced in."""
    return tuple((d, torch.is_autocast_enabled(d), torch.get_autocast_dtype(d))
                 for d in AUTOCAST_DEVICES)


@contextlib.contextmanager
def autocast_off():
    """Autocast off on every device: the traced graph holds the casts
    autocast made while tracing, and running its ops under autocast again
    would cast them twice."""
    with contextlib.ExitStack() as stack:
        for d in AUTOCAST_DEVICES:
            stack.enter_context(torch.autocast(d, enabled=False))
        yield


def node_tag(n):
    """Where an FX node came from: the tag after `origin|` in its stack
    trace (`mod:K` a module call, `bwd:K`/`acc:K` a grad_fn, `seed`,
    `top`)."""
    return (n.stack_trace or "").split("\n")[0].partition("|")[2]


class Unsupported(ValueError):
    """A step the tracer cannot replay faithfully; one line naming the
    module and the op."""


def check_replayable(g1, info):
    """Raises Unsupported for what a traced step cannot replay on the next
    batch: an op whose output shape depends on the data (boolean-mask
    indexing, nonzero, unique: the traced shapes hold for the example
    batch only) or a sparse tensor (the replay counts and frees dense
    storages). `g1` is the joint graph: functionalized, or, where
    functionalization failed (on sparse tensors, with a message about
    storage), traced as the step runs."""
    for n in g1.graph.nodes:
        if n.op != "call_function" or not isinstance(
                n.target, torch._ops.OpOverload):
            continue
        tags = n.target.tags
        vals = [v for v in tree_flatten(n.meta.get("val"))[0]
                if isinstance(v, torch.Tensor)]
        if (torch.Tag.dynamic_output_shape in tags or
                torch.Tag.data_dependent_output in tags) and \
                not integer_indexing(n) and not reads_value(n):
            why = ("its output's shape depends on the batch's values "
                   "(boolean-mask indexing, nonzero, unique): a plan holds "
                   "for the traced shapes only")
        elif "sparse" in str(n.target) or any(
                v.layout != torch.strided for v in vals):
            why = ("it makes a sparse tensor (a sparse embedding's "
                   "gradient?), which rematbench does not replay")
        else:
            continue
        raise Unsupported(f"{module_of(n, info)}: op {n.target}: {why}")


def refuse_changed_input(g1, info, first, k):
    """Raises Unsupported for a step whose forward changes tensor k of its
    batch in place (the batch's placeholders start at `first`): a
    recomputation would read the changed value, so no plan can give plain
    training's step. Names the first op that writes it."""
    place = [n for n in g1.graph.nodes if n.op == "placeholder"][first + k]
    for n in g1.graph.nodes:
        schema = getattr(n.target, "_schema", None)
        if n.op == "call_function" and schema is not None and any(
                a.alias_info is not None and a.alias_info.is_write and
                k < len(n.args) and n.args[k] is place
                for k, a in enumerate(schema.arguments)):
            where = f"{module_of(n, info)}: op {n.target}"
            break
    else:
        where = "the training step"
    raise Unsupported(f"{where}: changes the batch's tensor {k} in place, "
                      "which a recomputation would read changed: have the "
                      "forward change a copy")


def integer_indexing(n):
    """aten.index with integer index tensors only: its output's shape is
    the indices', whatever their values (boolean masks make it dynamic)."""
    if n.target is not aten.index.Tensor:
        return False
    idx = [x.meta.get("val") for x in n.args[1] if x is not None]
    return all(isinstance(v, torch.Tensor) and not v.is_floating_point()
               and v.dtype not in (torch.bool, torch.uint8) for v in idx)


def module_of(n, info):
    """'module PATH (Class)' of the module call an FX node ran in (a
    backward op: that of the forward op it differentiates)."""
    g1 = {m.name: m for m in info["g1"].graph.nodes}
    tag = node_tag(n)
    for _ in range(2):
        if tag.startswith(("bwd:", "acc:")):
            fwd = g1.get(info["fwd_node"].get(int(tag[4:])))
            tag = node_tag(fwd) if fwd is not None else ""
    if tag.startswith("mod:"):
        path, _, cls = info["calls"][int(tag[4:])]
        # The traced step wraps the model as its `model`: paths are named
        # as in the user's model.
        path = path.removeprefix("model").removeprefix(".")
        return f"module '{path or '(the model)'}' ({cls})"
    return "the training step"



def reads_value(n):
    """Whether FX node n hands a tensor's value to Python (`.item()`,
    `bool(t)`, torch.equal): an op with a data-dependent output that is not
    a tensor."""
    return n.op == "call_function" and \
        isinstance(n.target, torch._ops.OpOverload) and \
        torch.Tag.data_dependent_output in n.target.tags and \
        not any(isinstance(v, torch.Tensor)
                for v in tree_flatten(n.meta.get("val"))[0])


class Guards:
    """The values a traced step read in Python, which the traced graph has
    as constants (a mask check took one branch): `module` computes them
    from the graph's inputs, `values` are the example batch's and `where`
    names the module that read each. check(flat) is the list of those a
    batch gives otherwise; a plan runs only on batches with none."""

    def __init__(self, g1, info, flat):
        reads = [n for n in g1.graph.nodes if reads_value(n)]
        self.where = [module_of(n, info) for n in reads]
        self.module = None
        self.values = ()
        if not reads:
            return
        needed, stack = set(), list(reads)
        while stack:
            n = stack.pop()
            if n in needed:
                continue
            needed.add(n)
            if n.op == "call_function" and (
                    torch.Tag.nondeterministic_seeded in
                    getattr(n.target, "tags", ()) or
                    any(a.alias_info is not None and a.alias_info.is_write
                        for a in getattr(n.target, "_schema", None)
                        .arguments)):
                raise Unsupported(
                    f"{module_of(n, info)}: op {n.target}: a value read in "
                    "Python depends on random numbers or on a buffer the "
                    "step changes, which a plan cannot check before the "
                    "step: take the check out of the training step "
                    "(LayerDrop, stochastic depth drawn in Python)")
            stack.extend(n.all_input_nodes)
        g, env = torch.fx.Graph(), {}
        for n in g1.graph.nodes:
            if n.op == "placeholder" or n in needed:
                env[n] = g.node_copy(n, env.__getitem__)
        g.output(tuple(env[n] for n in reads))
        self.module = torch.fx.GraphModule(g1, g)
        self.values = self.compute(flat)

    def compute(self, flat):
        if self.module is None:
            return ()
        with torch.no_grad(), autocast_off():
            return tuple(self.module(*flat))

    def check(self, flat):
        """[(where, traced value, this batch's)] for every value that
        differs."""
        return [(w, a, b) for w, a, b in
                zip(self.where, self.values, self.compute(flat)) if a != b]
