"""A new shape's step derived from traces of other shapes
(rematbench.torch.shape_family; run by ctest as python.shape_family): on
a tiny attention model whose L x L scores make some of the graph's
integers quadratic in the length L, the step derived at a new length is
the traced one (the same graph, node for node), only once enough traces
confirm every integer's polynomial; rt.remat trains derived lengths with
plain training's gradients within the budget, and traces one whose
derived step fails to run (under DDP: an error); a second length is
fitted as the graph's integers are, and lengths that vary apart derive
nothing; with max_length, the first batch tiled to it is traced too."""

from conftest import require_modules

(torch,) = require_modules("torch")

import pytest
import torch.nn as nn
import torch.nn.functional as F

import rematbench as rb
import rematbench.torch as rt
from rematbench.torch import measure
from rematbench.torch.shape_family import Traces
from rematbench.torch.traced_step import LossStep, TracedStep, split_batch

torch.set_num_threads(1)
VOCAB = 32


class TinyAttention(nn.Module):
    """One attention layer whose scores are a [batch, L, L] tensor, and a
    summary of the first L // 2 positions."""

    def __init__(self, d=16):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, d)
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, VOCAB)

    def forward(self, ids):
        h = self.embed(ids)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        scores = (q @ k.transpose(1, 2)) / 4.0
        h = h + scores.softmax(-1) @ v
        h = h + h[:, :ids.shape[1] // 2].mean(1, keepdim=True)
        return self.out(torch.relu(h))


def loss_fn(out, target):
    return F.cross_entropy(out.flatten(0, 1), target.flatten())


def batch(length, seed=0):
    g = torch.Generator().manual_seed(seed + length)
    ids = torch.randint(VOCAB, (2, length), generator=g)
    return ids, ids.roll(1, dims=1)


def traced_at(model, length):
    tensors, layout = split_batch(batch(length), {})
    return TracedStep.trace(LossStep(model, loss_fn, layout), tensors, "t",
                            cost="measured", repeats=1, layout=layout)


def test_a_derived_step_is_the_traced_one():
    """The scores' strides and bytes are quadratic in L: three traces
    (lengths 8, 12, 28) confirm linear integers only, so no step is
    derived from them; a fourth (20) confirms the quadratic ones, and the
    step derived at 16 is the one traced at 16: the same graph code,
    values' shapes, strides and storage bytes, and the same nodes (their
    memory; times and workspaces are measured, so taken from the traces
    around 16). Nothing
    is derived beyond the traced lengths (32), nor at 13, where an
    integer of the graph, L / 2 rounded down, is none of the fitted
    polynomial's values (6.5)."""
    torch.manual_seed(0)
    model = TinyAttention()
    traces = Traces()
    for length in (8, 12, 28):
        traces.add(traced_at(model, length))
    new = split_batch(batch(16), {})[0]
    assert traces.derived(new) is None
    traces.add(traced_at(model, 20))
    derived = traces.derived(new)
    assert derived is not None and derived.derived_from == (8, 12, 20, 28)
    traced = traced_at(model, 16)
    assert derived.module.code == traced.module.code
    for a, b in zip(derived.module.graph.nodes, traced.module.graph.nodes):
        va, vb = a.meta.get("val"), b.meta.get("val")
        if isinstance(vb, torch.Tensor):
            assert (va.shape, va.stride(), va.untyped_storage().nbytes()) \
                == (vb.shape, vb.stride(), vb.untyped_storage().nbytes())
            assert a.meta["tensor_meta"] == b.meta["tensor_meta"], a.name
    strip = lambda n: {k: v for k, v in n.items()
                       if k not in ("cost", "workspace")}
    assert [strip(n) for n in derived.nodes] == \
        [strip(n) for n in traced.nodes]
    quadratic = [n for n in traced.nodes if n["mem"] == 2 * 16 * 16 * 4]
    assert quadratic  # the scores are in the graph
    for length in (32, 13):
        assert traces.derived(split_batch(batch(length), {})[0]) is None


def three_quarters_of_plain_at_28(model):
    """A budget: 3/4 of plain training's activation peak at length 28."""
    return measure.measure_step(
        lambda: loss_fn(model(batch(28)[0]), batch(28)[1]).backward(),
        model, timing=False)["measured_peak_bytes"] * 3 // 4


def trained_as_plain(step, model, budget, length, seed):
    """The plan rt.remat's `step` ran a batch at `length` with, having
    checked that its gradients are plain training's bit for bit and its
    allocator-measured activation peak within `budget`."""
    x, y = batch(length, seed=seed)
    plain = measure.measure_step(lambda: loss_fn(model(x), y).backward(),
                                 model, timing=False)
    got = measure.measure_step(lambda: step(x, y), model, timing=False,
                               reference=plain["grads"])
    assert got["gradients_equal"], length
    assert got["measured_peak_bytes"] <= budget, length
    (p,) = step.plans[step.layout_key((x, y), {})]
    return p


def test_remat_derives_new_lengths_and_trains_them_as_plain_training():
    """rt.remat fed lengths 8, 28, 12, 20, then 16 and 10: the first four
    are traced, 16 and 10 (between them) derived; every step's
    gradients are plain training's bit for bit, its allocator-measured
    activation peak within the budget."""
    torch.manual_seed(1)
    model = TinyAttention()
    budget = three_quarters_of_plain_at_28(model)
    step = rt.remat(model, loss_fn, budget=budget, timeout=3)
    for length in (8, 28, 12, 20, 16, 10):
        p = trained_as_plain(step, model, budget, length, seed=5)
        assert (p.traced.derived_from is not None) == (length in (16, 10))
    with pytest.raises(rb.Error, match="^remat: shape_plan_seconds must be"):
        rt.remat(model, loss_fn, budget=0.5, shape_plan_seconds=0)


def derive_a_view_too_large(monkeypatch):
    """Makes every derived step wrong: a view's size one too large (it
    fails to run)."""
    derived = Traces.derived

    def wrong(self, tensors):
        step = derived(self, tensors)
        if step is not None:
            view = next(n for n in step.module.graph.nodes
                        if n.target is torch.ops.aten.view.default and
                        -1 not in n.args[1])
            view.args = (view.args[0], [*view.args[1][:-1],
                                        view.args[1][-1] + 1])
            step.module.recompile()
        return step

    monkeypatch.setattr(Traces, "derived", wrong)


def test_a_derived_step_that_fails_to_run_is_traced_instead(monkeypatch):
    """A derived step whose graph is wrong is traced instead, with a
    warning: the step's gradients are still plain training's, its family
    derives nothing more."""
    torch.manual_seed(2)
    model = TinyAttention()
    derive_a_view_too_large(monkeypatch)
    step = rt.remat(model, loss_fn, budget=0.9, timeout=3)
    for length in (8, 28, 12, 20):
        step(*batch(length))
    x, y = batch(16)
    plain = measure.measure_step(lambda: loss_fn(model(x), y).backward(),
                                 model, timing=False)
    with pytest.warns(UserWarning, match="derived from traces at lengths "
                      r"\(8, 12, 20, 28\) failed"):
        got = measure.measure_step(lambda: step(x, y), model, timing=False,
                                   reference=plain["grads"])
    assert got["gradients_equal"]
    (p,) = step.plans[step.layout_key((x, y), {})]
    assert p.traced.derived_from is None
    (traces,) = step.traces.values()
    assert traces.families[0].broken.startswith("a step derived from it "
                                                "failed")


def test_under_ddp_a_derived_step_that_fails_is_an_error(monkeypatch):
    """Under DistributedDataParallel a failed derived step is not tried
    again (its collectives may have run on one rank alone; a second try
    would pair them with the other ranks' next ones): an error naming the
    lengths, and the family derives nothing more. One rank of gloo, in
    this process."""
    import socket
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                            rank=0, world_size=1)
    try:
        torch.manual_seed(2)
        model = DDP(TinyAttention())
        derive_a_view_too_large(monkeypatch)
        step = rt.remat(model, loss_fn, budget=0.9, timeout=3)
        for length in (8, 28, 12, 20):
            step(*batch(length))
        with pytest.raises(rb.Error, match=r"lengths \(8, 12, 20, 28\) "
                           "failed .*not tried again") as e:
            step(*batch(16))
        assert "\n" not in str(e.value)
        (traces,) = step.traces.values()
        assert traces.families[0].broken.startswith("a step derived from "
                                                    "it failed")
        step(*batch(16))  # traced now: this rank derives no more
        (p,) = step.plans[step.layout_key(batch(16), {})]
        assert p.traced.derived_from is None
    finally:
        dist.destroy_process_group()


class TwoLengths(nn.Module):
    """A step over two sequences (a T5's inputs and labels)."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 8)

    def forward(self, a, b):
        return self.embed(a).mean() + self.embed(b).square().mean()


def test_a_second_length_is_fitted_as_the_graph_is():
    """Traces whose second sequence is half as long as the first (a: 8,
    12, 16, 24; b: 4, 6, 8, 12) derive a = 20 with b = 10, the traced
    step's graph, and nothing with b = 7 (lengths varying apart); traces
    of lengths that vary apart (b: 4, 4, 8, 6) derive nothing."""
    model = TwoLengths()

    def tensors(la, lb):
        a = torch.randint(VOCAB, (2, la))
        b = torch.randint(VOCAB, (2, lb))
        return split_batch((a, b), {})

    def traced(la, lb):
        t, layout = tensors(la, lb)
        return TracedStep.trace(LossStep(model, None, layout), t, "t",
                                layout=layout)

    half, apart = Traces(), Traces()
    for la, lb, lb_apart in ((8, 4, 4), (12, 6, 4), (16, 8, 8),
                             (24, 12, 6)):
        half.add(traced(la, lb))
        apart.add(traced(la, lb_apart))
    derived = half.derived(tensors(20, 10)[0])
    assert derived is not None
    assert derived.module.code == traced(20, 10).module.code
    assert half.derived(tensors(20, 7)[0]) is None
    assert apart.derived(tensors(20, 10)[0]) is None
    assert apart.derived(tensors(20, 6)[0]) is None


class SixteenPositions(nn.Module):
    """Token and position embeddings for lengths up to 16."""

    def __init__(self):
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, VOCAB)
        self.positions = nn.Embedding(16, VOCAB)

    def forward(self, ids):
        return self.tokens(ids) + self.positions(
            torch.arange(ids.shape[1]))


def test_max_length_traces_the_first_batch_tiled_and_derives_up_to_it():
    """rt.remat(..., max_length=28) fed lengths 8, 12, 20, 24, 28: the
    first call traces its batch and the batch tiled to 28, so that after
    12 and 20 (four traces) 24 is derived rather than traced as the
    longest yet, and 28 runs on the tiled batch's trace without tracing;
    every step plain training's gradients within the budget."""
    torch.manual_seed(3)
    model = TinyAttention()
    budget = three_quarters_of_plain_at_28(model)
    step = rt.remat(model, loss_fn, budget=budget, timeout=3, max_length=28)
    traced_after = {8: [8, 28], 12: [8, 12, 28], 20: [8, 12, 20, 28],
                    24: [8, 12, 20, 28], 28: [8, 12, 20, 28]}
    for length, lengths in traced_after.items():
        p = trained_as_plain(step, model, budget, length, seed=7)
        assert p.traced.derived_from == (
            (8, 12, 20, 28) if length == 24 else None), length
        (traces,) = step.traces.values()
        (family,) = traces.families
        assert family.broken is None
        assert [n for n, _, _ in family.traced] == lengths, length
    # 28 ran on the graph traced from the tiled batch of 8.
    assert p.traced.reused and p.traced.module is family.traced[-1][1].module
    assert "traced before on another batch" in str(p)
    for bad in (0, 2.5, True):
        with pytest.raises(rb.Error, match="^remat: max_length must be a "
                           "positive integer"):
            rt.remat(model, loss_fn, budget=0.5, max_length=bad)
    # A first call that fits nothing leaves its two traces, once: a
    # second call traces neither again.
    tight = rt.remat(model, loss_fn, budget=1000, timeout=3, max_length=28)
    for _ in range(2):
        with pytest.raises(rt.NoFit):
            tight(*batch(8))
    (traces,) = tight.traces.values()
    (family,) = traces.families
    assert family.broken is None
    assert [n for n, _, _ in family.traced] == [8, 28]
    # A model that does not take 28 (16 positions): the length named.
    with pytest.raises(rb.Error, match=r"^remat: max_length=28: the first "
                       r"batch tiled to that length did not trace \("):
        rt.remat(SixteenPositions(), loss_fn, budget=0.5, max_length=28)(
            *batch(8))
    # The tiled batch's trace comes first: plan()'s options checked there.
    with pytest.raises(rb.Error, match="^plan: cost must be"):
        rt.remat(model, loss_fn, budget=0.5, max_length=28,
                 cost="time")(*batch(8))


def test_tiled_repeats_token_tensors_up_to_a_length():
    """buckets.tiled: token tensors of the batch's length repeated along
    it (cut to the length), contiguous, one tensor passed twice one tensor
    still; nothing where a token tensor has another
    length or another tensor has a dimension of that length."""
    ids = torch.tensor([[1, 2, 3], [4, 5, 6]])
    mask = torch.ones_like(ids)
    args, kwargs = rt.buckets.tiled((), dict(input_ids=ids,
                                             attention_mask=mask,
                                             scale=2.0), 7)
    assert args == () and kwargs["scale"] == 2.0
    assert kwargs["input_ids"].tolist() == [[1, 2, 3, 1, 2, 3, 1],
                                            [4, 5, 6, 4, 5, 6, 4]]
    assert kwargs["attention_mask"].equal(torch.ones(2, 7, dtype=torch.long))
    _, kwargs = rt.buckets.tiled((), dict(input_ids=ids, labels=ids), 7)
    assert kwargs["labels"] is kwargs["input_ids"]  # as the trace sees it
    assert rt.buckets.tiled((ids, ids[:, :2]), {}, 7) is None
    assert rt.buckets.tiled((ids, torch.randn(2, 3, 4)), {}, 7) is None
    assert rt.buckets.tiled((torch.randn(2, 3),), {}, 7) is None
    assert rt.buckets.tiled((ids,), {}, 3) is None  # as long already
    assert rt.buckets.tiled((ids.t().contiguous().t(),), {}, 7) is None
    (long,), _ = rt.buckets.tiled((ids,), {}, 7)
    assert long.is_contiguous() and \
        long.untyped_storage().nbytes() == long.numel() * long.itemsize
