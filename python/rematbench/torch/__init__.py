"""Train a PyTorch model within an activation-memory budget, with the
fastest schedule any registered algorithm finds for it.

    import rematbench.torch as rt
    train_step = rt.remat(model, nn.CrossEntropyLoss(), budget=0.5)
    loss = train_step(x, y)          # was: loss_fn(model(x), y).backward()

    plan = rt.plan(model, (x, y), nn.CrossEntropyLoss(), budget=0.5)
    print(plan)                      # every algorithm: peak, overhead, time

docs/python.md is the guide. The modules, one concern each:
  plan         plan(), Plan
  step         remat(), RematStep: the one-line training step
  buckets      padding token batches up to a few lengths
  search       the search over algorithms and budgets; NoFit
  traced_step  TracedStep: the traced step and its graph document
  trace        tracing the joint forward+backward graph of ATen ops
  partition    the traced graph cut into the graph's nodes
  lowering     a schedule lowered into calls, walked by both engines:
  interpreter    the measuring engine (Plan.replay, .replay)
  fx_program     the FX program (Plan.step)
  inductor     compiling the FX program
  rng          generator states, dropout's mask, replayed draws
  memory       the program's memory model (ProgramMemory)
  anchoring    sharing saved generator states between random ops
  measure      the allocator-level instrument for any training step
  replay       replaying schedules on an exported graph's real step
"""

from rematbench.torch import buckets, measure, trace  # noqa: F401
from rematbench.torch.plan import Plan, plan  # noqa: F401
from rematbench.torch.search import NoFit  # noqa: F401
from rematbench.torch.step import RematStep, remat  # noqa: F401
from rematbench.torch.traced_step import TracedStep  # noqa: F401

__all__ = ["plan", "remat", "Plan", "RematStep", "NoFit", "TracedStep",
           "buckets", "measure", "trace"]
