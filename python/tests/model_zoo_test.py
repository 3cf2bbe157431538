"""The training loop engineers run, on models nobody here wrote (run by
ctest as python.model_zoo; rematbench.zoo builds them from small configs
with random weights, downloading nothing): transformers GPT-2, Llama,
BERT, T5 and ViT, timm ConvNeXt and Swin, PEFT LoRA on the Llama, and a
torch.nn model with LSTM and GRU layers, each trained one step through
rt.remat as its users call it (train_step(**batch) with padded batches
for the transformers), in float32 and, for the transformers, under bf16
autocast. Every step: gradients equal plain training's bit for bit,
allocator-measured activation peak within the budget (half of plain
training's, or the smallest budget NoFit names where half is below what
any schedule reaches).
"""

from conftest import require_modules

torch, transformers, timm, peft = require_modules(
    "torch", "transformers", "timm", "peft")

import pytest

import rematbench as rb
import rematbench.torch as rt
from rematbench import zoo
from rematbench.torch import measure

torch.set_num_threads(1)

ALGORITHMS = ["dtr", "twremat", "chen_greedy", "checkpoint_last", "noremat"]
TRANSFORMERS = ["gpt2", "llama", "bert", "t5", "hf_vit"]


def budget_for(model, batch):
    """0.5, or the smallest budget that fits where nothing fits at 0.5."""
    try:
        rt.plan(model, batch.example, batch.loss_fn, budget=0.5,
                algorithms=ALGORITHMS, timeout=3, cost="flop")
        return 0.5
    except rt.NoFit as e:
        assert e.reach_bound_bytes <= e.smallest_budget_bytes <= \
            e.noremat_peak_bytes
        assert e.closest_algorithm in ALGORITHMS
        return e.smallest_budget_bytes


def train_one_step(name, autocast=False):
    model, batch = zoo.build(name)
    amp = torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast)
    with amp:
        budget = budget_for(model, batch)
        plain = measure.measure_step(lambda: batch.plain_step(model), model,
                                     timing=False)
        step = rt.remat(model, batch.loss_fn, budget=budget,
                        algorithms=ALGORITHMS, timeout=3)
        got = measure.measure_step(
            lambda: step(*batch.args, **batch.kwargs), model, timing=False,
            reference=plain["grads"])
    ((plan,),) = step.plans.values()
    assert got["gradients_equal"], (name, got["max_grad_diff"])
    assert got["measured_peak_bytes"] <= plan.budget_bytes, name
    # The rows planning left unjudged ("dearer") could not have won.
    chosen = plan.algorithm, plan.predicted_overhead
    assert (plan.judge()[0]["algorithm"], plan.predicted_overhead) == chosen
    assert plan.table[0]["overhead"] == chosen[1], (name, plan.table)
    return model, plan, plain, got


@pytest.mark.parametrize("name", TRANSFORMERS + [
    "convnext", "swin", "llama_lora", "recurrent"])
def test_trains_exactly_within_budget(name):
    train_one_step(name)


@pytest.mark.parametrize("name", TRANSFORMERS)
def test_trains_exactly_under_bf16_autocast(name):
    model, plan, _, _ = train_one_step(name, autocast=True)
    casts = [n for n in plan.traced.module.graph.nodes
             if n.target is torch.ops.aten._to_copy.default and
             n.kwargs.get("dtype") is torch.bfloat16]
    assert casts  # the plan's program holds autocast's casts


def test_lora_trains_adapters_only():
    """LoRA: the frozen base weights get no gradient and are static
    memory (counted once in static_bytes), the adapters train."""
    model, plan, plain, got = train_one_step("llama_lora")
    frozen = [p for p in model.parameters() if not p.requires_grad]
    trained = [p for p in model.parameters() if p.requires_grad]
    assert frozen and trained and len(trained) < len(frozen)
    assert all(g is None for p, g in zip(model.parameters(), got["grads"])
               if not p.requires_grad)
    assert len(plan.traced.params) == len(trained)
    frozen_bytes = sum(p.numel() * p.element_size() for p in frozen)
    assert plan.traced.frozen_bytes == frozen_bytes
    assert plan.graph.static_bytes == 2 * plan.traced.parameter_bytes + \
        frozen_bytes + plan.traced.input_bytes


def test_padded_and_unpadded_batches_get_their_own_plans():
    """GPT-2 checks in Python whether the attention mask masks anything:
    the plan traced on a padded batch holds for padded batches only, is
    refused for an unpadded one in one line, and rt.remat plans that one
    again; both train exactly."""
    model, batch = zoo.build("gpt2")
    unpadded = dict(batch.kwargs,
                    attention_mask=torch.ones_like(
                        batch.kwargs["attention_mask"]))
    plan = rt.plan(model, batch.kwargs, budget=0.5, algorithms=ALGORITHMS,
                   timeout=3, cost="flop")
    assert plan.holds_for(**batch.kwargs)
    assert not plan.holds_for(**unpadded)
    with pytest.raises(rb.Error, match="plan again for this batch"):
        plan.step(**unpadded)
    step = rt.remat(model, budget=0.5, algorithms=ALGORITHMS, timeout=3)
    for kwargs in (batch.kwargs, unpadded, batch.kwargs):
        plain = measure.measure_step(lambda: model(**kwargs).loss.backward(),
                                     model, timing=False, peak=False)
        got = measure.measure_step(lambda: step(**kwargs), model,
                                   timing=False, peak=False,
                                   reference=plain["grads"])
        assert got["gradients_equal"]
    assert [len(v) for v in step.plans.values()] == [2]


def test_values_drawn_at_random_and_read_in_python_are_refused():
    """OPT's LayerDrop draws a random number and compares it in Python: no
    plan can check that before the step, so plan() refuses in one line
    naming the module and the op."""
    model, batch = zoo.build("opt")
    with pytest.raises(rb.Error, match=r"^plan: module 'model\.decoder' "
                       r"\(OPTDecoder\): op aten\.rand"):
        rt.plan(model, batch.kwargs, budget=0.5, algorithms=ALGORITHMS,
                timeout=3, cost="flop")


def test_new_sequence_lengths_reuse_the_winning_algorithm():
    """rt.remat on a Llama fed five sequence lengths: the first plans with
    every algorithm, the others (the same structure) with the one that won,
    alone; the last (28, between lengths traced) is derived from the
    traces of the others (shape_family), not traced; every step equals
    plain training's, within its budget."""
    model, _ = zoo.build("llama")
    step = rt.remat(model, budget=0.5, timeout=3)
    g = torch.Generator().manual_seed(7)
    for length in (16, 32, 24, 20, 28):
        ids = torch.randint(zoo.VOCAB, (2, length), generator=g)
        batch = dict(input_ids=ids, labels=ids)
        plain = measure.measure_step(lambda: model(**batch).loss.backward(),
                                     model, timing=False)
        got = measure.measure_step(lambda: step(**batch), model,
                                   timing=False, reference=plain["grads"])
        assert got["gradients_equal"], length
        (plan,) = step.plans[step.layout_key((), batch)]
        assert got["measured_peak_bytes"] <= plan.budget_bytes
    first, *later = [ps[0] for ps in step.plans.values()]
    assert len(first.table) > 5
    for p in later:
        assert [r["algorithm"] for r in p.table] == [first.algorithm]
    assert first.traced.derived_from is None
    assert later[-1].traced.derived_from is not None


def test_a_derived_length_under_bf16_autocast_holds_its_budget():
    """Under bf16 autocast on the CPU, a matrix product's workspace grows
    with the length in steps (17,536 bytes at 8 and 12, 46,976 at 20 and
    28 on this Llama): a derived length's plan takes the larger of its
    neighbours', and the step at 20, derived from 8, 12 and 28, is within
    its budget at the allocator (an interpolated workspace put it over)
    with plain training's gradients."""
    model, _ = zoo.build("llama", seed=1)
    g = torch.Generator().manual_seed(5)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        step = rt.remat(model, budget=0.6, timeout=3)
        for length in (8, 12, 28, 20):
            ids = torch.randint(zoo.VOCAB, (2, length), generator=g)
            batch = dict(input_ids=ids, labels=ids)
            plain = measure.measure_step(
                lambda: model(**batch).loss.backward(), model, timing=False)
            got = measure.measure_step(lambda: step(**batch), model,
                                       timing=False, reference=plain["grads"])
            (p,) = step.plans[step.layout_key((), batch)]
            assert got["gradients_equal"], length
            assert got["measured_peak_bytes"] <= p.budget_bytes, length
    assert p.traced.derived_from == (8, 12, 28)


def step_against_padded(model, step, batch, padded):
    """(`step(**batch)` measured against plain training on `padded`, plain
    training on `padded` against it on `batch`)."""
    unpadded = measure.measure_step(lambda: model(**batch).loss.backward(),
                                    model, timing=False, peak=False)
    plain = measure.measure_step(lambda: model(**padded).loss.backward(),
                                 model, timing=False, peak=False,
                                 reference=unpadded["grads"])
    got = measure.measure_step(lambda: step(**batch), model, timing=False,
                               reference=plain["grads"])
    return got, plain


def test_buckets_share_a_plan_between_lengths():
    """rt.remat(..., buckets=(16, 32)) on a Llama fed lengths 10, 16, 20
    and 32: two plans, one per bucket; each step's gradients are plain
    training's on the padded batch bit for bit, and the unpadded batch's
    up to rounding (the padding is masked and its labels ignored)."""
    model, _ = zoo.build("llama")
    step = rt.remat(model, budget=0.5, timeout=3, buckets=[32, 16])
    g = torch.Generator().manual_seed(3)
    for length in (10, 16, 20, 32):
        ids = torch.randint(1, zoo.VOCAB, (2, length), generator=g)
        batch = dict(input_ids=ids, labels=ids)
        padded = rt.buckets.pad(batch, [16, 32])
        assert padded["input_ids"].shape[1] == (16 if length <= 16 else 32)
        got, plain = step_against_padded(model, step, batch, padded)
        assert got["gradients_equal"], length
        assert plain["max_grad_diff"] < 1e-5, length
    assert sorted(k[-1][0][0][1] for k in step.plans) == [16, 32]
    with pytest.raises(rb.Error, match="^remat: buckets and pad_to_planned "
                       "pad keyword"):
        step(ids, ids)
    for bad in ([], [0], [8, "16"], 16):
        with pytest.raises(rb.Error, match="^remat: buckets must be"):
            rt.remat(model, budget=0.5, buckets=bad)


def test_buckets_leave_room_for_the_padded_copies():
    """rt.remat pads into tensors of its own, which live through the step
    beside the caller's batch: a bucket's plan is made below the budget by
    them. At a budget equal to the plan's predicted peak the allocator
    measured the copies' bytes over it (6 KB on the bench-size Llama)."""
    model, _ = zoo.build("llama")
    g = torch.Generator().manual_seed(4)
    ids = torch.randint(1, zoo.VOCAB, (2, 12), generator=g)
    batch = dict(input_ids=ids, labels=ids)
    args = dict(algorithms=["dtr"], timeout=3, cost="flop")
    tight = rt.plan(model, rt.buckets.pad(batch, [16]), budget=0.5,
                    **args).predicted_peak_bytes
    step = rt.remat(model, budget=tight, buckets=[16], **args)
    got = measure.measure_step(lambda: step(**batch), model, timing=False)
    assert got["measured_peak_bytes"] <= tight


def test_pad_to_planned_pads_until_padding_has_cost_a_plan():
    """rt.remat(..., pad_to_planned=True) on a Llama fed lengths 32, 16,
    16, 16, 48: 32 is planned; 16 runs padded up to 32 (a second plan of
    32, the model reading a padded mask otherwise than an unpadded one;
    none of 16), gradients plain training's on the padded batch bit for
    bit and the unpadded batch's up to rounding, within the budget at the
    allocator; the time padding lost on 16 is booked, and once it reaches
    what a plan took, 16 is planned; 48, longer than every plan, is
    planned."""
    model, _ = zoo.build("llama")
    g = torch.Generator().manual_seed(5)
    ids = torch.randint(1, zoo.VOCAB, (2, 32), generator=g)
    padded = rt.buckets.pad(dict(input_ids=ids[:, :16], labels=ids[:, :16]),
                            [32])
    budget = measure.measure_step(lambda: model(**padded).loss.backward(),
                                  model)["measured_peak_bytes"] // 2
    step = rt.remat(model, budget=budget, timeout=3, pad_to_planned=True)

    def run(length):
        ids = torch.randint(1, zoo.VOCAB, (2, length), generator=g)
        batch = dict(input_ids=ids, labels=ids)
        key = step.layout_key((), rt.buckets.pad(batch, []))
        padded = rt.buckets.pad(batch, [max(length, 32)])
        return (key, *step_against_padded(model, step, batch, padded))

    key32, got, _ = run(32)
    assert len(step.plans[key32]) == 1
    structure = step.structure_of(key32)
    assert step.last_plan_seconds[structure] > 0
    key16, got, plain = run(16)
    assert len(step.plans[key32]) == 2 and step.plans[key16] == []
    assert got["gradients_equal"]
    assert plain["max_grad_diff"] < 1e-5
    assert got["measured_peak_bytes"] <= budget
    waste = step.padding_waste[key16]
    assert 0 < waste < step.last_plan_seconds[structure]
    run(16)
    assert len(step.plans[key32]) == 2 and step.plans[key16] == []
    assert step.padding_waste[key16] > waste
    step.last_plan_seconds[structure] = step.padding_waste[key16]
    key16, got, _ = run(16)
    assert len(step.plans[key16]) == 1
    assert got["measured_peak_bytes"] <= budget
    key48, got, _ = run(48)
    assert len(step.plans[key48]) == 1
    assert got["measured_peak_bytes"] <= budget
    with pytest.raises(rb.Error, match="^remat: buckets and pad_to_planned "
                       "pad keyword"):
        step(ids := torch.ones(2, 8, dtype=torch.long), ids)
    with pytest.raises(rb.Error, match="^remat: reserve_bytes is remat's"):
        rt.remat(model, budget=budget, reserve_bytes=8)


def test_a_search_stops_waiting_once_a_schedule_is_settled():
    """On the Llama at 0.99 of its peak dtr's schedule (overhead 1.0001)
    fits after a few milliseconds, and order_search, which uses its whole
    first try, is not run again: nothing can beat 1.0001 by more than 0.1%
    (before, the search waited plan_seconds for it). At half the peak,
    where the best is far from 1, it runs again."""
    model, batch = zoo.build("llama")
    args = dict(algorithms=["dtr", "order_search"], timeout=5, cost="flop",
                plan_seconds=1)
    near = rt.plan(model, batch.example, budget=0.99, **args)
    row = next(r for r in near.table if r["algorithm"] == "order_search")
    assert row["status"] == "skipped", row
    assert row["message"].startswith("stopped at its first try: dtr's "
                                     "schedule of overhead 1.0001 fits")
    assert near.algorithm == "dtr" and near.predicted_overhead <= 1.001
    tight = rt.plan(model, batch.example, budget=0.5, **args)
    row = next(r for r in tight.table if r["algorithm"] == "order_search")
    assert not row["message"].startswith("stopped"), row


def test_compiled_program_of_a_transformers_model():
    # GPT-2's traced step keeps a constant (get_attr) and views whose
    # input comes from an earlier inductor graph with other strides: its
    # compiled program failed on both.
    model, batch = zoo.build("gpt2")
    plain = measure.measure_step(lambda: batch.plain_step(model), model,
                                 timing=False)
    plan = rt.plan(model, batch.example, budget=0.7, algorithms=ALGORITHMS,
                   timeout=3, cost="flop")
    plan.compile(True)
    got = measure.measure_step(
        lambda: plan.step(*batch.args, **batch.kwargs), model, timing=False,
        reference=plain["grads"])
    ok, _ = plan.program().recomputations_kept()
    assert ok
    assert got["max_grad_diff"] < 1e-5, got["max_grad_diff"]
