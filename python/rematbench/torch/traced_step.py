"""The traced training step: one forward, loss and backward of a module
traced into the joint graph of ATen ops (rematbench.torch.trace), cut into
the graph's nodes, with the one writer of its graph document (the
`remat` format, docs/formats.md), which plan() solves and
scripts/export_torch.py writes.
"""

import collections.abc
import dataclasses
import json
import platform
import time

import torch
import torch.fx
import torch.nn as nn
from torch.utils._pytree import tree_flatten, tree_unflatten

import rematbench
from rematbench.torch import checks, rng, trace


def split_batch(args, kwargs):
    """(tensors, layout) of a batch given as positional and keyword
    arguments (nested tuples, lists and dicts of them): the tensors in
    pytree order, which the traced graph takes, and the rest (the nesting
    and every other leaf), which a plan holds for as traced."""
    leaves, spec = tree_flatten((tuple(args), dict(kwargs)))
    tensors = tuple(x for x in leaves if isinstance(x, torch.Tensor))
    rest = tuple(None if isinstance(x, torch.Tensor) else x for x in leaves)
    return tensors, (spec, rest)


def join_batch(tensors, layout):
    """split_batch's inverse: (args, kwargs)."""
    spec, rest = layout
    it = iter(tensors)
    leaves = [next(it) if x is None else x for x in rest]
    return tree_unflatten(leaves, spec)


def loss_of(outputs):
    """The loss a model returns itself: a scalar tensor, `outputs.loss`
    (transformers' ModelOutput when given labels), outputs["loss"], or the
    first element of a tuple (return_dict=False)."""
    loss = outputs
    if getattr(outputs, "loss", None) is not None:
        loss = outputs.loss
    elif isinstance(outputs, collections.abc.Mapping) and "loss" in outputs:
        loss = outputs["loss"]
    elif isinstance(outputs, (tuple, list)) and outputs:
        loss = outputs[0]
    if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
        raise rematbench.Error(
            f"plan: the model's output ({type(outputs).__name__}) holds no "
            "scalar loss: give loss_fn(outputs, batch), or have the model "
            "compute its loss (transformers: pass labels)")
    return loss


class LossStep(nn.Module):
    """The traced module of plan(): one training step's loss, from the
    batch's tensors (split_batch). With `loss_fn` and two or more
    positional arguments only, the classic form
    loss_fn(model(*inputs[:-1]), inputs[-1]); otherwise
    outputs = model(*args, **kwargs) and loss_fn(outputs, batch) (batch:
    the keyword arguments as a dict, or the one positional argument), or,
    without loss_fn, the loss the model returns (loss_of)."""

    def __init__(self, model, loss_fn, layout):
        super().__init__()
        self.model = model
        self.loss_fn = loss_fn
        self.layout = layout
        args, kwargs = join_batch([None] * len(layout[1]), layout)
        self.classic = loss_fn is not None and not kwargs and len(args) >= 2
        if loss_fn is not None and not self.classic and args and kwargs:
            raise rematbench.Error(
                "plan: with loss_fn, give the batch as keyword arguments, "
                "as one positional argument, or as (inputs..., target)")

    def forward(self, *tensors):
        args, kwargs = join_batch(tensors, self.layout)
        if self.classic:
            loss = self.loss_fn(self.model(*args[:-1]), args[-1])
        elif self.loss_fn is not None:
            outputs = self.model(*args, **kwargs)
            loss = self.loss_fn(outputs, kwargs if kwargs else args[0])
        else:
            return loss_of(self.model(*args, **kwargs))
        if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
            what = f"a tensor of shape {tuple(loss.shape)}" \
                if isinstance(loss, torch.Tensor) else type(loss).__name__
            raise rematbench.Error(
                f"plan: loss_fn must return a scalar tensor, not {what}")
        return loss


@dataclasses.dataclass
class TracedStep:
    """module: the functionalized joint FX graph (inputs: the parameters
        that train, the other tensors the step holds (frozen parameters,
        buffers), the batch's tensors, the gradient seed; outputs: the
        loss and each trained parameter's gradient);
    nodes: the graph's nodes (JSON dicts: id, name, kind, op, mem, cost,
        inputs, and `fx`, the FX nodes each covers);
    params, buffers, inputs: the placeholders' values (`buffers`: frozen
        parameters, then buffers);
    frozen_bytes: the bytes of the frozen parameters;
    name: names the step in errors and documents;
    seed: the seed of the step whose random ops a replay reproduces (None:
        the generator's state when a run starts);
    cost_units: "ns" (measured) or "flop";
    trace_seconds: how long tracing took;
    guards: the values the step read in Python (checks.Guards);
    layout: the batch's layout besides its tensors (split_batch);
    autocast: the autocast state it was traced in (its casts are in the
        graph);
    derived_from: None for a traced step; for one derived from traces of
        other shapes (shape_family), their lengths;
    reused: a step traced before on another batch of its shapes (rt.remat's
        batch tiled to max_length), not traced again."""
    module: torch.fx.GraphModule
    nodes: list
    params: list
    buffers: list
    inputs: tuple
    name: str
    seed: int = None
    cost_units: str = "flop"
    trace_seconds: float = 0.0
    info: dict = None
    frozen_bytes: int = 0
    layout: tuple = None
    autocast: tuple = None
    derived_from: tuple = None
    reused: bool = False

    @property
    def guards(self):
        return self.info["guards"]

    @property
    def grad_params(self):
        """The parameters the step returns gradients of, in the graph's
        output order: those that train and that the loss depends on."""
        return [self.params[i] for i in self.info["grad_params"]]

    @classmethod
    def trace(cls, step, inputs, name, granularity="aten", cost="flop",
              repeats=5, workspace=True, copy_saved_parts=True, seed=None,
              layout=None):
        """Traces `step` (a module returning the loss) on `inputs`
        (trace.trace_nodes). The module's buffers, training mode and the
        generators are put back afterwards. Raises trace.Unsupported for a
        step the tracer cannot follow."""
        params, others = trace.static_inputs(step)
        if not params:
            raise rematbench.Error(
                f"{name}: no parameter requires grad: nothing to train")
        device = params[0].device
        was_training = step.training
        saved = rng.snapshot(device)
        t0 = time.perf_counter()
        try:
            nodes, module, info = trace.trace_nodes(
                step, inputs, granularity, cost, repeats, workspace,
                copy_saved_parts)
        finally:
            rng.restore(saved)
            step.train(was_training)
        frozen = sum(p.numel() * p.element_size()
                     for p in step.parameters() if not p.requires_grad)
        return cls(module, nodes, params, others, tuple(inputs), name, seed,
                   "ns" if cost == "measured" else "flop",
                   time.perf_counter() - t0, info, frozen, layout,
                   checks.autocast_state())

    @property
    def device(self):
        return self.params[0].device

    def flat(self, inputs):
        """The traced graph's placeholder values for batch tensors
        `inputs`: the parameters that train, the other tensors the step
        holds, the batch and the gradient seed."""
        return self.params + self.buffers + list(inputs) + \
            [trace.seed_like(self.params)]

    @property
    def parameter_bytes(self):
        """The bytes of the parameters that train."""
        return sum(p.numel() * p.element_size() for p in self.params)

    @property
    def input_bytes(self):
        return sum(t.numel() * t.element_size() for t in self.inputs)

    @property
    def static_bytes(self):
        """What training holds besides activations (docs/model.md): the
        parameters, the gradients of those that train, and the batch."""
        return 2 * self.parameter_bytes + self.frozen_bytes + \
            self.input_bytes

    def document(self, provenance=None, name=None):
        """The graph document (a dict, the `remat` graph format) of the
        step; `provenance` adds to the recorded one."""
        prov = dict(provenance or {})
        prov.setdefault("device", str(self.device))
        prov.setdefault("torch", torch.__version__)
        prov.setdefault("python", platform.python_version())
        if self.cost_units == "ns":
            prov.setdefault("host", platform.node())
            prov.setdefault("threads", torch.get_num_threads())
        return {"format": "rematbench-graph", "version": 1,
                "name": name or self.name,
                "static_bytes": self.static_bytes,
                "units": {"memory": "bytes", "cost": self.cost_units},
                "provenance": prov, "nodes": self.nodes}

    def graph(self, provenance=None):
        """The document as the core's rematbench.Graph, to solve."""
        return rematbench.parse_graph_json(
            json.dumps(self.document(provenance)), self.name)
