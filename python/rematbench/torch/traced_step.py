"""The traced training step: one forward, loss and backward of a module
traced into the joint graph of ATen ops (rematbench.torch.trace), cut into
the graph's nodes, with the one writer of its graph document (the
`remat` format, docs/formats.md), which plan() solves and
scripts/export_torch.py writes.
"""

import dataclasses
import json
import platform
import time

import torch
import torch.fx
import torch.nn as nn

import rematbench
from rematbench.torch import rng, trace


class LossStep(nn.Module):
    """The traced module of plan(): loss_fn(model(*inputs[:-1]),
    inputs[-1])."""

    def __init__(self, model, loss_fn):
        super().__init__()
        self.model = model
        self.loss_fn = loss_fn

    def forward(self, *inputs):
        *xs, target = inputs
        return self.loss_fn(self.model(*xs), target)


@dataclasses.dataclass
class TracedStep:
    """module: the functionalized joint FX graph (inputs: parameters,
        buffers, the batch, the gradient seed; outputs: the loss and each
        parameter's gradient);
    nodes: the graph's nodes (JSON dicts: id, name, kind, op, mem, cost,
        inputs, and `fx`, the FX nodes each covers);
    params, buffers, inputs: the placeholders' values;
    name: names the step in errors and documents;
    seed: the seed of the step whose random ops a replay reproduces (None:
        the generator's state when a run starts);
    cost_units: "ns" (measured) or "flop";
    trace_seconds: how long tracing took."""
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

    @classmethod
    def trace(cls, step, inputs, name, granularity="aten", cost="flop",
              repeats=5, workspace=True, copy_saved_parts=True, seed=None):
        """Traces `step` (a module returning the loss) on `inputs`
        (trace.trace_nodes). The module's buffers, training mode and the
        generators are put back afterwards. Raises trace.Unsupported for a
        step the tracer cannot follow."""
        params = list(step.parameters())
        device = params[0].device if params else torch.device("cpu")
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
        return cls(module, nodes, params, list(step.buffers()),
                   tuple(inputs), name, seed,
                   "ns" if cost == "measured" else "flop",
                   time.perf_counter() - t0, info)

    @property
    def device(self):
        return self.params[0].device

    @property
    def parameter_bytes(self):
        return sum(p.numel() * p.element_size() for p in self.params)

    @property
    def input_bytes(self):
        return sum(t.numel() * t.element_size() for t in self.inputs)

    @property
    def static_bytes(self):
        """What training holds besides activations (docs/model.md): the
        parameters, their gradients and the batch."""
        return 2 * self.parameter_bytes + self.input_bytes

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
