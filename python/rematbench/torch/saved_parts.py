"""The small parts of a multi-output op that the backward reads, cloned
in the traced joint graph (trace.py) so that its large output is freed
when plain training frees it."""

import operator

import torch

from rematbench.torch.checks import node_tag
from rematbench.torch.nodes import is_alias_node, node_bytes

aten = torch.ops.aten


def clone_saved_parts(g2):
    """A multi-output op is one node, whose outputs live until the last
    use of any of them: batch norm's output would be held, in the model,
    until the backward reads the small batch statistics beside it. Plain
    training frees the output after its forward reader, and so does the
    program. So that the model holds what training holds: when the parts
    of an op that the backward does not read have one reader R (relu
    after batch norm), each small part (at most an eighth of the op's
    outputs) that the backward reads is cloned just before R, and the
    backward reads the clone. The op's node is then freed after R. When
    the backward reads R's value too (relu), the clone joins R's node
    (meta `remat_with`): it lives as long as R's value, which is kept
    anyway, and the forward stays the chain that the chain methods
    segment. Otherwise (batch norm before a residual add) the clone is a
    node of its own. Cloning is exact and costs one copy of a few
    kilobytes."""
    graph = g2.graph
    order = {n: i for i, n in enumerate(graph.nodes)}
    changed = False
    for n in list(graph.nodes):
        parts = [u for u in n.users if u.target is operator.getitem]
        if n.op != "call_function" or len(parts) < 2:
            continue
        total = sum(node_bytes(u) for u in parts)
        late = {u: [r for r in _readers(u) if _in_backward(r)]
                for u in parts}
        early = {r for u in parts if not late[u] for r in _readers(u)}
        if len(early) != 1:
            continue
        (reader,) = early
        if reader.op != "call_function":
            continue
        for u in parts:
            if not late[u] or 8 * node_bytes(u) > total or \
                    order[u] > order[reader]:
                continue
            with graph.inserting_before(reader):
                c = graph.call_function(aten.clone.default, (u,))
            c.meta.update({k: v for k, v in u.meta.items()
                           if k in ("val", "tensor_meta")})
            if any(_in_backward(r) for r in _readers(reader)):
                c.meta["remat_with"] = reader.name
            # An origin of its own: no backward op takes the clone for
            # the forward op it differentiates.
            c.stack_trace = f"{c.name}|{node_tag(reader)}"
            for r in list(u.users):
                if r is not c and _in_backward(r):
                    r.replace_input_with(u, c)
            changed = True
    if changed:
        g2.recompile()


def _readers(n):
    """The ops that read n's value, directly or through views."""
    out = []
    for u in n.users:
        out.extend(_readers(u) if is_alias_node(u) else [u])
    return out


def _in_backward(n):
    tag = node_tag(n)
    return n.op == "output" or tag.startswith(("bwd:", "acc:", "seed"))
