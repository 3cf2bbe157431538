"""Bad arguments and steps that are not the model's step (run by ctest as
python.torch_hardening): each is refused by rt.plan / plan.step in one
line (a rematbench.Error, no newline), leaving the model and the batch as
they were, or handled as plain training handles it.
"""

import math

from conftest import require_modules

torch, = require_modules("torch")
nn = torch.nn

import pytest

import rematbench as rb
import rematbench.torch as rt

torch.set_num_threads(1)


class Two(nn.Module):
    """A used and an unused linear layer (plain training allows that)."""

    def __init__(self):
        super().__init__()
        self.used = nn.Linear(4, 4)
        self.unused = nn.Linear(4, 4)

    def forward(self, x):
        return torch.tanh(self.used(x)) * 2


class AddsToInput(nn.Module):

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        x.add_(1)
        return self.fc(torch.tanh(x))


def batch():
    g = torch.Generator().manual_seed(0)
    return torch.randn(3, 4, generator=g), torch.tensor([0, 1, 2])


def one_line(excinfo, *parts):
    text = str(excinfo.value)
    assert "\n" not in text, text
    for p in parts:
        assert p in text, (p, text)


@pytest.mark.parametrize("args, parts", [
    (dict(algorithms=[]), ["algorithms", "at least one"]),
    (dict(repeats=0), ["repeats must be an integer >= 1, not 0"]),
    (dict(cost="bogus"), ["cost must be 'measured' or 'flop', not 'bogus'"]),
    (dict(threads=0), ["threads must be an integer >= 1, not 0"]),
    (dict(timeout=0), ["timeout must be a positive number"]),
    (dict(plan_seconds=math.nan), ["plan_seconds must be a positive"]),
    (dict(exact_max_nodes=-1), ["exact_max_nodes must be an integer >= 0"]),
    (dict(traces={}), ["traces must be a shape_family.Traces, not {}"]),
    (dict(algorithms=["no_such_algorithm"]), ["no_such_algorithm"]),
    (dict(budget=None), ["give a budget"]),
    (dict(budget=True), ["budget"]),
])
def test_bad_arguments_in_one_line(args, parts):
    x, y = batch()
    kwargs = dict(budget=0.5)
    kwargs.update(args)
    with pytest.raises(rb.Error) as e:
        rt.plan(Two(), (x, y), nn.CrossEntropyLoss(), **kwargs)
    one_line(e, *parts)


@pytest.mark.parametrize("loss_fn, parts", [
    (lambda out, y: out, ["scalar tensor", "shape (3, 4)"]),
    (lambda out, y: 1.0, ["scalar tensor, not float"]),
])
def test_losses_that_are_not_scalar_tensors(loss_fn, parts):
    x, y = batch()
    with pytest.raises(rb.Error) as e:
        rt.plan(Two(), (x, y), loss_fn, budget=0.5)
    one_line(e, *parts)


def test_a_tensor_as_the_example_batch_is_one_line():
    # tuple(x) took the tensor apart row by row: three positional
    # arguments, and forward() failed inside the trace.
    x, _ = batch()
    with pytest.raises(rb.Error) as e:
        rt.plan(nn.Linear(4, 3), x, lambda out, b: out.sum(), budget=0.5)
    one_line(e, "example_inputs", "such as (x, y)", "not a Tensor")


def test_unused_parameter_gets_no_gradient():
    """As in plain training: the unused layer's gradient stays None and
    the used one's equals plain training's."""
    x, y = batch()
    model, loss_fn = Two(), nn.CrossEntropyLoss()
    loss_fn(model(x), y).backward()
    want = model.used.weight.grad.clone()
    model.zero_grad(set_to_none=True)
    plan = rt.plan(model, (x, y), loss_fn, budget=1.0, cost="flop")
    plan.step(x, y)
    assert model.unused.weight.grad is None
    assert torch.equal(model.used.weight.grad, want)


def test_forward_that_changes_its_input_is_refused_and_restored():
    x, y = batch()
    before = x.clone()
    with pytest.raises(rb.Error) as e:
        rt.plan(AddsToInput(), (x, y), nn.CrossEntropyLoss(), budget=0.5)
    one_line(e, "module '(the model)' (AddsToInput)", "aten.add_",
             "batch's tensor 0 in place")
    assert torch.equal(x, before)  # planning left the batch as it was


def test_replaced_module_is_planned_again():
    """After model.used = nn.Linear(...), the plan refuses in one line, and
    rt.remat plans again: the new layer trains."""
    x, y = batch()
    model = Two()
    plan = rt.plan(model, (x, y), nn.CrossEntropyLoss(), budget=1.0,
                   cost="flop")
    step = rt.remat(model, nn.CrossEntropyLoss(), budget=1.0, cost="flop")
    step(x, y)
    model.used = nn.Linear(4, 4)
    with pytest.raises(rb.Error) as e:
        plan.step(x, y)
    one_line(e, "parameters are not those the plan was traced with")
    model.zero_grad(set_to_none=True)
    step(x, y)
    assert model.used.weight.grad is not None
    assert [len(v) for v in step.plans.values()] == [2]


def test_frozen_then_unfrozen_is_planned_again():
    x, y = batch()
    model = Two()
    model.used.bias.requires_grad_(False)
    step = rt.remat(model, nn.CrossEntropyLoss(), budget=1.0, cost="flop")
    step(x, y)
    assert model.used.bias.grad is None
    model.used.bias.requires_grad_(True)
    step(x, y)
    assert model.used.bias.grad is not None


def test_plans_from_threads():
    """Tracing is serialized: six threads plan at once, every one plans."""
    import threading
    errors = []

    def go():
        try:
            x, y = batch()
            rt.plan(Two(), (x, y), nn.CrossEntropyLoss(), budget=1.0,
                    cost="flop", algorithms=["noremat", "dtr"])
        except Exception as e:  # collected, asserted below
            errors.append(repr(e))

    threads = [threading.Thread(target=go) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
