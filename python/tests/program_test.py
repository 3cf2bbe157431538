"""Tests of rematbench.torch.fx_program (a schedule compiled into an FX
program), rematbench.torch.measure (the allocator-level instrument),
rematbench.torch.anchoring and rematbench.torch's one-line entry point (run by ctest as python.program, against the
installed package).

- The program of every registered algorithm's schedule gives the
  interpreter's (rematbench.torch.interpreter) loss, gradients and batch-norm
  statistics bit for bit, on a tiny ResNet with batch norm and dropout and
  on a tiny transformer with dropout; its allocator-level activation peak
  is at or below the peak the plan predicts, which is within the budget.
- Compiled by inductor, the program keeps every recomputation (op counts
  of the lowered graphs) and gives plain training's gradients within
  float tolerance.
- rt.remat trains 3 steps with plain training's losses, bit for bit.
"""

import math
import operator

from conftest import require_modules

torch, = require_modules("torch")
nn = torch.nn
F = torch.nn.functional

import pytest

import rematbench as rb
import rematbench.torch as rt
from rematbench.torch import inductor, measure, rng
from rematbench.torch.anchoring import (anchored, candidates, choose_chains,
                                        replay_cost)
from rematbench.torch.interpreter import run_step
from rematbench.torch.memory import as_events

torch.set_num_threads(1)


class TinyResNet(nn.Module):

    def __init__(self, width=8, classes=5):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, padding=1,
                                            bias=False),
                                  nn.BatchNorm2d(width), nn.ReLU())
        self.blocks = nn.ModuleList()
        for _ in range(3):
            self.blocks.append(nn.Sequential(
                nn.Conv2d(width, width, 3, padding=1, bias=False),
                nn.BatchNorm2d(width), nn.ReLU(),
                nn.Conv2d(width, width, 3, padding=1, bias=False),
                nn.BatchNorm2d(width)))
        self.drop = nn.Dropout(0.3)
        self.fc = nn.Linear(width, classes)

    def forward(self, x):
        x = self.stem(x)
        for b in self.blocks:
            x = torch.relu(x + b(x))
        return self.fc(self.drop(x.mean(dim=(2, 3))))


class Block(nn.Module):
    """A pre-norm decoder block with causal attention written out (softmax
    of q k^T) and dropout on the attention weights, the residuals and the
    MLP, as GPT-2 has."""

    def __init__(self, d, heads, p):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 2 * d), nn.Linear(2 * d, d)
        self.drop1, self.drop2, self.drop3 = (nn.Dropout(p), nn.Dropout(p),
                                              nn.Dropout(p))

    def forward(self, x):
        b, t, d = x.shape
        h = self.heads
        q, k, v = (z.view(b, t, h, d // h).transpose(1, 2)
                   for z in self.qkv(self.ln1(x)).split(d, dim=2))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // h)
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (self.drop1(att) @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.drop2(self.proj(y))
        return x + self.drop3(self.out(F.gelu(self.fc(self.ln2(x)))))


class TinyTransformer(nn.Module):

    def __init__(self, vocab=64, d=32, heads=2, layers=2, seq=16, p=0.2):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.layers = nn.ModuleList(Block(d, heads, p)
                                    for _ in range(layers))
        self.drop = nn.Dropout(p)
        self.head = nn.Linear(d, vocab)

    def forward(self, idx):
        x = self.drop(self.tok(idx) + self.pos(
            torch.arange(idx.shape[1])))
        for layer in self.layers:
            x = layer(x)
        return self.head(x).flatten(0, 1)


def resnet_case():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    return (TinyResNet(), (torch.randn(4, 3, 8, 8, generator=g),
                           torch.randint(5, (4,), generator=g)))


def transformer_case():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    return (TinyTransformer(), (torch.randint(64, (4, 16), generator=g),
                                torch.randint(64, (64,), generator=g)))


CASES = {"resnet": resnet_case, "transformer": transformer_case}


def snapshot(model):
    return [b.detach().clone() for b in model.buffers()]


def restore(model, buffers):
    with torch.no_grad():
        for b, v in zip(model.buffers(), buffers):
            b.copy_(v)


@pytest.fixture(scope="module", params=sorted(CASES))
def planned(request):
    model, batch = CASES[request.param]()
    plan = rt.plan(model, batch, nn.CrossEntropyLoss(), budget=0.7,
                   timeout=3)
    return request.param, model, batch, plan


def feasible(plan):
    return [r["algorithm"] for r in plan.judge() if r["status"] == "feasible"]


def test_program_equals_interpreter(planned):
    name, model, batch, plan = planned
    algorithms = feasible(plan)
    assert len(algorithms) > 1
    start = snapshot(model)
    for algorithm in algorithms:
        events = as_events(plan.solutions[algorithm].schedule)
        restore(model, start)
        torch.manual_seed(3)
        _, grads, loss = run_step(plan.partition, events, batch)
        stats = snapshot(model)
        restore(model, start)
        torch.manual_seed(3)
        plan.use(algorithm)
        built = plan.program()
        out_grads, out_loss = plan.run_program(batch, built)
        assert torch.equal(out_loss, loss), (name, algorithm)
        for a, b in zip(out_grads, grads):
            assert torch.equal(a, b), (name, algorithm)
        for a, b in zip(snapshot(model), stats):
            assert torch.equal(a, b), (name, algorithm)
        # Every recomputation is in the program: as many calls of each op
        # as the schedule's compute events run (less those nothing reads).
        runs = sum(len(plan.partition.members[v]) for k, v, _ in events
                   if k == "c")
        assert sum(built.op_counts.values()) <= runs
    restore(model, start)


def test_measured_peak_within_budget(planned):
    """Every feasible row's program, measured at the allocator (temporaries
    inside ops, the RNG states kept for recomputed dropout and all), at or
    below the budget, at or below the peak the plan predicts and within
    5% of it (the prediction frees each value, and each output of a
    multi-output op, after its last reader, as the program does; it still
    counts recomputations nothing reads, which the program drops)."""
    name, model, batch, plan = planned
    loss_fn = nn.CrossEntropyLoss()
    ref = measure.measure_step(lambda: loss_fn(model(batch[0]),
                                               batch[1]).backward(),
                               model, repeats=1, warmup=0, seed=0)
    rows = [r for r in plan.judge() if r["status"] == "feasible"]
    assert len(rows) > 1
    for row in rows:
        plan.use(row["algorithm"])
        r = measure.measure_step(lambda: plan.step(*batch), model, repeats=1,
                                 warmup=0, seed=0, reference=ref["grads"],
                                 timing=False)
        peak = r["measured_peak_bytes"]
        what = (name, row["algorithm"], peak, row["peak_bytes"],
                plan.budget_bytes)
        assert r["gradients_equal"], what
        assert peak <= row["peak_bytes"] <= plan.budget_bytes, what
        assert peak >= 0.95 * row["peak_bytes"], what
    assert min(row["peak_bytes"] for row in rows) < ref["measured_peak_bytes"]


def test_measure_step_tells_gradients_apart():
    """measure_step's gradient comparison, against references made here:
    plain training's own gradients are equal (difference 0); the same with
    one element one ulp up are not, and the difference is that ulp; a
    gradient missing on either side is not equal, by an infinite
    difference."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))
    unused = nn.Linear(2, 2)  # its parameters get no gradient
    model.add_module("unused", unused)
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(5, 6, generator=g), torch.randint(3, (5,), generator=g)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        loss_fn(model[2](model[1](model[0](x))), y).backward()

    for p in model.parameters():
        p.grad = None
    step()
    plain = [None if p.grad is None else p.grad.clone()
             for p in model.parameters()]
    assert [t is None for t in plain] == [False] * 4 + [True] * 2

    def compare(reference):
        r = measure.measure_step(step, model, repeats=1, warmup=0,
                                 reference=reference, timing=False,
                                 peak=False)
        return r["gradients_equal"], r["max_grad_diff"]

    assert compare(plain) == (True, 0.0)
    nudged = [None if t is None else t.clone() for t in plain]
    w = nudged[2].view(-1)
    w[4] = torch.nextafter(w[4], torch.tensor(math.inf))
    ulp = float(w[4].double() - plain[2].view(-1)[4].double())
    assert 0 < ulp < 1e-6
    assert compare(nudged) == (False, ulp)
    missing = list(plain)
    missing[1] = None  # the step gives a gradient the reference lacks
    assert compare(missing) == (False, math.inf)
    extra = list(plain)
    extra[5] = torch.zeros(2)  # the reference has one the step lacks
    assert compare(extra) == (False, math.inf)


def compiled_beside_plain(model, batch):
    """(plan, its compiled step's measurement with gradients against plain
    training's) for a plan at 0.7 of the NoRemat peak, compiled."""
    loss_fn = nn.CrossEntropyLoss()
    ref = measure.measure_step(lambda: loss_fn(model(batch[0]),
                                               batch[1]).backward(),
                               model, repeats=1, warmup=0, seed=0,
                               timing=False, peak=False)
    plan = rt.plan(model, batch, loss_fn, budget=0.7,
                   algorithms=["rotor", "twremat", "chen_greedy"], timeout=5)
    plan.compile()
    r = measure.measure_step(lambda: plan.step(*batch), model, repeats=1,
                             warmup=0, seed=0, reference=ref["grads"],
                             timing=False, peak=False)
    # Inductor sums in other orders: equal within float32 rounding.
    for a, b in zip(r["grads"], ref["grads"]):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-5), \
            float((a - b).abs().max())
    return plan


@pytest.mark.parametrize("case", sorted(CASES))
def test_compiled_keeps_recomputations(case):
    plan = compiled_beside_plain(*CASES[case]())
    assert plan.solution.overhead > 1  # it recomputes
    ok, counts = plan.program().recomputations_kept()
    assert ok, counts
    assert counts  # some op was compared


def test_compiled_pads_unaligned_matmuls(monkeypatch):
    """The compiled program runs inductor's pad_mm pass
    (rematbench.torch.inductor), as torch.compile does: a vocabulary of 67 leaves the
    output head's products unaligned. The pass pads CUDA operands only and
    measures whether padding pays, so here both checks are forced: the
    products are padded, and the gradients and recomputations stay."""
    from torch._inductor.fx_passes import pad_mm
    monkeypatch.setattr(inductor, "PADDED_DEVICES", ("cpu",))
    monkeypatch.setattr(pad_mm, "can_pad", lambda *a, **k: True)
    monkeypatch.setattr(torch._inductor.config, "force_shape_pad", True)
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    built = compiled_beside_plain(
        TinyTransformer(vocab=67),
        (torch.randint(67, (4, 16), generator=g),
         torch.randint(67, (64,), generator=g))).program()
    assert built.compiled_op_counts["aten.constant_pad_nd"] > 0
    ok, counts = built.recomputations_kept()
    assert ok, counts


def test_one_line_entry_point():
    losses = []
    for use in (False, True):
        model, (x, y) = transformer_case()
        loss_fn = nn.CrossEntropyLoss()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        step = rt.remat(model, loss_fn, budget=0.7, timeout=3,
                        algorithms=["rotor", "twremat", "dtr"])
        torch.manual_seed(11)
        run = []
        for k in range(3):
            opt.zero_grad()
            if use:
                loss = step(x, y)
            else:
                loss = loss_fn(model(x), y)
                loss.backward()
            run.append(loss.detach().clone())
            opt.step()
        losses.append(run)
        if use:
            ((p,),) = step.plans.values()
            assert p.budget_bytes == math.ceil(0.7 * p.noremat_peak_bytes)
    for a, b in zip(*losses):
        assert torch.equal(a, b), (losses)
    assert len({float(v) for v in losses[0]}) == 3


def test_compiled_within_budget():
    """compile=True: the compiled program's allocator-level peak, measured
    again here, is within the budget, and its step gives plain training's
    loss and gradients within float rounding (inductor sums in other
    orders: the tolerance of compiled_beside_plain)."""
    model, (x, y) = resnet_case()
    loss_fn = nn.CrossEntropyLoss()
    buffers = snapshot(model)
    torch.manual_seed(5)
    want = loss_fn(model(x), y)
    want.backward()
    plain = [q.grad.clone() for q in model.parameters()]
    restore(model, buffers)
    for q in model.parameters():
        q.grad = None
    step = rt.remat(model, loss_fn, budget=0.6, compile=True, timeout=3,
                    algorithms=["rotor", "twremat", "dtr"])
    torch.manual_seed(5)
    loss = step(x, y)
    ((p,),) = step.plans.values()
    budget = math.ceil(0.6 * p.noremat_peak_bytes)
    assert p.compiled and p.compiled_attempts[-1][2] <= budget
    assert p.solution.overhead > 1  # it recomputes
    assert torch.allclose(loss, want.detach(), rtol=1e-5)
    for q, b in zip(model.parameters(), plain):
        assert torch.allclose(q.grad, b, rtol=1e-4, atol=1e-5), \
            float((q.grad - b).abs().max())
    r = measure.measure_step(lambda: p.step(x, y), model, timing=False)
    assert r["measured_peak_bytes"] <= budget


def test_compiled_over_budget_plans_below(monkeypatch):
    """Where the compiled program measures over the budget, the step is
    planned again below it by the overshoot; where no try fits, the plan
    runs eagerly (the measurement is faked here: no compiling)."""
    model, batch = transformer_case()
    plan = rt.plan(model, batch, nn.CrossEntropyLoss(), budget=0.8,
                   timeout=3, algorithms=["rotor", "twremat", "dtr"])
    budget = plan.budget_bytes
    peaks = iter([budget + 1000, budget - 10])
    monkeypatch.setattr(measure, "measure_step",
                        lambda *a, **k: {"measured_peak_bytes": next(peaks)})
    p = plan.compiled_within_budget(*batch)
    assert p is not plan and p.compiled and p.budget_bytes == budget - 1001
    assert [a[0] for a in p.compiled_attempts] == [budget, budget - 1001]
    peaks = iter([budget + 1] * 3)
    p = plan.compiled_within_budget(*batch, tries=2)
    assert p is plan and not p.compiled
    assert [a[0] for a in p.compiled_attempts] == \
        [budget, budget - 2, budget - 4]


def plain_step(model, batch, loss_fn):
    """Plain training's step, measured once from seed 0."""
    return measure.measure_step(lambda: loss_fn(model(batch[0]),
                                                batch[1]).backward(),
                                model, repeats=1, warmup=0, seed=0,
                                timing=False)


def anchored_step(plan, anchoring, model, batch, ref):
    """The plan's step with `anchoring` (lowering.lower's), measured once
    from seed 0 against `ref`'s gradients."""
    plan.set_anchoring(anchoring)
    return measure.measure_step(lambda: plan.step(*batch), model, repeats=1,
                                warmup=0, seed=0, reference=ref["grads"],
                                timing=False)


def test_anchored_states_replay_dropout():
    """A program whose recomputed dropouts start from one anchor's saved
    generator state (lowering.lower's anchoring: the draws in between are
    replayed) holds one state where the plain program holds one per
    recomputed dropout, and still gives plain training's gradients bit for
    bit, eagerly and (within float rounding) compiled; its measured peak
    is the predicted one, below the plain program's. anchoring.anchored replays
    only where the budget asks for it, counts the draws' time, and its
    choice (anchors, and the recomputations that save their own state)
    is as exact."""
    model, batch = transformer_case()
    loss_fn = nn.CrossEntropyLoss()
    ref = plain_step(model, batch, loss_fn)
    plan = rt.plan(model, batch, loss_fn, budget=1.0,
                   algorithms=["checkpoint_last"], timeout=3)
    prog, memory, sol = plan.partition, plan.memory, plan.solution
    events = as_events(sol.schedule)
    recomputed = [m for m in sorted(prog.random)
                  if sum(1 for k, v, _ in events
                         if k == "c" and v == prog.owner[m]) > 1]
    assert len(recomputed) == len(prog.random) == 7
    one = {m: recomputed[0] for m in recomputed[1:]}

    def run(anchoring):
        r = anchored_step(plan, anchoring, model, batch, ref)
        assert r["gradients_equal"], anchoring
        predicted = memory.peak(sol.schedule, anchoring)
        peak = r["measured_peak_bytes"]
        assert 0.95 * predicted <= peak <= predicted, anchoring
        return peak, predicted

    measured = {}
    for name, anchoring in (("own", ({}, {}, {})), ("one", (one, {}, {}))):
        measured[name], predicted = run(anchoring)
        held = [n for n in plan.program().module.graph.nodes
                if n.target is operator.getitem and n.users and
                n.args[0].target is rng.run_and_save_rng_state and
                n.args[1] == 0]
        assert len(held) == (1 if anchoring[0] else 7)
        if name == "own":
            own_peak = predicted
    assert measured["one"] < measured["own"]
    # Forward recomputations run the dropouts in order: each but the first
    # can start from the state the one before left, replaying nothing.
    timeline = memory.schedule_timeline(events)
    chains = choose_chains(memory, events, timeline, one, {}, math.inf)
    assert chains
    run((one, {}, chains))
    assert replay_cost(memory, events, (one, {}, chains)) < \
        replay_cost(memory, events, (one, {}, {}))
    # Each state saved where the budget allows it; anchors where it does
    # not, their draws added to the predicted time.
    chosen, peak, overhead = anchored(memory, sol, own_peak)
    assert chosen == ({}, {}, {}) and overhead == sol.overhead
    chosen, peak, overhead = anchored(memory, sol, own_peak - 1)
    anchors, saves, chains = chosen
    assert anchors and peak < own_peak
    assert len(set(anchors.values())) < len(recomputed)
    assert overhead > sol.overhead
    assert run(chosen)[1] == peak
    plan.compile()
    r = measure.measure_step(lambda: plan.step(*batch), model, repeats=1,
                             warmup=0, seed=0, reference=ref["grads"],
                             timing=False, peak=False)
    for a, b in zip(r["grads"], ref["grads"]):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-5)


class NoisyMlp(nn.Module):
    """Linear layers each followed by Gaussian noise (randn_like, whose
    draws depend on shapes only) and RReLU (whose noise is drawn only for
    negative inputs: how far it moves the generator depends on values)."""

    def __init__(self, d=32, layers=4, classes=5):
        super().__init__()
        self.fcs = nn.ModuleList(nn.Linear(d, d) for _ in range(layers))
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        for fc in self.fcs:
            x = fc(x)
            x = F.rrelu(x + 0.1 * torch.randn_like(x),
                        training=self.training)
        return self.head(x)


def test_replays_stop_at_random_ops_that_draw_by_value():
    """A recomputation that replays draws from an anchor never replays
    RReLU's (zeros in place of its input would draw for every element,
    and the generator would end elsewhere): the anchors candidates() offers
    stop at each RReLU, the program they give has plain training's
    gradients bit for bit, and lowering.lower refuses an anchor whose
    replay would pass one."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    model = NoisyMlp()
    batch = (torch.randn(16, 32, generator=g),
             torch.randint(5, (16,), generator=g))
    loss_fn = nn.CrossEntropyLoss()
    ref = plain_step(model, batch, loss_fn)
    plan = rt.plan(model, batch, loss_fn, budget=2.0,
                   algorithms=["checkpoint_last"], timeout=3)
    prog, memory, sol = plan.partition, plan.memory, plan.solution
    order = sorted(prog.random)
    by_value = [m for m in order if not rng.replayable(prog.fx[m])]
    assert len(by_value) == len(order) // 2 == 4
    fewest = candidates(prog, as_events(sol.schedule))[-1]
    assert len(set(fewest.values())) == 4
    for m, a in fewest.items():
        assert not any(a <= j < m for j in by_value)
    own_peak = memory.peak(sol.schedule, ({}, {}, {}))
    chosen, peak, _ = anchored(memory, sol, own_peak - 1)
    assert chosen[0] and peak < own_peak
    r = anchored_step(plan, chosen, model, batch, ref)
    assert r["gradients_equal"] and r["measured_peak_bytes"] <= peak
    with pytest.raises(ValueError, match="draws by value"):
        anchored_step(plan, ({m: order[0] for m in order[1:]}, {}, {}),
                      model, batch, ref)
