"""Tags for the ops a training step's trace records (trace.py): which
module call or autograd Function each FX node came from, carried in the
node's stack trace as `name|tag` (`mod:K` a module call, `bwd:K`/`acc:K`
a grad_fn and the gradient accumulation after it, `seed`, `top`), as
aot_autograd's own stack-trace hooks carry theirs."""

import torch
from torch.fx import traceback as fx_traceback
from torch.fx.experimental.proxy_tensor import get_proxy_slot
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten


class Tagger(TorchFunctionMode):
    """During the forward: maps each new grad_fn to the FX node that made
    it. A grad_fn of a call's output maps to the output's node.
    A call such as F.multi_head_attention_forward runs many ATen ops whose
    grad_fns are not outputs (the mode does not see calls nested in a
    call): each maps to the unclaimed node made during the call whose op
    has the grad_fn's name (BmmBackward0 -> aten.bmm) and, if several do,
    whose arguments include the grad_fn's saved tensors and the nodes of
    the grad_fn's inputs (its next_functions), first made first."""

    def __init__(self, fwd_of, tracer):
        super().__init__()
        self.fwd_of = fwd_of  # grad_fn -> FX node name
        self.tracer = tracer
        self.graph = tracer.graph

    def __torch_function__(self, func, types, args=(), kwargs=None):
        before = len(self.graph.nodes)
        out = func(*args, **(kwargs or {}))
        roots = {}
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t.grad_fn is not None:
                g = t.grad_fn
                if g not in self.fwd_of and self._node_of(t) is not None:
                    self.fwd_of[g] = self._node_of(t)
                    roots[g] = None
        if roots:
            self._map_internal(list(roots), len(self.graph.nodes) - before)
        return out

    def _map_internal(self, roots, n_new):
        order, seen = [], set(roots)

        def visit(g):  # post-order: a grad_fn after those of its inputs
            for nxt, _ in g.next_functions:
                if nxt is None or nxt in seen or nxt in self.fwd_of:
                    continue
                if type(nxt).__name__ == "AccumulateGrad":
                    continue
                seen.add(nxt)
                visit(nxt)
                order.append(nxt)

        for r in roots:
            visit(r)
        if not order:
            return
        made = []
        for n in reversed(self.graph.nodes):
            if len(made) == n_new:
                break
            made.append(n)
        made.reverse()
        claimed = set(self.fwd_of[r] for r in roots)
        for g in order:
            want = op_key(g.name())
            saved = {self._node_of(t) for t in _saved_tensors(g)}
            saved |= {self._input_node(nxt) for nxt, _ in g.next_functions}
            saved -= {None}
            best = None
            for n in made:
                if n.name in claimed or n.op != "call_function":
                    continue
                if op_key(str(n.target)) != want:
                    continue
                args = {a.name for a in n.all_input_nodes}
                if saved <= args | {n.name}:
                    best = n
                    break
                best = best or n
            if best is None:
                own = getattr(g, "_saved_result", None)
                own = (self._node_of(own)
                       if isinstance(own, torch.Tensor) else None)
                self.fwd_of[g] = own or self.fwd_of[roots[0]]
            else:
                claimed.add(best.name)
                self.fwd_of[g] = best.name

    def _node_of(self, t):
        if torch._is_functional_tensor(t):
            t = torch._from_functional_tensor(t)
        p = get_proxy_slot(t, self.tracer, None)
        return None if p is None else p.proxy.node.name

    def _input_node(self, g):
        """The FX node of the value whose gradient `g` receives."""
        if g is None:
            return None
        if type(g).__name__ == "AccumulateGrad":
            return self._node_of(g.variable)
        return self.fwd_of.get(g)


def op_key(name):
    """'BmmBackward0' and 'aten.bmm.default' -> 'bmm';
    'NllLossBackward0' and 'aten.nll_loss_forward.default' -> 'nllloss'."""
    if name.startswith("aten."):
        name = name.split(".")[1]
        if name.endswith("_forward"):
            name = name[:-len("_forward")]
    else:
        name = name.rstrip("0123456789")
        if name.endswith("Backward"):
            name = name[:-len("Backward")]
    return name.replace("_", "").lower()


def _saved_tensors(g):
    out = []
    for attr in dir(g):
        if attr.startswith("_saved_"):
            try:
                v = getattr(g, attr)
            except RuntimeError:  # freed or not available
                continue
            out.extend(x for x in tree_flatten(v)[0]
                       if isinstance(x, torch.Tensor))
    return out


def stack_trace_scope():
    """The scope in which fx_traceback.set_stack_trace() sets the stack trace
    that make_fx copies onto each node it creates: under
    `preserve_node_meta`, set_stack_trace writes the current node meta that
    proxy creation copies."""
    return fx_traceback.preserve_node_meta()


def reset_stack_trace():
    """Forget the last tag, so that what is traced after the step (the
    copies into the tensors it changed) has none."""
    fx_traceback.current_meta = {}


def setter(tag, post=False):
    if post:
        return lambda grad_inputs, grad_outputs: fx_traceback.set_stack_trace(
            [tag])
    return lambda grad_outputs: fx_traceback.set_stack_trace([tag])


def reachable(root):
    seen, order, stack = set(), [], [root]
    while stack:
        g = stack.pop()
        if g is None or g in seen:
            continue
        seen.add(g)
        order.append(g)
        stack.extend(n for n, _ in g.next_functions)
    return order
