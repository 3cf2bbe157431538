"""The traced step of a new shape of a structure, derived from the steps
traced at other shapes of it without tracing (docs/python.md, "My model
does not fit"): rt.remat's answer to a new sequence length in a fraction
of a trace.

Batches of one structure that differ in one length L only (a sequence
length, or the batch size) give joint graphs that differ in integers
only: the ops, their order, names, arguments and tags are the same, and
each integer (an op's size argument, an output's sizes, strides, offset
and storage bytes, a node's memory) is a polynomial in L of low degree:
sizes are linear in L; strides and bytes products of them, quadratic
where an L x L attention score is held. A family holds the traces of a
structure. From k of them it fits each integer with the polynomial of
least degree through its k values, and knows the integer only where that
degree is at most k - 2: one trace more than the fit needs confirms it.
Where every integer is known, a new length between the shortest and the
longest traced gets its graph, graph document and guards from the
polynomials' values there (none beyond them, where an integer may bend:
a sliding window's min(L, w); none where a value is no integer: L // 2).
What was measured comes from the two traced lengths around L: each
node's time interpolated between them, its workspace (what its op
allocated beyond its outputs) the larger of theirs, since kernels choose
it by size in steps (bf16 matrix products on the CPU), which an
interpolation would undercut, and the plan's peak with it. Traces that
differ otherwise (an op, a float argument, a constant tensor, a value
read in Python) are families apart. The length is the batch's first size that varies between
traces; its other varying sizes (a T5's labels, half as long) are
integers of the graph like the rest, and a batch whose sizes are not
those fitted at its length (lengths varying apart) derives nothing.
"""

import dataclasses
import hashlib
import time

import numpy as np
import torch
import torch.fx
from torch._subclasses.fake_tensor import FakeTensor
from torch.utils._pytree import tree_flatten, tree_unflatten

MAX_DEGREE = 2
_INT = "int"  # an integer's place in a signature


class _Flat:
    """One trace's integers in a fixed order (`ints`) and everything else
    about it (`signature`), which must be the same for every trace of a
    family."""

    def __init__(self, traced):
        self.signature, self.ints = [], []
        self._graph(traced.module)
        guards = traced.guards
        self.signature.append(("guards", tuple(guards.where),
                               repr(guards.values)))
        if guards.module is not None:
            self._graph(guards.module)
        for n in traced.nodes:
            self.signature.append(tuple(
                (k, tuple(v) if isinstance(v, list) else v)
                for k, v in n.items() if k not in ("mem", "workspace",
                                                   "cost")))
            self.ints.append(n["mem"])

    def _graph(self, gm):
        sig = self.signature
        for n in gm.graph.nodes:
            leaves, spec = tree_flatten((n.args, n.kwargs))
            sig.append((n.op, n.target, n.name, n.stack_trace, spec))
            for x in leaves:
                self._leaf(x)
            for v in tree_flatten(n.meta.get("val"))[0]:
                self._leaf(v)
            if n.op == "get_attr":
                value = getattr(gm, n.target)
                sig.append(_constant(value))

    def _leaf(self, x):
        if type(x) is int:
            self.signature.append(_INT)
            self.ints.append(x)
        elif isinstance(x, torch.Tensor):
            self.signature.append(("tensor", x.dtype, x.device, x.dim()))
            self.ints += [*x.shape, *x.stride(), x.storage_offset(),
                          x.untyped_storage().nbytes()]
        elif isinstance(x, torch.fx.Node):
            self.signature.append(x.name)
        elif isinstance(x, float):
            self.signature.append(repr(x))  # nan != nan
        else:
            self.signature.append(x)


def _constant(value):
    """A constant tensor as a signature entry: its values decide the
    graph's, so they must be every trace's."""
    if not isinstance(value, torch.Tensor):
        return ("attr", type(value).__name__)
    data = value.detach().cpu().contiguous().reshape(-1).view(torch.uint8)
    return ("attr", value.dtype, tuple(value.shape),
            hashlib.sha256(data.numpy().tobytes()).hexdigest())


class Traces:
    """Every trace of one structure (rt.remat keeps one a structure), in
    families of one signature (the values a step reads in Python may
    differ between batches of a structure: a padded batch's mask is not
    all ones): add() each trace; derived() a new shape's step from the
    family that fits it and whose values read in Python are the batch's
    (else None: trace it and add it)."""

    def __init__(self):
        self.families = []

    def add(self, traced):
        """Takes a traced step (traced_step.TracedStep) into the family of
        its signature."""
        flat = _Flat(traced)
        family = next((f for f in self.families
                       if f.signature == flat.signature), None)
        if family is None:
            family = ShapeFamily(flat.signature)
            self.families.append(family)
        family.add(traced, flat)

    def derived(self, tensors):
        """The step of the batch `tensors` derived by the family with the
        most traces that fits it and whose guards (checks.Guards) hold for
        it, or None."""
        for family in sorted(self.families, key=lambda f: -len(f.traced)):
            step = family.derived(tensors)
            if step is not None and not step.guards.check(
                    step.flat(tensors)):
                return step
        return None


class ShapeFamily:
    """The traces of one structure with one signature (_Flat): their
    batches differ in one length."""

    def __init__(self, signature):
        self.signature = signature
        self.traced = []        # (length, TracedStep, _Flat), by length
        self.varying = []       # (input, dim) of the sizes that vary
        self.broken = None      # why the traces are not one family
        self._fit = None        # _fit's, of the traces held

    def add(self, traced, flat):
        """Takes a traced step of the structure into the family."""
        if self.broken:
            return
        entries = [(s, f) for _, s, f in self.traced] + [(traced, flat)]
        # One signature: the same inputs, each of the same rank.
        shapes = [[tuple(t.shape) for t in s.inputs] for s, _ in entries]
        varying = sorted((i, d) for i, shape in enumerate(shapes[0])
                         for d in range(len(shape))
                         if any(s[i][d] != shape[d] for s in shapes))
        self.varying = varying
        # The length is the first varying size; the others are integers
        # of the graph (its placeholders' sizes) like any other.
        i, d = varying[0] if varying else (0, 0)
        by_length = {s[i][d] if varying else 0: (t, f)
                     for s, (t, f) in zip(shapes, entries)}
        if len(by_length) < len(entries) and varying:
            self.broken = "two traces' batches differ at one length"
            return
        self.traced = [(n, *by_length[n]) for n in sorted(by_length)]
        self._fit = None

    def length_of(self, tensors):
        """The length a batch of the family's structure is at: its first
        size that varies between the traces (None where a size that does
        not vary differs)."""
        if not self.varying:
            return None
        ref = self.traced[0][1].inputs
        if len(tensors) != len(ref):
            return None
        varying = set(self.varying)
        for i, (t, r) in enumerate(zip(tensors, ref)):
            if t.dim() != r.dim() or any(
                    a != b for d, (a, b) in enumerate(zip(t.shape, r.shape))
                    if (i, d) not in varying):
                return None
        i, d = self.varying[0]
        return tensors[i].shape[d]

    def derived(self, tensors):
        """The traced step (traced_step.TracedStep) of the batch `tensors`
        derived from the family's traces (its info's `derived_by` this
        family; at a length traced before, that trace on `tensors`), or
        None where they do not fit it yet (too few traces, a new kind of
        shape) or at all."""
        t0 = time.perf_counter()
        if self.broken:
            return None
        length = self.length_of(tensors)
        lengths = [e[0] for e in self.traced]
        if length in lengths:
            # Traced before on another batch (rt.remat's at max_length).
            traced = self.traced[lengths.index(length)][1]
            if any(a.shape != b.shape
                   for a, b in zip(traced.inputs, tensors)):
                return None
            return dataclasses.replace(
                traced, inputs=tuple(tensors), info=dict(traced.info),
                trace_seconds=time.perf_counter() - t0, reused=True)
        if length is None or not lengths[0] < length < lengths[-1]:
            return None
        fit = self._fitted()
        if fit is None:
            return None
        ints = _evaluate(fit, length)
        if ints is None:
            return None
        near = min(self.traced, key=lambda e: abs(e[0] - length))[1]
        pos = iter(ints.tolist())
        module = _instantiate(near.module, pos)
        first = near.info["n_params"] + near.info["n_buffers"]
        batch = [n for n in module.graph.nodes if n.op == "placeholder"][
            first:first + len(tensors)]
        if any(n.meta["val"].shape != t.shape
               for n, t in zip(batch, tensors)):
            return None  # another size is not the one fitted
        guards = near.guards
        if guards.module is not None:
            guards = _copy_guards(guards, _instantiate(guards.module, pos))
        nodes = self._nodes(near, pos, length)
        info = dict(near.info, guards=guards, g1=module, derived_by=self)
        return dataclasses.replace(
            near, module=module, nodes=nodes, inputs=tuple(tensors),
            info=info, trace_seconds=time.perf_counter() - t0,
            derived_from=tuple(lengths))

    def _fitted(self):
        """_fit's polynomials of the traces' integers, or None where some
        integer's is not confirmed by the traces."""
        if self._fit is None:
            x = np.array([e[0] for e in self.traced], dtype=np.float64)
            y = np.array([f.ints for _, _, f in self.traced],
                         dtype=np.int64)
            self._fit = _fit(x, y)
        return self._fit or None

    def _nodes(self, near, pos, length):
        """The graph document's nodes at `length`: memory the fitted
        integers; each node's time interpolated between the traced lengths
        around it, its workspace the larger of theirs."""
        (a, sa, _) = [e for e in self.traced if e[0] < length][-1]
        (b, sb, _) = [e for e in self.traced if e[0] > length][0]
        w = (length - a) / (b - a)
        out = []
        for n, na, nb in zip(near.nodes, sa.nodes, sb.nodes):
            m = dict(n)
            m["mem"] = next(pos)
            m["cost"] = max(0, round(na["cost"] + w * (nb["cost"] -
                                                      na["cost"])))
            workspace = max(na.get("workspace", 0), nb.get("workspace", 0))
            if workspace:
                m["workspace"] = workspace
            else:
                m.pop("workspace", None)
            out.append(m)
        return out


def _fit(x, y):
    """Each column of y (an integer at lengths x; int64) as the polynomial
    of least degree through all its values, degree at most min(2, k - 2):
    (the constant columns' values, the others' indices, their
    coefficients in x / scale lowest first, scale), or False where a
    column has none."""
    k = len(x)
    if k < 2:
        return False
    varying = np.flatnonzero((y != y[0]).any(axis=0))
    scale = x.max()
    xs = x / scale
    yv = y[:, varying].astype(np.float64)
    coef = np.zeros((MAX_DEGREE + 1, len(varying)))
    todo = np.arange(len(varying))
    for degree in range(1, min(MAX_DEGREE, k - 2) + 1):
        if not len(todo):
            break
        a = np.vander(xs, degree + 1, increasing=True)
        c, *_ = np.linalg.lstsq(a, yv[:, todo], rcond=None)
        exact = (np.abs(a @ c - yv[:, todo]) < 0.25).all(axis=0)
        coef[:degree + 1, todo[exact]] = c[:, exact]
        todo = todo[~exact]
    if len(todo):
        return False
    return y[0].copy(), varying, coef, scale


def _evaluate(fit, length):
    """The integers at `length`, or None where a polynomial's value there
    is no integer (the integer is not that polynomial: L // 2 at an odd
    L)."""
    values, varying, coef, scale = fit
    xs = length / scale
    raw = coef[0] + xs * (coef[1] + xs * coef[2])
    new = np.rint(raw)
    if (np.abs(raw - new) > 0.01).any():
        return None
    values = values.copy()
    values[varying] = new.astype(np.int64)
    return values


def _instantiate(gm, pos):
    """A copy of GraphModule `gm` with its integers taken from `pos` in
    _Flat's order (arguments, then the value's metadata, node by node)."""
    g, env = torch.fx.Graph(), {}
    for n in gm.graph.nodes:
        new = g.node_copy(n, env.__getitem__)
        leaves, spec = tree_flatten((new.args, new.kwargs))
        if any(type(x) is int for x in leaves):
            new.args, new.kwargs = tree_unflatten(
                [next(pos) if type(x) is int else x for x in leaves], spec)
        val = n.meta.get("val")
        if val is not None:
            vals, vspec = tree_flatten(val)
            new.meta["val"] = tree_unflatten([_value(v, pos) for v in vals],
                                             vspec)
            if "tensor_meta" in n.meta:
                new.meta["tensor_meta"] = _tensor_meta(n.meta["tensor_meta"],
                                                       new.meta["val"])
        env[n] = new
    return torch.fx.GraphModule(gm, g)


def _value(v, pos):
    """Value metadata `v` (a fake tensor, an int, another value) with its
    integers taken from `pos`."""
    if type(v) is int:
        return next(pos)
    if not isinstance(v, torch.Tensor):
        return v
    shape = [next(pos) for _ in range(v.dim())]
    stride = [next(pos) for _ in range(v.dim())]
    offset, nbytes = next(pos), next(pos)
    meta = torch.empty(0, dtype=v.dtype, device="meta").set_(
        torch.UntypedStorage(nbytes, device="meta"), offset, shape, stride)
    return FakeTensor(v.fake_mode, meta, v.device) \
        if isinstance(v, FakeTensor) else meta


def _tensor_meta(old, val):
    """`old` (FX's TensorMetadata, or a list of them) with the sizes and
    strides of the new value(s)."""
    if hasattr(old, "shape"):
        return old._replace(shape=val.shape, stride=val.stride())
    tensors = [v for v in tree_flatten(val)[0] if isinstance(v, torch.Tensor)]
    it = iter(tensors)
    return type(old)(m._replace(shape=(t := next(it)).shape,
                                stride=t.stride())
                     if hasattr(m, "shape") else m for m in old)


def _copy_guards(guards, module):
    """checks.Guards `guards` with its graph `module` instead."""
    new = object.__new__(type(guards))
    new.__dict__.update(guards.__dict__, module=module)
    return new
