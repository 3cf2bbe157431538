#!/usr/bin/env python3
"""PyTorch's own ways of saving activation memory beside rematbench's plans,
measured with one instrument (rematbench.measure) in one run.

    $REMAT_PYTHON bench/studies/torch_options.py                 # results/torch_options/cpu.*
    $REMAT_PYTHON bench/studies/torch_options.py --models gpt2 --quick

For each model: plain eager training; torch.utils.checkpoint around every
block (non-reentrant); checkpoint_sequential with sqrt(n) segments; SAC
(selective activation checkpointing saving matrix-product and convolution
outputs, per block); torch.compile (inductor) with
torch._functorch.config.activation_memory_budget 1.0, 0.5, 0.2, 0.05; and
rematbench's plan (rematbench.torch) at budgets equal to each of those
options' measured activation peaks and on a ladder from the NoRemat peak
down to the memory lower bound, each run as a program eagerly
(`rematbench_eager`) and compiled by inductor (`rematbench_compiled`).

Every row is measured by rematbench.measure.measure_step: the
allocator-level activation peak of one step (profiler memory events,
gradients left out), the median step time after warm-up, and the
gradients against the plain eager step's from the same RNG state and
buffers. Writes <out>/<device>.json (results/SCHEMA.md, "Torch options"),
<device>.md (the table and the comparison the issue asks for) and
<device>.png (activation peak against step time, one curve per method).
"""

import argparse
import contextlib
import datetime
import functools
import math
import os
import platform
import signal
import statistics
import sys
import time

import torch
import torch._dynamo
import torch._functorch.config as fconfig
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint, checkpoint_sequential

import rematbench
import rematbench.torch as rt
from rematbench import files, measure

HEURISTICS = ["noremat", "dtr", "rotor", "chen_greedy", "chen_sqrtn",
              "chen_recursive", "revolve", "twremat", "checkpoint_last",
              "checkpoint_reuse", "dp_approx"]

# --------------------------------------------------------------------------
# Models at CPU sizes. Each: (model, example batch (x, y), loss_fn, blocks
# (the modules checkpointed one by one), sequential (an nn.Sequential of
# the same modules for checkpoint_sequential, or None)).


class GPTBlock(nn.Module):

    def __init__(self, d, heads, p):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.attn_drop, self.resid_drop = nn.Dropout(p), nn.Dropout(p)
        self.mlp_drop = nn.Dropout(p)

    def forward(self, x):
        b, t, d = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q = q.view(b, t, h, d // h).transpose(1, 2)
        k = k.view(b, t, h, d // h).transpose(1, 2)
        v = v.view(b, t, h, d // h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // h))
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (self.attn_drop(att) @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.resid_drop(self.proj(y))
        x = x + self.mlp_drop(self.out(F.gelu(self.fc(self.ln2(x)))))
        return x


class GPTEmbed(nn.Module):

    def __init__(self, vocab, seq, d, p):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.drop = nn.Dropout(p)

    def forward(self, idx):
        t = idx.shape[1]
        pos = torch.arange(t, device=idx.device)
        return self.drop(self.tok(idx) + self.pos(pos))


class GPTHead(nn.Module):

    def __init__(self, d, vocab):
        super().__init__()
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, x):
        return self.head(self.ln(x)).flatten(0, 1)


def gpt2(batch, seq, d, layers, heads, vocab, p=0.1):
    blocks = [GPTBlock(d, heads, p) for _ in range(layers)]
    model = nn.Sequential(GPTEmbed(vocab, seq, d, p), *blocks,
                          GPTHead(d, vocab))
    g = torch.Generator().manual_seed(1)
    x = torch.randint(vocab, (batch, seq), generator=g)
    y = torch.randint(vocab, (batch * seq,), generator=g)
    return model, (x, y), nn.CrossEntropyLoss(), blocks, model


class ViTStem(nn.Module):
    """torchvision's VisionTransformer up to its encoder layers."""

    def __init__(self, vit):
        super().__init__()
        self.vit = vit

    def forward(self, x):
        v = self.vit
        x = v._process_input(x)
        cls = v.class_token.expand(x.shape[0], -1, -1)
        x = torch.cat([cls, x], dim=1) + v.encoder.pos_embedding
        return v.encoder.dropout(x)


class ViTHead(nn.Module):

    def __init__(self, vit):
        super().__init__()
        self.ln, self.heads = vit.encoder.ln, vit.heads

    def forward(self, x):
        return self.heads(self.ln(x)[:, 0])


def vit_b_16(batch, image):
    import torchvision
    vit = torchvision.models.vit_b_16(image_size=image, num_classes=10)
    blocks = list(vit.encoder.layers)
    model = nn.Sequential(ViTStem(vit), *blocks, ViTHead(vit))
    # The Sequential holds vit (through ViTStem) and its layers again:
    # parameters are shared, so each is listed once.
    g = torch.Generator().manual_seed(1)
    x = torch.randn(batch, 3, image, image, generator=g)
    y = torch.randint(10, (batch,), generator=g)
    return model, (x, y), nn.CrossEntropyLoss(), blocks, model


def resnet50(batch, image):
    import torchvision
    r = torchvision.models.resnet50(num_classes=10)
    blocks = [b for layer in (r.layer1, r.layer2, r.layer3, r.layer4)
              for b in layer]
    seq = nn.Sequential(r.conv1, r.bn1, r.relu, r.maxpool, *blocks,
                        r.avgpool, nn.Flatten(1), r.fc)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(batch, 3, image, image, generator=g)
    y = torch.randint(10, (batch,), generator=g)
    return seq, (x, y), nn.CrossEntropyLoss(), blocks, seq


def conv_block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):

    def __init__(self, levels=4, base=16, classes=3):
        super().__init__()
        ch = [base * 2**i for i in range(levels)]
        self.down = nn.ModuleList()
        cin = 3
        for c in ch:
            self.down.append(conv_block(cin, c))
            cin = c
        self.mid = conv_block(ch[-1], 2 * ch[-1])
        self.ups, self.up = nn.ModuleList(), nn.ModuleList()
        cin = 2 * ch[-1]
        for c in reversed(ch):
            self.ups.append(nn.ConvTranspose2d(cin, c, 2, stride=2))
            self.up.append(conv_block(2 * c, c))
            cin = c
        self.head = nn.Conv2d(ch[0], classes, 1)

    def forward(self, x):
        skips = []
        for b in self.down:
            x = b(x)
            skips.append(x)
            x = F.max_pool2d(x, 2)
        x = self.mid(x)
        for t, b, s in zip(self.ups, self.up, reversed(skips)):
            x = b(torch.cat([t(x), s], dim=1))
        return self.head(x)


def unet(batch, image):
    model = UNet()
    blocks = list(model.down) + [model.mid] + list(model.up)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(batch, 3, image, image, generator=g)
    y = torch.randint(3, (batch, image, image), generator=g)
    return model, (x, y), nn.CrossEntropyLoss(), blocks, None


def models(size):
    """name -> (builder, description) at `size`: "quick" (the test's),
    "cpu" (minutes on two cores) or "gpu" (training sizes: ResNet-50 and
    ViT-B/16 at batch 64, 224x224; GPT-2 small at sequence 1024)."""
    if size == "quick":
        return {
            "resnet50": (lambda: resnet50(2, 32), "ResNet-50, batch 2, 32x32"),
            "vit_b_16": (lambda: vit_b_16(1, 32), "ViT-B/16, batch 1, 32x32"),
            "gpt2": (lambda: gpt2(2, 32, 128, 12, 4, 256),
                     "GPT-2-style decoder, 12 layers, d 128, 4 heads, "
                     "seq 32, batch 2, vocab 256, dropout 0.1"),
            "unet": (lambda: unet(1, 32), "U-Net, 4 levels, base 16, "
                     "batch 1, 32x32"),
        }
    if size == "gpu":
        return {
            "resnet50": (lambda: resnet50(64, 224), "ResNet-50 (torchvision, "
                         "10 classes), batch 64, 224x224"),
            "vit_b_16": (lambda: vit_b_16(64, 224), "ViT-B/16 (torchvision, "
                         "10 classes), batch 64, 224x224 (197 tokens)"),
            "gpt2": (lambda: gpt2(8, 1024, 768, 12, 12, 50257),
                     "GPT-2 small: 12 layers, d 768, 12 heads, seq 1024, "
                     "batch 8, vocab 50257, dropout 0.1 (embedding, "
                     "attention, residual, MLP)"),
            "unet": (lambda: unet(16, 256), "U-Net, 4 levels, base 16, "
                     "batch 16, 256x256, batch norm"),
        }
    return {
        "resnet50": (lambda: resnet50(2, 64), "ResNet-50 (torchvision, 10 "
                     "classes), batch 2, 64x64"),
        "vit_b_16": (lambda: vit_b_16(2, 64), "ViT-B/16 (torchvision, 10 "
                     "classes), batch 2, 64x64 (17 tokens)"),
        "gpt2": (lambda: gpt2(2, 128, 256, 12, 4, 1024),
                 "GPT-2-style decoder, 12 layers, d 256, 4 heads, seq 128, "
                 "batch 2, vocab 1024, dropout 0.1 (embedding, attention, "
                 "residual, MLP)"),
        "unet": (lambda: unet(2, 64), "U-Net, 4 levels, base 16, batch 2, "
                 "64x64, batch norm"),
    }


# --------------------------------------------------------------------------
# PyTorch's options.


def patched_blocks(blocks, wrap):
    """Context: each block's forward replaced by wrap(original forward)."""
    class Ctx:
        def __enter__(self):
            for b in blocks:
                b.forward = wrap(b.forward)

        def __exit__(self, *exc):
            for b in blocks:
                del b.forward
    return Ctx()


def ckpt(fwd, **kw):
    return lambda *a: checkpoint(fwd, *a, use_reentrant=False, **kw)


def sac_policy(ctx, op, *args, **kwargs):
    from torch.utils.checkpoint import CheckpointPolicy
    saved = (torch.ops.aten.mm.default, torch.ops.aten.addmm.default,
             torch.ops.aten.bmm.default, torch.ops.aten.convolution.default,
             torch.ops.aten._scaled_dot_product_flash_attention.default,
             torch.ops.aten._scaled_dot_product_efficient_attention.default)
    return CheckpointPolicy.MUST_SAVE if op in saved else \
        CheckpointPolicy.PREFER_RECOMPUTE


def sac_context():
    from torch.utils.checkpoint import create_selective_checkpoint_contexts
    return create_selective_checkpoint_contexts(sac_policy)


# --------------------------------------------------------------------------


def row_of(model_name, method, setting, r, **extra):
    row = {"model": model_name, "method": method, "setting": setting,
           "budget_bytes": None,
           "measured_peak_bytes": r.get("peak_bytes"),
           "cuda_peak_bytes": r.get("cuda_peak_bytes"),
           "step_seconds": r.get("step_seconds"),
           "gradients_equal": r.get("gradients_equal"),
           "max_grad_diff": r.get("max_grad_diff"),
           "eager_step_seconds_paired": r.get("baseline_seconds"),
           "step_ratio_to_eager": r.get("ratio_to_baseline")}
    row.update(extra)
    return row


def log(*a):
    print(*a, file=sys.stderr, flush=True)


SKIPPED = "skipped: the run's --deadline had passed"


class Deadline:
    """The time after which a run starts no new measurement (a lent GPU's
    time is counted): what is left is recorded as skipped."""

    def __init__(self, seconds):
        self.at = None if seconds is None else time.monotonic() + seconds

    def passed(self):
        return self.at is not None and time.monotonic() > self.at


class Stopped(BaseException):
    """SIGTERM (a `timeout` around the run, a lent GPU's limit): raised in
    the main thread so that what was measured is written before the run
    ends. Not an Exception, so that no method's own error handling takes
    it for that method's failure."""


def stop_on_sigterm(signum, frame):
    raise Stopped("stopped by SIGTERM")


def placed(model, batch, device, dtype):
    """The model and batch on `device`, floating point in `dtype`."""
    model.to(device=device, dtype=dtype)
    return [t.to(device=device, dtype=dtype) if t.is_floating_point()
            else t.to(device) for t in batch]


def skipped_row(name, method, setting, **extra):
    return dict({"model": name, "method": method, "setting": setting,
                 "budget_bytes": None, "measured_peak_bytes": None,
                 "step_seconds": None, "gradients_equal": None,
                 "error": SKIPPED}, **extra)


def run_model(name, build, args, rows, summary):
    """Measures model `name`'s methods into `rows`, and what holds for the
    whole model into `summary` (filled as the run goes, so that a run that
    raises keeps what it measured)."""
    torch.manual_seed(0)
    model, batch, loss_fn, blocks, seq = build()
    device = torch.device(args.device)
    x, y = placed(model, batch, device, getattr(torch, args.dtype))
    model.train()
    deadline = args.deadline
    n_params = sum(p.numel() for p in model.parameters())
    buffers = [b.detach().clone() for b in model.buffers()]
    meas_ = functools.partial(measure.measure_step, model=model,
                              repeats=args.repeats, warmup=args.warmup,
                              seed=0)

    def meas(step, **kw):
        if device.type == "cuda":  # what the last method cached
            torch.cuda.empty_cache()
        if kw.get("reference") is not None:
            kw["baseline"] = plain  # paired timing against plain training
        # Every method starts from the same buffers and RNG seed (compile
        # warm-ups outside the measurement update running statistics).
        with torch.no_grad():
            for b, v in zip(model.buffers(), buffers):
                b.copy_(v)
        return meas_(step, **kw)

    def eager():
        loss_fn(model(x), y).backward()

    def plain():
        """The eager step with no block patched by a checkpointing
        method."""
        saved = {b: b.__dict__.pop("forward") for b in blocks
                 if "forward" in b.__dict__}
        try:
            eager()
        finally:
            for b, f in saved.items():
                b.forward = f

    t0 = time.perf_counter()
    base = meas(eager)
    ref = base["grads"]
    rows.append(row_of(name, "eager", "-", base, gradients_equal=True,
                       max_grad_diff=0.0))
    # Plain training again from the same state: on CUDA, kernels that
    # accumulate with atomics differ from run to run, and this difference
    # is the floor of every method's.
    rerun = meas(eager, reference=ref, timing=False, peak=False)
    log(f"{name}: {n_params} parameters; eager peak {base['peak_bytes']} "
        f"bytes, step {base['step_seconds']:.3f} s")
    options = {}

    def add(method, setting, running, **extra):
        """Measures the option whose step `running()` (a context manager)
        gives, and keeps `running` for the head-to-head timing."""
        if deadline.passed():
            rows.append(skipped_row(name, method, setting))
            return None
        try:
            t = time.perf_counter()
            with running() as step:
                if method == "compile":  # entering compiled it
                    extra["compile_seconds"] = round(
                        time.perf_counter() - t, 1)
                t = time.perf_counter()
                r = meas(step, reference=ref)
            extra["seconds_to_measure"] = round(time.perf_counter() - t, 1)
        except Exception as e:  # an option that fails is a result too
            log(f"  {method} {setting}: {type(e).__name__}: {e}")
            rows.append({"model": name, "method": method,
                         "setting": setting, "budget_bytes": None,
                         "measured_peak_bytes": None, "step_seconds": None,
                         "gradients_equal": None,
                         "error": f"{type(e).__name__}: {str(e)[:300]}"})
            return None
        rows.append(row_of(name, method, setting, r, **extra))
        log(f"  {method} {setting}: peak {r['peak_bytes']} "
            f"({r['peak_bytes'] / base['peak_bytes']:.2f} of eager), step "
            f"{r['step_seconds']:.3f} s ({r['step_seconds'] / base['step_seconds']:.2f}x), "
            f"grads equal {r.get('gradients_equal')} "
            f"(max diff {r.get('max_grad_diff', 0):.1e})")
        options[(method, setting)] = (r["peak_bytes"], running)
        return r

    @contextlib.contextmanager
    def per_block(wrap):
        with patched_blocks(blocks, wrap):
            yield eager

    add("checkpoint_block", f"{len(blocks)} blocks",
        lambda: per_block(ckpt))
    if seq is not None:
        segs = max(1, round(math.sqrt(len(seq))))

        def seq_step():
            out = checkpoint_sequential(seq, segs, x, use_reentrant=False)
            loss_fn(out, y).backward()
        add("checkpoint_sequential", f"{segs} segments of {len(seq)}",
            lambda: contextlib.nullcontext(seq_step))
    else:
        rows.append({"model": name, "method": "checkpoint_sequential",
                     "setting": "-", "budget_bytes": None,
                     "measured_peak_bytes": None, "step_seconds": None,
                     "gradients_equal": None,
                     "error": "not a sequence of modules (skip "
                              "connections across blocks)"})
    add("sac", "save mm/addmm/bmm/convolution outputs, per block",
        lambda: per_block(lambda f: ckpt(f, context_fn=sac_context)))

    @contextlib.contextmanager
    def compiled_model(budget):
        """The model compiled by torch.compile at `budget`, compiled by
        its first step (recompiling for the head-to-head timing reuses
        inductor's cache of compiled graphs)."""
        torch._dynamo.reset()
        try:
            with fconfig.patch(activation_memory_budget=budget):
                cm = torch.compile(model)

                def compiled_step():
                    loss_fn(cm(x), y).backward()
                torch.manual_seed(0)
                compiled_step()
                for p in model.parameters():
                    p.grad = None
                yield compiled_step
        finally:
            torch._dynamo.reset()

    for b in args.compile_budgets if not args.no_compile else []:
        add("compile", f"activation_memory_budget={b}",
            functools.partial(compiled_model, b))

    summary.update({"parameters": n_params,
                    "eager_peak_bytes": base["peak_bytes"],
                    "eager_step_seconds": base["step_seconds"],
                    "eager_rerun_gradients_equal": rerun["gradients_equal"],
                    "eager_rerun_max_grad_diff": rerun["max_grad_diff"]})
    if deadline.passed():
        rows.append(skipped_row(name, "rematbench_eager", "-"))
        summary["seconds"] = round(time.perf_counter() - t0, 1)
        return
    # rematbench: one trace, then a plan per budget.
    t = time.perf_counter()
    plan = rt.plan(model, (x, y), loss_fn, budget=1.0,
                   algorithms=HEURISTICS, timeout=args.solve_timeout,
                   repeats=2, threads=args.solve_threads)
    trace_seconds = time.perf_counter() - t
    g = plan.graph
    summary.update({
        "graph_nodes": g.num_nodes,
        "noremat_simulated_peak_bytes": g.noremat_peak_bytes,
        "lower_bound_bytes": g.lower_bound_bytes,
        "gradients_once_lower_bound_bytes":
            gradients_once_lower_bound(plan.traced.graph["nodes"]),
        "reach_lower_bound_bytes": g.reach_lower_bound()["bytes"],
        "trace_and_plan_seconds": round(trace_seconds, 1)})
    log(f"  rematbench: {g.num_nodes} nodes, NoRemat peak "
        f"{g.noremat_peak_bytes}, lower bound {g.lower_bound_bytes} "
        f"(reach {summary['reach_lower_bound_bytes']}); "
        f"trace+plan {trace_seconds:.1f} s")
    targets = []  # (budget bytes, where it comes from)
    candidates = []  # (rematbench row, its step's context manager)

    @contextlib.contextmanager
    def plan_running(p, compiled):
        """Plan p's step, eager or compiled by its first run."""
        p.compile(compiled)
        try:
            if compiled:
                torch.manual_seed(0)
                p.step(x, y)
            yield lambda: p.step(x, y)
        finally:
            p.compile(False)
            p._built.clear()  # free the compiled graphs

    def plan_fields(p, budget, planned, attempts):
        return {"budget_bytes": budget, "planned_budget_bytes": planned,
                "algorithm": p.algorithm,
                "simulated_peak_bytes": p.solution.peak_bytes,
                "predicted_peak_bytes": p.predicted_peak_bytes,
                "predicted_overhead": p.predicted_overhead,
                "attempts": attempts}

    def measure_compiled(p):
        """Plan p's program, compiled by inductor, measured (or the error
        running it gave)."""
        try:
            rc = meas(lambda: p.step(x, y), reference=ref)
            ok, kept = p.program().recomputations_kept()
            rc["recomputations_kept"] = ok
            rc["op_counts"] = {k: list(v) for k, v in kept.items()}
        except Exception as e:
            rc = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
        p.compile(False)
        p._built.clear()  # free the compiled segments
        return rc

    for (method, setting), (peak, _) in options.items():
        targets.append((peak, f"{method} {setting}"))
    hi, lo = g.noremat_peak_bytes, g.lower_bound_bytes
    for k in range(args.ladder):
        f = k / max(1, args.ladder - 1)
        targets.append((int(hi * (lo * 1.02 / hi) ** f),
                        f"ladder {k + 1}/{args.ladder}"))
    targets.sort(key=lambda t: -t[0])
    eager_cache = {}  # schedule -> eager result
    compiled_cache = {}  # schedule -> (compiled plan, its result)
    compiled_count = 0
    # Compiled programs take 10-35 s each to compile on two cores: only at
    # the torch.compile options' levels (where the comparison is made),
    # and at most args.compiled_max schedules per model.
    compiled_whys = [w for _, w in targets if w.startswith("compile")]
    for budget, why in targets:
        if deadline.passed():
            rows.append(skipped_row(name, "rematbench_eager", why,
                                    budget_bytes=budget))
            continue
        planned, attempts, p, re = budget, [], None, None
        for _ in range(args.calibrate + 1):
            try:
                p = plan.at(planned)
            except rematbench.Error as e:
                p = None
                err = str(e)[:300]
                break
            sched = tuple(tuple(e) for e in p.schedule)
            if sched not in eager_cache:
                p.compile(False)
                eager_cache[sched] = meas(lambda p=p: p.step(x, y),
                                          reference=ref)
            re = eager_cache[sched]
            attempts.append({"planned_bytes": planned,
                             "algorithm": p.algorithm,
                             "simulated_peak_bytes": p.solution.peak_bytes,
                             "predicted_peak_bytes": p.predicted_peak_bytes,
                             "measured_peak_bytes": re["peak_bytes"]})
            if re["peak_bytes"] <= budget or \
                    len(attempts) > args.calibrate:
                break
            # Over (only with --calibrate): plan again below by the
            # overshoot.
            planned = planned - (re["peak_bytes"] - budget) - 1
        if p is None and not attempts and why.startswith("ladder") and \
                "(" not in why and "smallest budget that fits is " in err:
            # The ladder's last step: the smallest budget that fits.
            smallest = int(err.split("smallest budget that fits is ")[1]
                           .split(" ")[0])
            targets.append((smallest, why + " (smallest that fits)"))
            fitted = min((r["budget_bytes"] for r in rows
                          if r["model"] == name and
                          r["method"] == "rematbench_eager" and
                          r.get("measured_peak_bytes") is not None),
                         default=None)
            if fitted is not None and fitted > smallest * 1.2:
                targets.append((int(math.sqrt(fitted * smallest)),
                                why + " (between the smallest that fits "
                                "and the last rung)"))
        if p is None and not attempts:
            rows.append({"model": name, "method": "rematbench_eager",
                         "setting": why, "budget_bytes": budget,
                         "measured_peak_bytes": None, "step_seconds": None,
                         "gradients_equal": None, "error": err})
            log(f"  rematbench at {budget} ({why}): nothing fits")
            continue
        if p is None:  # the calibrated budget fits nothing: keep the last
            p = plan.at(attempts[-1]["planned_bytes"])
        extra = plan_fields(p, budget, planned, attempts)
        rows.append(row_of(name, "rematbench_eager", why, re, **extra))
        candidates.append((rows[-1], functools.partial(
            plan_running, p, False)))
        log(f"  rematbench_eager at {budget} ({why}): {p.algorithm} planned "
            f"{planned}, simulated {p.solution.peak_bytes}, measured "
            f"{re['peak_bytes']} "
            f"({'within' if re['peak_bytes'] <= budget else 'OVER'}; "
            f"{len(attempts)} attempts), step "
            f"{re['step_seconds']:.3f} s ({re['step_seconds'] / base['step_seconds']:.2f}x; "
            f"predicted {p.predicted_overhead:.2f}), grads equal "
            f"{re['gradients_equal']}")
        if args.no_compile or why not in compiled_whys:
            continue
        # The plan predicts the eager program's peak, not what inductor's
        # graphs hold: compiled, the step is planned as rt.remat(...,
        # compile=True) plans it (Plan.compiled_within_budget), and the plan
        # that gives is measured.
        sched = tuple(tuple(e) for e in p.schedule)
        cached = compiled_cache.get(sched)
        if cached is None or cached[1].get("peak_bytes", 0) > budget:
            if compiled_count >= args.compiled_max:
                continue
            if deadline.passed():
                rows.append(skipped_row(name, "rematbench_compiled", why,
                                        budget_bytes=budget))
                continue
            compiled_count += 1
            t = time.perf_counter()
            try:
                cp = p.compiled_within_budget(
                    x, y, tries=args.calibrate_compiled)
                csecs = round(time.perf_counter() - t, 1)
                rc = measure_compiled(cp) if cp.compiled else {
                    "error": "no compiled program within the budget"}
                rc["compile_seconds"] = csecs
            except Exception as e:
                cp, rc = p, {"error": f"{type(e).__name__}: {str(e)[:300]}"}
            cached = compiled_cache[sched] = (cp, rc)
        p, rc = cached
        attempts = [{"planned_bytes": b, "algorithm": a,
                     "measured_peak_bytes": peak}
                    for b, a, peak in getattr(p, "compiled_attempts", [])]
        extra = plan_fields(p, budget, p.budget_bytes, attempts)
        if "error" in rc:
            rows.append(dict({"model": name, "method": "rematbench_compiled",
                              "setting": why, "measured_peak_bytes": None,
                              "step_seconds": None, "gradients_equal": None,
                              "error": rc["error"]}, **extra))
            log(f"  rematbench_compiled: {rc['error']}")
        else:
            rows.append(row_of(name, "rematbench_compiled", why, rc,
                               compile_seconds=rc["compile_seconds"],
                               recomputations_kept=rc["recomputations_kept"],
                               op_counts=rc["op_counts"], **extra))
            candidates.append((rows[-1], functools.partial(
                plan_running, p, True)))
            log(f"  rematbench_compiled at {budget} ({why}): {p.algorithm} "
                f"planned {p.budget_bytes}, measured {rc['peak_bytes']} "
                f"({'within' if rc['peak_bytes'] <= budget else 'OVER'}; "
                f"{len(attempts)} attempts), step "
                f"{rc['step_seconds']:.3f} s, max grad diff "
                f"{rc['max_grad_diff']:.1e}, recomputations kept "
                f"{rc['recomputations_kept']}, compile "
                f"{rc['compile_seconds']} s")
    summary["head_to_head"] = compare(options, candidates, meas, args,
                                      deadline)
    # Plain training is no memory option but is the step a NoRemat plan
    # must match (the goal: within 3%), timed the same way.
    summary["against_eager"] = compare(
        {("eager", "-"): (base["peak_bytes"],
                          lambda: contextlib.nullcontext(eager))},
        candidates, meas, args, deadline)
    summary["seconds"] = round(time.perf_counter() - t0, 1)


def gradients_once_lower_bound(nodes):
    """The least activation memory of a schedule that computes each node
    that is not a forward value (the loss, each gradient) once, as
    checkpoint_last and checkpoint_reuse do: while such a node b is
    computed, besides what computing it takes (its inputs, itself, its
    workspace), every non-forward value computed before it (an ancestor)
    and read after it (by a descendant) is live. The graph's lower bound
    counts only the former; the difference is what this class of
    schedules cannot reach."""
    n = len(nodes)
    readers = [0] * n  # bit set of each node's readers
    for v in nodes:
        for u in v["inputs"]:
            readers[u] |= 1 << v["id"]
    order, indegree = [], [len(v["inputs"]) for v in nodes]
    ready = [v["id"] for v in nodes if not v["inputs"]]
    while ready:
        v = ready.pop()
        order.append(v)
        for w in _set_bits(readers[v]):
            indegree[w] -= 1
            if indegree[w] == 0:
                ready.append(w)
    once = [v["kind"] != "forward" for v in nodes]
    before = [0] * n  # non-forward ancestors
    for v in order:
        for u in nodes[v]["inputs"]:
            before[v] |= before[u] | ((1 << u) if once[u] else 0)
    after = [0] * n  # descendants
    for v in reversed(order):
        for w in _set_bits(readers[v]):
            after[v] |= after[w] | (1 << w)
    best = 0
    for v in order:
        if not once[v]:
            continue
        node = nodes[v]
        own = set(node["inputs"])
        live = node["mem"] + node.get("workspace", 0) + sum(
            nodes[u]["mem"] for u in own)
        live += sum(nodes[u]["mem"] for u in _set_bits(before[v])
                    if u not in own and readers[u] & after[v])
        best = max(best, live)
    return best


def _set_bits(x):
    while x:
        low = x & -x
        yield low.bit_length() - 1
        x ^= low


def compare(options, candidates, meas, args, deadline):
    """Each PyTorch option against rematbench's plan at or below its
    measured peak, timed again side by side: the two steps alternate,
    `args.pairs` pairs after a warm-up pair, and the ratio is the median
    over the pairs. The plan is chosen as a user would choose it, by its
    predicted time (the rows' measured times are too noisy to choose by):
    the schedule with the least predicted overhead among the eager rows
    measured at or below the level, and the same among the compiled rows;
    the faster of the two is the level's result (both are in `timed`)."""
    out = []
    for (method, setting), (level, running) in options.items():
        fits = [c for c in candidates
                if c[0]["measured_peak_bytes"] <= level]
        entry = {"option_method": method, "option_setting": setting,
                 "option_peak_bytes": level, "rematbench_method": None}
        if not fits:
            out.append(entry)
            continue
        if deadline.passed():
            out.append(dict(entry, error=SKIPPED))
            continue
        chosen = {}  # method -> its row of least predicted overhead
        for c in sorted(fits, key=lambda c: (c[0]["predicted_overhead"],
                                             c[0]["measured_peak_bytes"])):
            chosen.setdefault(c[0]["method"], c)
        timed = []
        for row, plan_running in chosen.values():
            t = {"rematbench_method": row["method"],
                 "rematbench_setting": row["setting"],
                 "algorithm": row["algorithm"],
                 "rematbench_peak_bytes": row["measured_peak_bytes"],
                 "predicted_overhead": row["predicted_overhead"],
                 "pairs": args.pairs}
            try:
                with running() as option_step, \
                        plan_running() as plan_step:
                    r = meas(plan_step, baseline=option_step, peak=False,
                             repeats=args.pairs, warmup=1)
                t.update({"rematbench_seconds": r["step_seconds"],
                          "option_seconds": r["baseline_seconds"],
                          "time_ratio": r["ratio_to_baseline"],
                          "time_ratio_ci95": r.get("ratio_ci95")})
                log(f"  head to head: {row['method']} ({row['algorithm']}, "
                    f"{row['setting']}) / {method} {setting}: "
                    f"{r['ratio_to_baseline']:.3f}")
            except Exception as e:
                t["error"] = f"{type(e).__name__}: {str(e)[:300]}"
                log(f"  head to head with {method} {setting}: {t['error']}")
            timed.append(t)
        ok = [t for t in timed if "time_ratio" in t]
        entry.update(min(ok, key=lambda t: t["time_ratio"]) if ok
                     else timed[0])
        entry["timed"] = timed
        out.append(entry)
    return out


def context(args, descriptions):
    """The run's context: the machine's (machine()) and the timing's."""
    return dict(machine(args.device, args.dtype, descriptions),
                repeats=args.repeats, warmup=args.warmup, pairs=args.pairs,
                sizes=args.sizes, compile_budgets=args.compile_budgets,
                deadline_seconds=args.deadline_seconds)


def machine(device, dtype, descriptions):
    """Where, when and with what a bench ran: device, CPU, versions, the
    commit, the command line and the models' descriptions."""
    import numpy
    try:
        import torchvision
        tv = torchvision.__version__
    except ImportError:
        tv = None
    cpu = None
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f
                       if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    git = None
    try:
        import subprocess
        here = os.path.dirname(os.path.abspath(__file__))
        # "-dirty" when the run's code is not the commit's.
        git = subprocess.run(["git", "-C", here, "describe", "--always",
                              "--dirty"], capture_output=True, text=True,
                             check=True).stdout.strip()
    except Exception:
        pass
    return {"date": datetime.datetime.now(datetime.timezone.utc)
            .isoformat(timespec="seconds"),
            "device": device,
            "device_name": cpu if device == "cpu" else
            torch.cuda.get_device_name(),
            "cuda": torch.version.cuda if device != "cpu" else None,
            "cudnn": torch.backends.cudnn.version() if device != "cpu"
            else None,
            "float32_matmul_precision": torch.get_float32_matmul_precision(),
            "host": platform.node(), "cpu_model": cpu,
            "cpu_count": os.cpu_count(),
            "threads": torch.get_num_threads(),
            "load_average_start": None, "load_average_end": None,
            "python": platform.python_version(), "torch": torch.__version__,
            "torchvision": tv, "numpy": numpy.__version__,
            "git_commit": git, "command_line": " ".join(sys.argv),
            "dtype": dtype,
            "models": descriptions}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--dtype", default="float32",
                    choices=["float32", "bfloat16"],
                    help="the parameters' and the batch's floating point "
                         "type (pure bf16 training, not autocast)")
    ap.add_argument("--models", default="resnet50,vit_b_16,gpt2,unet")
    ap.add_argument("--sizes", choices=["quick", "cpu", "gpu"], default=None,
                    help="model sizes: quick (the test's), cpu (minutes on "
                         "two cores) or gpu (batch 64 at 224x224, GPT-2 "
                         "small at sequence 1024); default: gpu on a GPU, "
                         "else cpu")
    ap.add_argument("--quick", action="store_true",
                    help="the same as --sizes quick")
    ap.add_argument("--out", default=None,
                    help="directory (default results/torch_options); the "
                         "files are named <device>[-<dtype>].{json,md,png} "
                         "(cpu.json for float32 on the CPU)")
    ap.add_argument("--compile-budgets", default="1.0,0.5,0.2,0.05",
                    type=lambda v: [float(b) for b in v.split(",")],
                    help="torch.compile's activation_memory_budget settings")
    ap.add_argument("--deadline", dest="deadline_seconds", type=float,
                    default=None,
                    help="seconds after which no new measurement starts "
                         "(what is left is recorded as skipped); the "
                         "results are written after every model")
    ap.add_argument("--fail-fast", action="store_true",
                    help="stop at the first model whose run raises (the "
                         "results so far are written)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--ladder", type=int, default=5)
    ap.add_argument("--pairs", type=int, default=21,
                    help="pairs of steps timed alternately in each "
                         "head-to-head comparison")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads")
    ap.add_argument("--solve-threads", type=int, default=None,
                    help="threads of rematbench's solves (default "
                         "--threads)")
    ap.add_argument("--solve-timeout", type=float, default=20)
    ap.add_argument("--calibrate", type=int, default=0,
                    help="plan again this many times below a budget whose "
                         "measured peak went over it (default 0: the plan's "
                         "predicted peak is taken as it is, and a row over "
                         "its budget is reported as such)")
    ap.add_argument("--compiled-max", type=int, default=6,
                    help="rematbench_compiled schedules compiled per model "
                         "(each takes 10-35 s on two cores), at the "
                         "torch.compile options' levels, highest first")
    ap.add_argument("--calibrate-compiled", type=int, default=2,
                    help="plan again this many times below a budget whose "
                         "compiled program's measured peak went over it "
                         "(Plan.compiled_within_budget's tries: the plan "
                         "predicts the eager program's peak, not what "
                         "inductor's graphs hold)")
    ap.add_argument("--no-compile", action="store_true",
                    help="leave out torch.compile and rematbench_compiled")
    args = ap.parse_args()
    if args.device != "cpu" and not torch.cuda.is_available():
        ap.error(f"--device {args.device}: torch sees no CUDA device")
    if args.sizes is None:
        args.sizes = "quick" if args.quick else \
            "cpu" if args.device == "cpu" else "gpu"
    args.solve_threads = args.solve_threads or args.threads
    args.deadline = Deadline(args.deadline_seconds)
    torch.set_num_threads(args.threads)
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    out = args.out or os.path.join(root, "results", "torch_options")
    os.makedirs(out, exist_ok=True)
    table = models(args.sizes)
    names = args.models.split(",")
    unknown = [n for n in names if n not in table]
    if unknown:
        ap.error(f"--models: unknown {', '.join(unknown)} (known: "
                 f"{', '.join(table)})")
    name = args.device if (args.device, args.dtype) == ("cpu", "float32") \
        else f"{args.device}-{args.dtype}"
    ctx = context(args, {n: table[n][1] for n in names})
    ctx["load_average_start"] = list(os.getloadavg())
    rows, summaries = [], []
    signal.signal(signal.SIGTERM, stop_on_sigterm)
    for n in names:
        summaries.append({"model": n})
        stopped = False
        try:
            if args.deadline.passed():
                summaries[-1]["error"] = SKIPPED
            else:
                run_model(n, table[n][0], args, rows, summaries[-1])
        except (Exception, Stopped) as e:  # what was measured still counts
            import traceback
            traceback.print_exc()
            summaries[-1]["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            stopped = isinstance(e, Stopped)
        doc = {"format": "rematbench-torch-options", "version": 1,
               "context": ctx, "models": summaries, "rows": rows}
        ctx["load_average_end"] = list(os.getloadavg())
        write(out, name, doc)
        if stopped:
            raise SystemExit(f"torch_options: {n}: stopped by SIGTERM "
                             "(the results so far are written)")
        if args.fail_fast and "error" in summaries[-1]:
            raise SystemExit(f"torch_options: {n}: {summaries[-1]['error']}")


def write(out, name, doc):
    path = os.path.join(out, f"{name}.json")
    files.write_json(path, doc, indent=1)
    from torch_options_report import report
    report(doc, os.path.join(out, f"{name}.md"),
           os.path.join(out, f"{name}.png"))
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
