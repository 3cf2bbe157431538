"""The traced joint graph's ATen ops as a rematbench graph's nodes: each
op's FLOPs or measured time, what it allocates beyond its outputs (its
workspace), and the mapping of ops to nodes (docs/model.md, "Training
graphs"; `Mapping` in graphs/corpus/torch/README.md), at ATen or module
granularity. rematbench.torch.trace calls it after tracing.
"""

import collections
import heapq
import math
import operator
import statistics
import time

import torch
from torch.utils._pytree import tree_flatten

aten = torch.ops.aten


# Ops that return views of an argument although their schemas do not say
# so: `_unsafe_view`, and the unsafe splits with which torch's RNN cells
# split their gates.
UNDECLARED_VIEWS = frozenset((aten._unsafe_view.default,
                              aten.unsafe_split.Tensor,
                              aten.unsafe_split_with_sizes.default,
                              aten.unsafe_chunk.default))


def is_alias_node(n):
    """getitem of a multi-output op, views and in-place ops: their result
    shares memory with an argument, so they are no node of their own."""
    if n.target is operator.getitem or n.target in UNDECLARED_VIEWS:
        return True
    schema = getattr(n.target, "_schema", None)
    return schema is not None and any(r.alias_info is not None
                                      for r in schema.returns)


def metas(n):
    m = n.meta.get("tensor_meta")
    if m is None:  # a multi-output op: its getitem users have the metadata
        outs = sorted((u for u in n.users if u.target is operator.getitem),
                      key=lambda u: u.args[1])
        return [x for u in outs for x in metas(u)]
    if isinstance(m, (list, tuple)) and not hasattr(m, "shape"):
        return [x for x in m if hasattr(x, "shape")]
    return [m]


def numel(n):
    return sum(math.prod(m.shape) for m in metas(n))


def node_bytes(n):
    return sum(
        math.prod(m.shape) * torch.empty((), dtype=m.dtype).element_size()
        for m in metas(n))


def shape(x):
    ms = metas(x) if isinstance(x, torch.fx.Node) else []
    return list(ms[0].shape) if len(ms) == 1 else None


def flops(n):
    """FLOPs of one ATen op (one multiply-add = 2): convolutions and matrix
    products from their shapes, everything else one per element of its
    largest tensor (output or input)."""
    t, a = n.target, n.args
    if t is aten.convolution.default:
        w = shape(a[1])
        base = numel(a[0]) if a[6] else numel(n)
        return 2 * base * math.prod(w[1:])
    if t is aten.convolution_backward.default:
        w, mask = shape(a[2]), a[10]
        base = numel(a[0]) if not a[7] else numel(a[1])
        conv = 2 * base * math.prod(w[1:])
        return conv * (int(mask[0]) + int(mask[1])) + (numel(a[0])
                                                         if mask[2] else 0)
    if t in (aten.mm.default, aten.addmm.default):
        x, y = (a[0], a[1]) if t is aten.mm.default else (a[1], a[2])
        (m, k), (_, c) = shape(x), shape(y)
        return 2 * m * k * c + (m * c if t is aten.addmm.default else 0)
    if t in (aten.bmm.default, aten.baddbmm.default):
        x, y = (a[0], a[1]) if t is aten.bmm.default else (a[1], a[2])
        (b, m, k), (_, _, c) = shape(x), shape(y)
        return 2 * b * m * k * c + (b * m * c
                                    if t is aten.baddbmm.default else 0)
    if t in (aten.max_pool2d_with_indices.default, aten.avg_pool2d.default):
        kernel = list(a[1]) if isinstance(a[1], (list, tuple)) else [a[1]]
        window = kernel[0]**2 if len(kernel) == 1 else math.prod(kernel)
        return math.prod(metas(n)[0].shape) * window
    sizes = [numel(n)] + [
        numel(x) for x in a if isinstance(x, torch.fx.Node)
    ] + [
        numel(y) for x in a if isinstance(x, (list, tuple))
        for y in x if isinstance(y, torch.fx.Node)
    ]
    return max(sizes)


def measure(g2, flat, repeats, warm=False):
    """Time of each op (views and getitems included) in nanoseconds: the
    median over `repeats` runs of the whole step, after one untimed run
    (first calls pick kernels and grow the allocator) unless the step has
    just run (`warm`), each op timed where it runs in the step. Timing an
    op in place, rather than repeating it on the same inputs, keeps what a
    real step pays: inputs that are no longer in cache and fresh output
    memory. On CUDA every op is synchronized before and after, so the
    figure is the kernel's time, not the launch's."""
    samples = collections.defaultdict(list)
    cuda = any(isinstance(t, torch.Tensor) and t.is_cuda for t in flat)
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    class Timer(torch.fx.Interpreter):

        def run_node(self, n):
            if n.op != "call_function":
                return super().run_node(n)
            args, kwargs = self.fetch_args_kwargs_from_env(n)
            sync()
            t0 = time.perf_counter_ns()
            res = n.target(*args, **kwargs)
            sync()
            samples[n.name].append(time.perf_counter_ns() - t0)
            return res

    untimed = 0 if warm else 1
    with torch.no_grad():
        for _ in range(repeats + untimed):
            Timer(g2).run(*flat)
    return {k: int(statistics.median(v[untimed:]))
            for k, v in samples.items()}


def op_memory(g2, flat, workspace=True):
    """What each op did with memory in a run of the traced step: returns
    (peak, aliases). With `workspace` (the run is under the profiler),
    `peak[name]` is the largest sum of the blocks op `name` allocated and
    had not freed at any moment while it ran: outputs, workspaces and
    temporaries alike, leaving out the blocks that end up as parameter
    gradients (static memory, as for rematbench.torch.measure).
    `aliases[name]` is the input node whose storage an op returned
    although its schema does not say it returns a view (only for ops with
    one tensor input: the memory is then that input's)."""
    from torch.profiler import record_function
    from rematbench.torch.measure import allocation_events, kept_blocks
    device = next(t.device for t in flat if isinstance(t, torch.Tensor))
    aliases = {}

    class Run(torch.fx.Interpreter):

        def run_node(self, n):
            if n.op != "call_function":
                return super().run_node(n)
            with record_function(_OP_MARK + n.name):
                r = super().run_node(n)
            ins = [x for x in n.all_input_nodes
                   if isinstance(self.env.get(x), torch.Tensor)]
            if isinstance(r, torch.Tensor) and len(ins) == 1 and \
                    not is_alias_node(n) and r.untyped_storage().nbytes() and \
                    _ptr(r) == _ptr(self.env[ins[0]]):
                aliases[n.name] = ins[0]
            return r

    with torch.no_grad():
        if not workspace:
            Run(g2).run(*flat)
            return {}, aliases
        out, events = allocation_events(lambda: Run(g2).run(*flat), device,
                                        mark=_OP_MARK)
    grads = kept_blocks(events, {_ptr(t) for t in tree_flatten(out[1:])[0]
                                 if isinstance(t, torch.Tensor)})
    per_op = {}
    for k, (p, b, op) in enumerate(events):
        if op is not None:
            per_op.setdefault(op, []).append((k, p, b))
    peak = {}
    for op, blocks in per_op.items():
        cur, total, top = {}, 0, 0
        for k, p, b in blocks:
            if b > 0 and k not in grads:
                cur[p] = b
                total += b
            elif b < 0 and p in cur:
                total -= cur.pop(p)
            top = max(top, total)
        peak[op] = top
    return peak, aliases


_OP_MARK = "rematbench.op:"


def _ptr(t):
    return t.untyped_storage().data_ptr()


def to_native(g2, info, cost_of, memory=None):
    """Returns the aten-granularity nodes (FX order, which is topological):
    a list of dicts with name, kind, op, mem, workspace, cost, inputs
    (indices), grad_of (index or None), fx (member FX names), call (module
    call id of a forward op or None). With `memory` (op_memory's result),
    a node's workspace is what its op allocated beyond the node's mem, and
    ops that returned their input's storage are views of it."""
    peak, aliases = memory or ({}, {})

    def is_alias(n):
        return is_alias_node(n) or n.name in aliases

    nodes = list(g2.graph.nodes)
    index = {n: i for i, n in enumerate(nodes)}
    place = [n for n in nodes if n.op == "placeholder"]
    tangent = place[-1]
    out = nodes[-1]
    out_vals = [x for x in tree_flatten(out.args)[0]
                if isinstance(x, torch.fx.Node)]
    loss_val = out_vals[0]

    live = set()
    stack = list(out_vals)
    while stack:
        n = stack.pop()
        if n in live or n.op != "call_function":
            continue
        live.add(n)
        stack.extend(x for x in n.all_input_nodes)

    rep = {}  # FX node -> FX node that owns its memory (None: static)
    for n in nodes:
        if n.op == "placeholder":
            rep[n] = None
        elif n.op == "call_function" and n in live:
            if is_alias(n):
                base = aliases.get(n.name, n.args[0])
                rep[n] = rep.get(base) if isinstance(base,
                                                     torch.fx.Node) else None
            else:
                rep[n] = n
    # Clones of saved parts join their reader's node
    # (saved_parts.clone_saved_parts).
    by_name = {n.name: n for n in nodes}
    joined = collections.defaultdict(list)
    for n in nodes:
        with_ = n.meta.get("remat_with")
        if with_ is not None and rep.get(n) is n and \
                rep.get(by_name[with_]) is not None:
            rep[n] = rep[by_name[with_]]
            joined[rep[n]].append(n)

    counted = {}

    def is_counted(v):
        # A value occupies activation memory if a real op (or the loss
        # output) reads it, directly or through views; parameter gradients
        # are read only by the graph output and belong to static_bytes.
        if v not in counted:
            counted[v] = v is loss_val or any(
                u in live and (is_counted(u) if is_alias(u) else True)
                for u in v.users)
        return counted[v]

    tags = {}
    by_origin = collections.defaultdict(list)
    for n in nodes:
        origin, _, tag = (n.stack_trace or "").split("\n")[0].partition("|")
        tags[n] = tag
        if rep.get(n) is not None:
            by_origin[origin].append(n)
    g1_nodes = {n.name: n for n in info["g1"].graph.nodes}

    def forward_of(g1name):
        while g1name is not None:
            if g1name in by_origin:
                return rep[by_origin[g1name][-1]]
            n1 = g1_nodes.get(g1name)
            arg = n1.args[0] if n1 is not None and n1.args else None
            g1name = arg.name if isinstance(arg, torch.fx.Node) else None
        return None

    reals = [n for n in nodes if rep.get(n) is n]
    kind, grad_of = {}, {}
    loss_node = rep[loss_val]
    for n in reals:
        tag = tags[n]
        if tag.startswith("bwd:") or tag.startswith("acc:") or tag == "seed":
            kind[n] = "backward"
        elif tag.startswith("mod:") or tag == "top":
            kind[n] = "forward"
        else:  # made by functionalize itself: backward if after the seed
            kind[n] = "backward" if any(
                kind.get(rep.get(x)) == "backward" or x is tangent
                for x in n.all_input_nodes) else "forward"
        if n is loss_node:
            kind[n] = "loss"
        if tag.startswith("bwd:"):
            f = forward_of(info["fwd_node"][int(tag[4:])])
            if f is not None and kind.get(f) in ("forward", "loss"):
                grad_of[n] = f

    # Gradient accumulations (and the rare op whose grad_fn maps to a
    # parameter) join the backward node that reads them: the convention
    # has the reader sum its contributions.
    backward = [n for n in reals if kind[n] == "backward"]
    for _ in range(len(backward)):
        missing = [n for n in backward if n not in grad_of]
        if not missing:
            break
        for n in reversed(missing):
            readers = sorted((rep[u] for u in _real_users(n, rep, live,
                                                          is_alias)
                              if rep[u] in grad_of), key=index.get)
            if readers:
                grad_of[n] = grad_of[readers[0]]
        for n in missing:
            if n in grad_of:
                continue
            srcs = [rep[x] for x in n.all_input_nodes
                    if rep.get(x) is not None and rep[x] in grad_of]
            if srcs:
                grad_of[n] = grad_of[srcs[-1]]
    info["grad_of_by_neighbour"] = sum(
        1 for n in backward
        if not tags[n].startswith("bwd:") and not tags[n].startswith("acc:"))
    info["grad_of_default_loss"] = sum(1 for n in backward if n not in grad_of)
    for n in backward:
        if n not in grad_of:
            grad_of[n] = loss_node

    pos = {n: i for i, n in enumerate(reals)}
    members = collections.defaultdict(list)
    for n in nodes:
        if rep.get(n) is not None:
            members[rep[n]].append(n.name)
    result = []
    for n in reals:
        outs = [u for u in n.users if u.target is operator.getitem]
        if outs:
            own = sum(node_bytes(u) for u in outs if is_counted(u))
        else:
            own = node_bytes(n) if is_counted(n) else 0
        mem = own + sum(node_bytes(c) for c in joined[n] if is_counted(c))
        ins = sorted({pos[rep[x]] for y in [n] + joined[n]
                      for x in y.all_input_nodes
                      if rep.get(x) is not None and rep[x] is not n})
        tag = tags[n]
        result.append({
            "name": n.name,
            "kind": kind[n],
            "op": str(n.target),
            "mem": mem,
            "workspace": max(0, peak.get(n.name, 0) - own),
            "cost": cost_of(n, members[n]),
            "inputs": ins,
            "grad_of": pos[grad_of[n]] if n in grad_of else None,
            "fx": members[n],
            "call": int(tag[4:]) if tag.startswith("mod:") else None,
        })
    return result


def _real_users(n, rep, live, is_alias):
    """Users of n's value through views."""
    out, stack = [], list(n.users)
    while stack:
        u = stack.pop()
        if u not in live:
            continue
        if rep.get(u) is u:
            out.append(u)
        elif is_alias(u):
            stack.extend(u.users)
    return out


def by_module(aten_nodes, calls):
    """Merges the aten nodes into one forward node per leaf-module call and
    one backward node per such forward node; ops outside leaf modules stay
    one node each. A merged node's mem is what its members hand to other
    nodes; what only its own members read is workspace."""
    key = []
    for i, n in enumerate(aten_nodes):
        if n["kind"] == "backward":
            key.append(None)
        elif n["call"] is not None and calls[n["call"]][1]:
            key.append(("m", n["call"]))
        else:
            key.append(("op", i))
    for i, n in enumerate(aten_nodes):
        if key[i] is None:
            key[i] = ("b", key[n["grad_of"]])
    groups = collections.OrderedDict()
    for i, k in enumerate(key):
        groups.setdefault(k, []).append(i)
    gid = {k: j for j, k in enumerate(groups)}
    g_inputs = [set() for _ in groups]
    read_outside, read = set(), set()
    for i, n in enumerate(aten_nodes):
        for x in n["inputs"]:
            read.add(x)
            if key[x] != key[i]:
                g_inputs[gid[key[i]]].add(gid[key[x]])
                read_outside.add(x)
    # Topological order of the groups, smallest first FX position first.
    indeg = [len(s) for s in g_inputs]
    users = [[] for _ in groups]
    for j, s in enumerate(g_inputs):
        for x in s:
            users[x].append(j)
    first = [members[0] for members in groups.values()]
    heap = [(first[j], j) for j in range(len(groups)) if indeg[j] == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        _, j = heapq.heappop(heap)
        order.append(j)
        for u in users[j]:
            indeg[u] -= 1
            if indeg[u] == 0:
                heapq.heappush(heap, (first[u], u))
    if len(order) != len(groups):
        raise SystemExit("rematbench.torch.trace: module grouping made a "
                         "cycle")
    new_id = {j: k for k, j in enumerate(order)}
    keys = list(groups)
    seen_calls = collections.Counter()
    fwd_name = {}
    result = [None] * len(groups)
    for j in order:
        k, members = keys[j], groups[keys[j]]
        ns = [aten_nodes[i] for i in members]
        head = ns[0]
        if k[0] == "m":
            path = calls[k[1]][0]
            seen_calls[path] += 1
            name = path if seen_calls[path] == 1 else \
                f"{path}#{seen_calls[path] - 1}"
            op = calls[k[1]][2]
        elif k[0] == "op":
            name, op = head["name"], head["op"]
        else:
            name, op = fwd_name[k[1]] + "_bwd", None
        if k[0] != "b":
            fwd_name[k] = name
        mem = sum(aten_nodes[i]["mem"] for i in members
                  if i in read_outside or i not in read)
        # Members' values that stay inside the call, held while it runs,
        # and the largest of the members' own workspaces.
        total = sum(n["mem"] for n in ns) + max(
            n.get("workspace", 0) for n in ns)
        kind = "loss" if any(n["kind"] == "loss" for n in ns) else \
            ns[0]["kind"]
        result[new_id[j]] = {
            "name": name,
            "kind": kind,
            "op": op,
            "mem": mem,
            "workspace": total - mem,
            "cost": sum(n["cost"] for n in ns),
            "inputs": sorted(new_id[x] for x in g_inputs[j]),
            "grad_of": new_id[gid[k[1]]] if k[0] == "b" else None,
            "fx": [f for n in ns for f in n["fx"]],
        }
    for j in order:
        k = keys[j]
        if k[0] == "b":
            fwd = result[new_id[gid[k[1]]]]
            result[new_id[j]]["op"] = f"{fwd['op']}_backward"
    return result


