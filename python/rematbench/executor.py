"""Runs a rematerialization schedule on the traced training step it was
made for: the executor of scripts/replay_torch.py and rematbench.torch.

A Program cuts the functionalized joint FX graph of rematbench.trace into
the graph's nodes and runs a schedule event by event: `c v` runs the ops
node v covers (its `fx` list, or its `name`), in FX order, on the live
values of v's inputs; `f v` drops v's values. Views share storage with
their base; tuple results of multi-output ops are dropped once their parts
are taken. Random ops replay the RNG state of their first (eager-order)
execution, and batch-norm running statistics are updated exactly once
(scripts/replay_torch.py's docstring has the details). With measure=True
it counts the bytes of the distinct storages live nodes hold after every
op: the measured activation peak.
"""

import operator
import time


class BadInput(ValueError):
    """One line naming the file (or schedule) and the event or node."""


RANDOM_WORDS = ("bernoulli", "dropout", "rand", "normal", "uniform",
                "multinomial", "exponential", "geometric", "cauchy",
                "log_normal", "random_")
# Ops that update batch-norm running statistics in place although their
# schema does not mark the write (so functionalize keeps them): args 3, 4.
RUNNING_STAT_OPS = ("native_batch_norm", "_native_batch_norm_legit",
                    "cudnn_batch_norm", "miopen_batch_norm",
                    "_batch_norm_impl_index")


def _op_name(target):
    s = str(target)
    return s.split(".")[1] if s.startswith("aten.") else s


def _is_random(target):
    import torch
    if torch.Tag.nondeterministic_seeded in getattr(target, "tags", ()):
        return True
    name = _op_name(target)
    return any(w in name for w in RANDOM_WORDS)


def _bernoulli_in_layout(x, p=0.5, *, generator=None):
    """aten.bernoulli.p as plain training ran it. Dropout draws its mask
    in place, `bernoulli_(empty_like(x), p)`, into a tensor with x's
    strides; functionalization made that the out-of-place
    `bernoulli.p(empty_like(x), p)`, whose result is contiguous. The random
    numbers fill memory in order, so on a transposed x (attention with
    batch_first=True) they would land on other elements than in plain
    training, and the masks would differ."""
    import torch
    return torch.empty_like(x).bernoulli_(p, generator=generator)


def eager_op(target):
    """The callable that runs traced op `target` as plain training does."""
    import torch
    if target is torch.ops.aten.bernoulli.p:
        return _bernoulli_in_layout
    return target


def traced_op(run):
    """The traced op that callable `run` (from eager_op) stands for."""
    import torch
    if run is _bernoulli_in_layout:
        return torch.ops.aten.bernoulli.p
    return run


def _writes(target):
    """Argument positions an op writes: declared in its schema (`Tensor(a!)`)
    or known (running statistics)."""
    out = set()
    schema = getattr(target, "_schema", None)
    if schema is not None:
        for i, a in enumerate(schema.arguments):
            if a.alias_info is not None and a.alias_info.is_write:
                out.add(i)
    if _op_name(target) in RUNNING_STAT_OPS:
        out |= {3, 4}
    return out


def _storage(t):
    """(data pointer, bytes) of a tensor's storage."""
    s = t.untyped_storage()
    return s.data_ptr(), s.nbytes()


def _tensors(v):
    if v is None:
        return []
    if isinstance(v, (tuple, list)):
        return [x for y in v for x in _tensors(y)]
    import torch
    return [v] if isinstance(v, torch.Tensor) else []




class Program:
    """The FX graph cut into the export's nodes, ready to run event by
    event."""

    def __init__(self, step):
        """`step` (replay_torch.Step, rematbench.torch.Plan) holds the
        traced GraphModule `g2`, the graph's `graph["nodes"]`, `params`,
        `buffers` and `inputs` (the placeholders' values), `path` (names
        it in errors), `device` and `seed` (the RNG seed of the step whose
        random ops are replayed; None: the generator's state when a run
        starts)."""
        import torch
        from torch.fx.node import map_arg
        self.torch, self.step, self.map_arg = torch, step, map_arg
        g2, nodes = step.g2, step.graph["nodes"]
        fx = list(g2.graph.nodes)
        self.fx = fx
        self.index = idx = {n: i for i, n in enumerate(fx)}
        by_name = {n.name: n for n in fx}
        self.members, owner = [], {}
        for n in nodes:
            names = n.get("fx") or [n["name"]]
            ms = sorted(idx[by_name[x]] for x in names)
            for m in ms:
                owner[m] = n["id"]
            self.members.append(ms)
        self.owner = owner
        self.place = [n for n in fx if n.op == "placeholder"]
        flat = self._flat(step.inputs)
        out_node = fx[-1]
        outs = list(out_node.args[0])
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
                if not _alias_op(src.target):
                    break
                src = src.args[0]
        member_set = set(owner)
        self.side = self._bind(flat, member_set)
        # What a node keeps once computed: members read by ops of other
        # nodes, or the loss. Tuples of multi-output ops are never kept.
        self.keep = []
        for v, ms in enumerate(self.members):
            keep = []
            for m in ms:
                if m == self.loss_fx or any(
                        self.owner.get(idx[u], v) != v or idx[u] in self.side
                        for u in fx[m].users if u.op != "output"):
                    if not self._is_tuple(fx[m]):
                        keep.append(m)
            self.keep.append(keep)
        # Written arguments that are buffers (placeholders): copied when
        # the op is recomputed. A write to a node's own fresh value
        # (dropout's bernoulli_ on its empty_like) is left in place.
        self.writes = {}
        for ms in self.members:
            for m in ms:
                n = fx[m]
                w = {i for i in _writes(n.target) if i < len(n.args) and
                     isinstance(n.args[i], torch.fx.Node) and
                     n.args[i].op == "placeholder"}
                if w:
                    self.writes[m] = w
        self.random = {m for ms in self.members for m in ms
                       if _is_random(fx[m].target)}
        self.check_reads()
        # Each op's argument fetching compiled once: the replay loop is
        # timed, and fx's map_arg per call would add to every op's time.
        self.fetch = {m: (eager_op(fx[m].target), _fetcher(fx[m].args, idx),
                          _fetcher(fx[m].kwargs, idx))
                      for ms in self.members for m in ms}
        self.rng_states = self.record_rng(step.seed) \
            if step.seed is not None else None

    def _flat(self, inputs):
        """The placeholders' values: parameters, buffers, the batch and the
        gradient seed."""
        step = self.step
        flat = step.params + step.buffers + list(inputs) + \
            [self.torch.ones((), device=step.params[0].device)]
        if len(flat) != len(self.place):
            raise BadInput(f"{step.path}: the traced graph has "
                           f"{len(self.place)} inputs, the step {len(flat)}")
        return flat

    def rebind(self, inputs):
        """Runs later replays on another batch (same shapes) and on the
        parameters' current values: the static values (pure ops of
        parameters and batch, such as a transposed weight) are computed
        again."""
        self._bind(self._flat(inputs), set(self.owner))

    def _bind(self, flat, member_set):
        """Computes the static values (placeholders, constants and pure ops
        of them) and returns the FX indices of ops outside every node that
        write (buffer updates, run once per replay)."""
        torch, fx, idx = self.torch, self.fx, self.index
        self.static = [None] * len(fx)
        side = []
        with torch.no_grad():
            for i, n in enumerate(fx):
                if n.op == "placeholder":
                    self.static[i] = flat[self.place.index(n)]
                elif n.op == "get_attr":
                    self.static[i] = getattr(self.step.g2, n.target)
                elif n.op == "call_function" and i not in member_set:
                    ins = [idx[x] for x in n.all_input_nodes]
                    if not _writes(n.target) and not _is_random(n.target) \
                            and all(self.static[j] is not None or
                                    fx[j].op == "placeholder" for j in ins):
                        self.static[i] = self._call(n, self.static)
                    elif self._side_effect(n, member_set):
                        side.append(i)
        self.static_ptrs = set()
        for v in self.static:
            for t in _tensors(v):
                self.static_ptrs.add(_storage(t)[0])
        return side

    def _is_tuple(self, n):
        return any(u.target is operator.getitem for u in n.users)

    def _side_effect(self, n, member_set):
        """An op outside every node matters only if it writes (or feeds an
        op that writes) a placeholder: a buffer update."""
        seen, stack = set(), [n]
        while stack:
            u = stack.pop()
            if u in seen:
                continue
            seen.add(u)
            if u.op == "call_function" and _writes(u.target):
                return True
            stack.extend(x for x in u.users if self.index[x] not in
                         member_set and x.op == "call_function")
        return False

    def check_reads(self):
        """Every op of node v must read only static values, v's own values
        or those of v's declared inputs: otherwise the export's mapping is
        wrong and a schedule valid for the graph could not run."""
        nodes = self.step.graph["nodes"]
        for v, ms in enumerate(self.members):
            allowed = set(nodes[v]["inputs"]) | {v}
            for m in ms:
                for x in self.fx[m].all_input_nodes:
                    u = self.owner.get(self.index[x])
                    if u is None and self.static[self.index[x]] is None:
                        raise BadInput(
                            f"{self.step.path}: node {v} "
                            f"({nodes[v]['name']}): op {self.fx[m].name} "
                            f"reads {x.name}, which no node computes")
                    if u is not None and u not in allowed:
                        raise BadInput(
                            f"{self.step.path}: node {v} "
                            f"({nodes[v]['name']}): op {self.fx[m].name} "
                            f"reads node {u} ({nodes[u]['name']}), not an "
                            "input of the node")

    def _call(self, n, env):
        args = self.map_arg(n.args, lambda a: env[self.index[a]])
        kwargs = self.map_arg(n.kwargs, lambda a: env[self.index[a]])
        return n.target(*args, **kwargs)

    def _rng_get(self):
        t = self.torch
        cpu = t.get_rng_state()
        return (cpu, t.cuda.get_rng_state() if self.step.device != "cpu"
                else None)

    def _rng_set(self, s):
        self.torch.set_rng_state(s[0])
        if s[1] is not None:
            self.torch.cuda.set_rng_state(s[1])

    def record_rng(self, seed=None):
        """The RNG state before each random op when the graph runs in its
        own (eager) order from `seed` (None: from the generator's state
        now, which is left where an eager step would leave it). How far a
        random op moves the generator depends on its arguments' shapes,
        not their values: only the random ops run, in FX order, each on
        fresh tensors shaped like its arguments (one op's worth of memory
        at a time, not a whole step's)."""
        torch = self.torch
        states = {}
        if seed is not None:
            torch.manual_seed(seed)
            if self.step.device != "cpu":
                torch.cuda.manual_seed_all(seed)
        device = self.step.params[0].device

        def like(x):
            m = x.meta["tensor_meta"]
            # Zeros: a probability argument must be in [0, 1].
            return torch.empty_strided(m.shape, m.stride, dtype=m.dtype,
                                       device=device).zero_()

        with torch.no_grad():
            for i in sorted(self.random):
                n = self.fx[i]
                states[i] = self._rng_get()
                args, kwargs = self.map_arg((n.args, n.kwargs), like)
                eager_op(n.target)(*args, **kwargs)
        return states

    def random_in_eager_order(self, events):
        """True if the schedule first runs the random ops in FX (eager)
        order: then recording each one's state at its first execution gives
        the eager step's masks without a recording pass."""
        firsts, done = [], set()
        for kind, v, _ in events:
            if kind == "c" and v not in done:
                done.add(v)
                firsts += [m for m in self.members[v] if m in self.random]
        return firsts == sorted(self.random)

    # ----------------------------------------------------------------------

    def run(self, events, path, measure=False, profile=None):
        """One replay, from the buffers as they are (the caller resets
        them). Random ops run from `self.rng_states` (record_rng), or, when
        it is None, from the state at their first execution in this replay.
        Returns (live-storage peak bytes or None, where, gradients list,
        loss). With a list `profile`, appends (node, seconds) for each
        compute event."""
        torch = self.torch
        fx, members, keep, nodes = self.fx, self.members, self.keep, \
            self.step.graph["nodes"]
        env = list(self.static)
        grads = [None] * self.n_params
        # Storages of parameter gradients, excluded like static values:
        # those `grads` holds, and those the node being computed made (a
        # part of a multi-output op, or the op under a chain of views).
        # Kept by reference, not as a growing set: a gradient node that is
        # recomputed frees the old gradient, and the allocator may hand its
        # address to an activation.
        grad_ptr = {}  # parameter index -> data pointer
        node_grad_ptrs = set()
        live = set()
        held = set()  # FX indices whose values env holds for live nodes
        ran = set()  # FX indices run at least once in this replay
        pending = list(self.side)
        peak, where, loss = 0, None, None
        per_event = {}  # event index -> largest live bytes inside it
        rng_states = self.rng_states if self.rng_states is not None else {}
        self._run_side(pending, env)

        stor = {}  # FX index -> [(data pointer, bytes)] of its value

        def live_bytes():
            seen, total = set(), 0
            grad_values = set(grad_ptr.values())
            for i in held:
                for p, b in stor[i]:
                    if p in seen or p in self.static_ptrs or \
                            p in node_grad_ptrs or p in grad_values:
                        continue
                    seen.add(p)
                    total += b
            return total

        with torch.no_grad():
            for k, (kind, v, no) in enumerate(events):
                if kind == "f":
                    if v not in live:
                        raise BadInput(f"{path}:{no}: f {v}: node {v} is not "
                                       "live")
                    for m in keep[v]:
                        env[m] = None
                        held.discard(m)
                    live.remove(v)
                    continue
                if v in live:
                    raise BadInput(f"{path}:{no}: c {v}: node {v} is already "
                                   "live")
                for u in nodes[v]["inputs"]:
                    if u not in live:
                        raise BadInput(
                            f"{path}:{no}: c {v}: input {u} "
                            f"({nodes[u]['name']}) of node {v} "
                            f"({nodes[v]['name']}) is not live")
                node_grad_ptrs.clear()
                if profile is not None:
                    t0 = time.perf_counter()
                for m in members[v]:
                    n = fx[m]
                    target, get_args, get_kwargs = self.fetch[m]
                    args, kwargs = get_args(env), get_kwargs(env)
                    w = self.writes.get(m)
                    if w and m in ran:
                        # Recomputation: the running statistics (and any
                        # other written input) were updated by the first
                        # execution; this one writes copies.
                        args = tuple(
                            a.clone() if i in w and
                            isinstance(a, torch.Tensor) else a
                            for i, a in enumerate(args))
                    if m in self.random and m not in rng_states:
                        rng_states[m] = self._rng_get()  # first execution
                        r = target(*args, **kwargs)
                    elif m in self.random:
                        saved = self._rng_get()
                        self._rng_set(rng_states[m])
                        r = target(*args, **kwargs)
                        self._rng_set(saved)
                    else:
                        r = target(*args, **kwargs)
                    ran.add(m)
                    env[m] = r
                    if measure:
                        stor[m] = [_storage(t) for t in _tensors(r)]
                    held.add(m)
                    if m == self.loss_fx:
                        loss = r
                    if m in self.grad_of_param:
                        grads[self.grad_of_param[m]] = r
                        grad_ptr[self.grad_of_param[m]] = _storage(r)[0]
                    if m in self.grad_src and isinstance(r, torch.Tensor):
                        node_grad_ptrs.add(_storage(r)[0])
                    for part in self.grad_parts.get(m, ()):
                        if r[part] is not None:
                            node_grad_ptrs.add(_storage(r[part])[0])
                    if measure:
                        # What the op allocates beyond its outputs is not
                        # a live storage: the graph's workspace stands
                        # for it (rematbench.measure sees it).
                        b = live_bytes() + nodes[v].get("workspace", 0)
                        per_event[k] = max(per_event.get(k, 0), b)
                        if b > peak:
                            peak, where = b, (k, no, v, n.name)
                if profile is not None:
                    profile.append((v, time.perf_counter() - t0))
                if pending:
                    self._run_side(pending, env)
                for m in members[v]:
                    if m not in keep[v]:
                        env[m] = None
                        held.discard(m)
                live.add(v)
        self.per_event = per_event
        self.last_env, self.last_held = env, held  # for debugging
        return (peak if measure else None), where, grads, loss

    def _run_side(self, pending, env):
        """Runs, once, each buffer-writing op outside the nodes whose
        inputs are now available."""
        done = []
        for i in pending:
            n = self.fx[i]
            if all(env[self.index[x]] is not None for x in n.all_input_nodes):
                env[i] = self._call(n, env)
                done.append(i)
        for i in done:
            pending.remove(i)


def _fetcher(a, idx):
    """A function env -> `a` with every FX node replaced by env[its index]
    (tuples, lists and dicts rebuilt; constants shared)."""
    import torch
    if isinstance(a, torch.fx.Node):
        i = idx[a]
        return lambda env: env[i]
    if isinstance(a, (tuple, list)):
        fs = [_fetcher(x, idx) for x in a]
        if not any(getattr(f, "dynamic", True) for f in fs):
            return _const(a)
        if isinstance(a, tuple):
            return lambda env: tuple(f(env) for f in fs)
        return lambda env: [f(env) for f in fs]
    if isinstance(a, dict):
        fs = {k: _fetcher(x, idx) for k, x in a.items()}
        if not any(getattr(f, "dynamic", True) for f in fs.values()):
            return _const(a)
        return lambda env: {k: f(env) for k, f in fs.items()}
    return _const(a)


def _const(a):
    f = lambda env: a
    f.dynamic = False
    return f


def _alias_op(target):
    schema = getattr(target, "_schema", None)
    return schema is not None and any(r.alias_info is not None
                                      for r in schema.returns)
