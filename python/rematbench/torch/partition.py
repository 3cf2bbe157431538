"""The traced step's FX graph cut into the graph's nodes: which ATen ops
each node covers, what it keeps for other nodes, which ops write buffers
or draw random numbers, which values are static (computed from parameters
and batch alone) and which ops outside every node update buffers.

Everything both engines need to know about the traced graph, found once;
rematbench.torch.lowering turns a schedule into steps over it.
"""

import operator

import torch
import torch.fx

from rematbench.torch import rng
from rematbench.torch.nodes import UNDECLARED_VIEWS


class BadInput(ValueError):
    """One line naming the file (or schedule) and the event or node."""


# Ops that update batch-norm running statistics in place although their
# schema does not mark the write (so functionalize keeps them): args 3, 4.
RUNNING_STAT_OPS = ("native_batch_norm", "_native_batch_norm_legit",
                    "cudnn_batch_norm", "miopen_batch_norm",
                    "_batch_norm_impl_index")


def writes(target):
    """Argument positions an op writes: declared in its schema (`Tensor(a!)`)
    or known (running statistics)."""
    out = set()
    schema = getattr(target, "_schema", None)
    if schema is not None:
        for i, a in enumerate(schema.arguments):
            if a.alias_info is not None and a.alias_info.is_write:
                out.add(i)
    s = str(target)
    if (s.split(".")[1] if s.startswith("aten.") else s) in RUNNING_STAT_OPS:
        out |= {3, 4}
    return out


def is_alias(target):
    """Whether op `target` returns a view of an argument."""
    schema = getattr(target, "_schema", None)
    return target in UNDECLARED_VIEWS or schema is not None and any(
        r.alias_info is not None for r in schema.returns)


def storage(t):
    """(data pointer, bytes) of a tensor's storage."""
    s = t.untyped_storage()
    return s.data_ptr(), s.nbytes()


def tensors(v):
    """The tensors in a value (a tensor, or nested tuples and lists)."""
    if v is None:
        return []
    if isinstance(v, (tuple, list)):
        return [x for y in v for x in tensors(y)]
    return [v] if isinstance(v, torch.Tensor) else []


class Partition:
    """`traced` (a rematbench.torch.TracedStep) cut into its graph's nodes.

    fx, index: the FX nodes in order and each one's position (an FX
        index, the name used everywhere below);
    members[v]: the FX indices node v covers (FX order); owner: FX index
        -> node;
    keep[v]: the members node v keeps once computed (read by other nodes'
        ops, or the loss); the others are dropped when it ends;
    writes: FX index -> written argument positions that are buffers
        (a recomputation writes clones);
    random: FX indices of random ops;
    static: FX index -> value of the static values (placeholders,
        constants and pure ops of them), for the current bind();
    side: FX indices of buffer-writing ops outside every node (run once);
    grad_of_param, grad_src, grad_parts, loss_fx: where the step's outputs
        (the loss and each parameter's gradient) are made."""

    def __init__(self, traced):
        self.traced = traced
        self.params, self.buffers = traced.params, traced.buffers
        fx = self.fx = list(traced.module.graph.nodes)
        self.index = idx = {n: i for i, n in enumerate(fx)}
        by_name = {n.name: n for n in fx}
        self.members, owner = [], {}
        for n in traced.nodes:
            ms = sorted(idx[by_name[x]] for x in n.get("fx") or [n["name"]])
            for m in ms:
                owner[m] = n["id"]
            self.members.append(ms)
        self.owner = owner
        self.place = [n for n in fx if n.op == "placeholder"]
        outs = list(fx[-1].args[0])
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
                if not is_alias(src.target):
                    break
                src = src.args[0]
        self.side = self.bind(traced.inputs)
        # What a node keeps once computed: members read by ops of other
        # nodes, or the loss. Tuples of multi-output ops are never kept.
        self.keep = []
        for v, ms in enumerate(self.members):
            self.keep.append([
                m for m in ms if not self.is_tuple(fx[m]) and (
                    m == self.loss_fx or any(
                        owner.get(idx[u], v) != v or idx[u] in self.side
                        for u in fx[m].users if u.op != "output"))])
        # Written arguments that are buffers (placeholders): copied when
        # the op is recomputed. A write to a node's own fresh value
        # (dropout's bernoulli_ on its empty_like) is left in place.
        self.writes = {}
        for m in owner:
            n = fx[m]
            w = {i for i in writes(n.target) if i < len(n.args) and
                 isinstance(n.args[i], torch.fx.Node) and
                 n.args[i].op == "placeholder"}
            if w:
                self.writes[m] = w
        self.random = {m for m in owner if rng.is_random(fx[m].target)}
        self.check_reads()

    @property
    def device(self):
        return self.params[0].device

    def flat(self, inputs):
        """The placeholders' values: parameters, buffers, the batch and the
        gradient seed."""
        flat = self.traced.flat(inputs)
        if len(flat) != len(self.place):
            raise BadInput(f"{self.traced.name}: the traced graph has "
                           f"{len(self.place)} inputs, the step {len(flat)}")
        return flat

    def bind(self, inputs):
        """Computes the static values for `inputs` (the batch) and the
        parameters' current values (a transposed weight), and returns the
        FX indices of ops outside every node that write (buffer updates,
        run once per step)."""
        fx, idx, member_set = self.fx, self.index, self.owner
        flat = self.flat(inputs)
        self.static = {}
        side = []
        with torch.no_grad():
            for i, n in enumerate(fx):
                if n.op == "placeholder":
                    self.static[i] = flat[self.place.index(n)]
                elif n.op == "get_attr":
                    self.static[i] = getattr(self.traced.module, n.target)
                elif n.op == "call_function" and i not in member_set:
                    ins = [idx[x] for x in n.all_input_nodes]
                    if not writes(n.target) and \
                            not rng.is_random(n.target) and \
                            all(j in self.static for j in ins):
                        args, kwargs = torch.fx.node.map_arg(
                            (n.args, n.kwargs),
                            lambda a: self.static[idx[a]])
                        self.static[i] = n.target(*args, **kwargs)
                    elif self._side_effect(n):
                        side.append(i)
        self.static_ptrs = {storage(t)[0] for v in self.static.values()
                            for t in tensors(v)}
        return side

    def is_tuple(self, n):
        return any(u.target is operator.getitem for u in n.users)

    def _side_effect(self, n):
        """An op outside every node matters only if it writes (or feeds an
        op that writes) a placeholder: a buffer update."""
        seen, stack = set(), [n]
        while stack:
            u = stack.pop()
            if u in seen:
                continue
            seen.add(u)
            if u.op == "call_function" and writes(u.target):
                return True
            stack.extend(x for x in u.users if self.index[x] not in
                         self.owner and x.op == "call_function")
        return False

    def check_reads(self):
        """Every op of node v must read only static values, v's own values
        or those of v's declared inputs: otherwise the export's mapping is
        wrong and a schedule valid for the graph could not run."""
        nodes = self.traced.nodes
        for v, ms in enumerate(self.members):
            allowed = set(nodes[v]["inputs"]) | {v}
            for m in ms:
                for x in self.fx[m].all_input_nodes:
                    u = self.owner.get(self.index[x])
                    if u is None and self.index[x] not in self.static:
                        raise BadInput(
                            f"{self.traced.name}: node {v} "
                            f"({nodes[v]['name']}): op {self.fx[m].name} "
                            f"reads {x.name}, which no node computes")
                    if u is not None and u not in allowed:
                        raise BadInput(
                            f"{self.traced.name}: node {v} "
                            f"({nodes[v]['name']}): op {self.fx[m].name} "
                            f"reads node {u} ({nodes[u]['name']}), not an "
                            "input of the node")

    def random_in_eager_order(self, events):
        """True if the schedule first runs the random ops in FX (eager)
        order: then each one's state saved at its first execution gives
        the eager step's masks without recording them beforehand."""
        firsts, done = [], set()
        for kind, v, _ in events:
            if kind == "c" and v not in done:
                done.add(v)
                firsts += [m for m in self.members[v] if m in self.random]
        return firsts == sorted(self.random)
