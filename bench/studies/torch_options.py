#!/usr/bin/env python3
"""PyTorch's own ways of saving activation memory beside rematbench's plans,
measured with one instrument (rematbench.torch.measure) in one run.

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

Every row is measured by rematbench.torch.measure.measure_step: the
allocator-level activation peak of one step (profiler memory events,
gradients left out), the median step time after warm-up, and the
gradients against the plain eager step's from the same RNG state and
buffers. Writes <out>/<device>.json (results/SCHEMA.md, "Torch options"),
<device>.md (the table and the comparison the issue asks for) and
<device>.png (activation peak against step time, one curve per method).
"""

import argparse
import contextlib
import functools
import math
import os
import signal
import sys
import time

import torch

import rematbench
import rematbench.torch as rt
from rematbench import files, script, zoo
from rematbench.torch import measure, sac_milp
from rematbench.torch import options as opt
from rematbench.torch.options import HEURISTICS, machine, models


def row_of(model_name, method, setting, r, **extra):
    row = {"model": model_name, "method": method, "setting": setting,
           "budget_bytes": None,
           "measured_peak_bytes": r.get("measured_peak_bytes"),
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


def error_row(name, method, setting, error, **extra):
    """A row with no figures: what failed, nothing fit, or SKIPPED."""
    return dict({"model": name, "method": method, "setting": setting,
                 "budget_bytes": None, "measured_peak_bytes": None,
                 "step_seconds": None, "gradients_equal": None,
                 "error": error}, **extra)


def skipped_row(name, method, setting, **extra):
    return error_row(name, method, setting, SKIPPED, **extra)


def failure(e):
    """An exception as a row's error."""
    return f"{type(e).__name__}: {str(e)[:300]}"


class Case:
    """A model as the bench runs it: `build()` makes (model, batch, blocks,
    sequential): the batch a rematbench.zoo.Batch, the blocks the
    per-block options wrap, the model as an nn.Sequential of them for
    checkpoint_sequential (None where there is none). `build` runs again
    for sac_milp's statistics (a fresh copy, which they fake)."""

    def __init__(self, build, description):
        self.build, self.description = build, description


def studies_case(build, description):
    """A model of rematbench.torch.options.models as a Case."""
    def case_build():
        model, (x, y), loss_fn, blocks, seq = build()
        return model, zoo.Batch(args=(x, y), loss_fn=loss_fn), blocks, seq
    return Case(case_build, description)


def zoo_case(name, size):
    """Model `name` of rematbench.zoo at `size` as a Case (its blocks
    found by options.repeated_blocks)."""
    def case_build():
        model, batch = zoo.build(name, size=size)
        # Training keeps no key-value cache (transformers turns it off
        # itself under gradient checkpointing); a checkpointed block's
        # recomputation would append to it a second time.
        if getattr(getattr(model, "config", None), "use_cache", False):
            model.config.use_cache = False
        # Unpadded: sac_milp's statistics run under FakeTensorMode, which
        # cannot read a mask (transformers asks whether it is all ones),
        # and each method is measured on the batch it was planned for.
        batch.kwargs.pop("attention_mask", None)
        return model, batch, opt.repeated_blocks(model), None
    s = zoo.SIZES[size]
    return Case(case_build, f"rematbench.zoo {name}, size {size} (batch "
                f"{s.batch}; transformers: {s.layers} layers, width "
                f"{s.width}, sequence {s.seq}, vocabulary {s.vocab}; "
                f"images {s.image}x{s.image})")


def placed_batch(model, batch, device, dtype):
    """The model and the batch's tensors on `device`, floating point in
    `dtype`."""
    model.to(device=device, dtype=dtype)

    def put(t):
        if not isinstance(t, torch.Tensor):
            return t
        return t.to(device=device, dtype=dtype) if t.is_floating_point() \
            else t.to(device)
    return zoo.Batch(args=tuple(put(t) for t in batch.args),
                     kwargs={k: put(v) for k, v in batch.kwargs.items()},
                     loss_fn=batch.loss_fn)


def sac_milp_parts(case, device, dtype):
    """sac_milp's statistics' build: (model, args, kwargs, loss_of) of the
    case, placed as the measured model is. A loss module is called
    through its forward: PyTorch's module tracker would take it for one of
    the model's modules, which its memory tracker does not know."""
    def build():
        model, batch, _, _ = case.build()
        batch = placed_batch(model, batch, device, dtype)
        if batch.loss_fn is not None:
            return model, batch.args[:-1], batch.kwargs, \
                lambda out: batch.loss_fn.forward(out, batch.args[-1])
        return model, batch.args, batch.kwargs, \
            lambda out: out.loss if hasattr(out, "loss") else out
    return build


def run_model(name, case, args, rows, summary):
    """Measures model `name`'s methods into `rows`, and what holds for the
    whole model into `summary` (filled as the run goes, so that a run that
    raises keeps what it measured)."""
    torch.manual_seed(0)
    model, batch, blocks, seq = case.build()
    device = torch.device(args.device)
    batch = placed_batch(model, batch, device, getattr(torch, args.dtype))
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
        batch.plain_step(model)

    own_forwards = {m for m in model.modules() if "forward" in m.__dict__}

    def plain():
        """The eager step with no module patched by a checkpointing
        method and transformers' gradient checkpointing off."""
        saved = {m: m.__dict__.pop("forward") for m in model.modules()
                 if "forward" in m.__dict__ and m not in own_forwards}
        hf = [m for m in model.modules()
              if getattr(m, "gradient_checkpointing", False) is True]
        for m in hf:
            m.gradient_checkpointing = False
        try:
            eager()
        finally:
            for m, f in saved.items():
                m.forward = f
            for m in hf:
                m.gradient_checkpointing = True

    t0 = time.perf_counter()
    base = meas(eager)
    ref = base["grads"]
    rows.append(row_of(name, "eager", "-", base, gradients_equal=True,
                       max_grad_diff=0.0))
    # Plain training again from the same state: on CUDA, kernels that
    # accumulate with atomics differ from run to run, and this difference
    # is the floor of every method's.
    rerun = meas(eager, reference=ref, timing=False, peak=False)
    log(f"{name}: {n_params} parameters; eager peak "
        f"{base['measured_peak_bytes']} bytes, step "
        f"{base['step_seconds']:.3f} s")
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
            rows.append(error_row(name, method, setting, failure(e)))
            return None
        rows.append(row_of(name, method, setting, r, **extra))
        log(f"  {method} {setting}: peak {r['measured_peak_bytes']} "
            f"({r['measured_peak_bytes'] / base['measured_peak_bytes']:.2f}"
            " of eager), step "
            f"{r['step_seconds']:.3f} s ({r['step_seconds'] / base['step_seconds']:.2f}x), "
            f"grads equal {r.get('gradients_equal')} "
            f"(max diff {r.get('max_grad_diff', 0):.1e})")
        options[(method, setting)] = (r["measured_peak_bytes"], running)
        return r

    @contextlib.contextmanager
    def per_block(wrap, which=blocks):
        with opt.patched_blocks(which, wrap):
            yield eager

    if blocks:
        add("checkpoint_block", f"{len(blocks)} blocks",
            lambda: per_block(opt.checkpointed))
    else:
        rows.append(error_row(name, "checkpoint_block", "-",
                              "no repeated blocks"))
    # torchtitan's "selective, every N-th layer": blocks 0, N, 2N, ...
    # checkpointed, the others kept.
    for n in args.every:
        if len(blocks) >= n:
            add("checkpoint_every_n", f"every {n}th of {len(blocks)} blocks",
                lambda n=n: per_block(opt.checkpointed, blocks[::n]))
    if getattr(model, "supports_gradient_checkpointing", False):
        add("hf_gradient_checkpointing", "non-reentrant",
            lambda: hf_checkpointing(model, eager))
    if seq is not None:
        segs, seq_step = opt.sequential_step(seq, batch.loss_fn,
                                             *batch.args)
        add("checkpoint_sequential", f"{segs} segments of {len(seq)}",
            lambda: contextlib.nullcontext(seq_step))
    else:
        rows.append(error_row(name, "checkpoint_sequential", "-",
                              "not a sequence of modules (skip "
                              "connections across blocks)"))
    if blocks:
        add("sac", "save mm/addmm/bmm/convolution outputs, per block",
            lambda: per_block(opt.selective))
    # Compiled by its first step; recompiling for the head-to-head timing
    # reuses inductor's cache of compiled graphs.
    for b in args.compile_budgets if not args.no_compile else []:
        add("compile", f"activation_memory_budget={b}",
            functools.partial(opt.compiled, model, batch, b))
    for solver in args.compile_solvers if not args.no_compile else []:
        for b in args.solver_budgets:
            add(f"compile_{solver}", f"activation_memory_budget={b}",
                functools.partial(opt.compiled, model, batch, b, solver))

    summary.update({"parameters": n_params,
                    "eager_peak_bytes": base["measured_peak_bytes"],
                    "eager_step_seconds": base["step_seconds"],
                    "eager_rerun_gradients_equal": rerun["gradients_equal"],
                    "eager_rerun_max_grad_diff": rerun["max_grad_diff"]})
    if deadline.passed():
        rows.append(skipped_row(name, "rematbench_eager", "-"))
        summary["seconds"] = round(time.perf_counter() - t0, 1)
        return
    # rematbench: one trace, then a plan per budget.
    t = time.perf_counter()
    plan = rt.plan(model, batch.example, batch.loss_fn, budget=1.0,
                   algorithms=HEURISTICS, timeout=args.solve_timeout,
                   repeats=2, threads=args.solve_threads)
    trace_seconds = time.perf_counter() - t
    g = plan.graph
    summary.update({
        "graph_nodes": g.num_nodes,
        "noremat_simulated_peak_bytes": g.noremat_peak_bytes,
        "lower_bound_bytes": g.lower_bound_bytes,
        "gradients_once_lower_bound_bytes":
            opt.gradients_once_lower_bound(plan.traced.nodes),
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
                p.step(*batch.args, **batch.kwargs)
            yield lambda: p.step(*batch.args, **batch.kwargs)
        finally:
            p.compile(False)
            p.free_programs()  # and the compiled graphs

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
            rc = meas(lambda: p.step(*batch.args, **batch.kwargs),
                      reference=ref)
            ok, kept = p.program().recomputations_kept()
            rc["recomputations_kept"] = ok
            rc["op_counts"] = {k: list(v) for k, v in kept.items()}
        except Exception as e:
            rc = {"error": failure(e)}
        p.compile(False)
        p.free_programs()  # and the compiled segments
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
        smallest = None
        for _ in range(args.calibrate + 1):
            try:
                p = plan.at(planned)
            except rt.NoFit as e:  # nothing fits: the smallest that does
                p, err, smallest = None, str(e)[:300], e.smallest_budget_bytes
                break
            except rematbench.Error as e:
                p, err = None, str(e)[:300]
                break
            sched = tuple(tuple(e) for e in p.schedule)
            if sched not in eager_cache:
                p.compile(False)
                eager_cache[sched] = meas(
                    lambda p=p: p.step(*batch.args, **batch.kwargs),
                                          reference=ref)
            re = eager_cache[sched]
            attempts.append({"planned_bytes": planned,
                             "algorithm": p.algorithm,
                             "simulated_peak_bytes": p.solution.peak_bytes,
                             "predicted_peak_bytes": p.predicted_peak_bytes,
                             "measured_peak_bytes": re["measured_peak_bytes"]})
            if re["measured_peak_bytes"] <= budget or \
                    len(attempts) > args.calibrate:
                break
            # Over (only with --calibrate): plan again below by the
            # overshoot.
            planned = planned - (re["measured_peak_bytes"] - budget) - 1
        if p is None and not attempts and why.startswith("ladder") and \
                "(" not in why and smallest is not None:
            # The ladder's last step: the smallest budget that fits.
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
            rows.append(error_row(name, "rematbench_eager", why, err,
                                  budget_bytes=budget))
            log(f"  rematbench at {budget} ({why}): nothing fits")
            continue
        if p is None:  # the calibrated budget fits nothing: keep the last
            p = plan.at(attempts[-1]["planned_bytes"])
        extra = plan_fields(p, budget, planned, attempts)
        rows.append(row_of(name, "rematbench_eager", why, re, **extra))
        candidates.append((rows[-1], functools.partial(
            plan_running, p, False)))
        peak = re["measured_peak_bytes"]
        log(f"  rematbench_eager at {budget} ({why}): {p.algorithm} planned "
            f"{planned}, simulated {p.solution.peak_bytes}, measured {peak} "
            f"({'within' if peak <= budget else 'OVER'}; "
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
        if cached is None or cached[1].get("measured_peak_bytes", 0) > budget:
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
                    *batch.args, tries=args.calibrate_compiled,
                    **batch.kwargs)
                csecs = round(time.perf_counter() - t, 1)
                rc = measure_compiled(cp) if cp.compiled else {
                    "error": "no compiled program within the budget"}
                rc["compile_seconds"] = csecs
            except Exception as e:
                cp, rc = p, {"error": failure(e)}
            cached = compiled_cache[sched] = (cp, rc)
        p, rc = cached
        attempts = [{"planned_bytes": b, "algorithm": a,
                     "measured_peak_bytes": peak}
                    for b, a, peak in getattr(p, "compiled_attempts", [])]
        extra = plan_fields(p, budget, p.budget_bytes, attempts)
        if "error" in rc:
            rows.append(error_row(name, "rematbench_compiled", why,
                                  rc["error"], **extra))
            log(f"  rematbench_compiled: {rc['error']}")
        else:
            rows.append(row_of(name, "rematbench_compiled", why, rc,
                               compile_seconds=rc["compile_seconds"],
                               recomputations_kept=rc["recomputations_kept"],
                               op_counts=rc["op_counts"], **extra))
            candidates.append((rows[-1], functools.partial(
                plan_running, p, True)))
            peak = rc["measured_peak_bytes"]
            log(f"  rematbench_compiled at {budget} ({why}): {p.algorithm} "
                f"planned {p.budget_bytes}, measured {peak} "
                f"({'within' if peak <= budget else 'OVER'}; "
                f"{len(attempts)} attempts), step "
                f"{rc['step_seconds']:.3f} s, max grad diff "
                f"{rc['max_grad_diff']:.1e}, recomputations kept "
                f"{rc['recomputations_kept']}, compile "
                f"{rc['compile_seconds']} s")
    if args.sac_milp:
        sac_milp_rows(name, case, model, eager, ref, meas, targets, args,
                      rows, options, summary)
    summary["head_to_head"] = compare(options, candidates, meas, args,
                                      deadline)
    # Plain training is no memory option but is the step a NoRemat plan
    # must match (the goal: within 3%), timed the same way.
    summary["against_eager"] = compare(
        {("eager", "-"): (base["measured_peak_bytes"],
                          lambda: contextlib.nullcontext(eager))},
        candidates, meas, args, deadline)
    summary["seconds"] = round(time.perf_counter() - t0, 1)


@contextlib.contextmanager
def hf_checkpointing(model, eager):
    """transformers' gradient checkpointing (non-reentrant) on inside."""
    model.gradient_checkpointing_enable(
        gradient_checkpointing_kwargs={"use_reentrant": False})
    try:
        yield eager
    finally:
        model.gradient_checkpointing_disable()


def sac_milp_rows(name, case, model, eager, ref, meas, targets, args,
                  rows, options, summary):
    """PyTorch's sac_milp at each ladder budget rematbench was planned at
    (its statistics taken once): each distinct plan measured and added to
    `options` for the head-to-head timing."""
    ladder = [(b, why) for b, why in targets if why.startswith("ladder")]
    try:
        device = torch.device(args.device)
        planner = sac_milp.Planner(
            model, sac_milp_parts(case, device, getattr(torch, args.dtype)),
            device)
    except Exception as e:  # PyTorch's tool failing is a result too
        rows.append(error_row(name, "sac_milp", "-", failure(e)))
        log(f"  sac_milp: {rows[-1]['error']}")
        return
    summary["sac_milp_statistics_seconds"] = \
        round(planner.statistics_seconds, 2)
    summary["sac_milp_baseline_peak_bytes"] = planner.baseline_peak_bytes
    measured = {}  # decisions -> result
    for budget, why in ladder:
        try:
            decisions, bound, secs = planner.solve(budget)
        except Exception as e:  # PuLP refusing PyTorch's own model
            rows.append(error_row(name, "sac_milp", why, failure(e),
                                  budget_bytes=budget))
            log(f"  sac_milp at {budget} ({why}): {rows[-1]['error']}")
            continue
        extra = {"budget_bytes": budget, "sac_milp_bound_bytes": bound,
                 "decisions": decisions, "plan_seconds": round(
                     planner.statistics_seconds + secs, 2)}
        if bound < 0:
            rows.append(error_row(name, "sac_milp", why,
                                  "sac_milp: no plan within the budget",
                                  **extra))
            log(f"  sac_milp at {budget} ({why}): no plan")
            continue
        key = tuple(sorted(decisions.items()))
        if key not in measured:
            running = functools.partial(_sac_milp_running, planner,
                                        decisions, eager)
            try:
                with running() as step:
                    measured[key] = (meas(step, reference=ref), running)
            except Exception as e:
                measured[key] = ({"error": failure(e)}, None)
        r, running = measured[key]
        if "error" in r:
            rows.append(error_row(name, "sac_milp", why, r["error"],
                                  **extra))
            log(f"  sac_milp at {budget} ({why}): {r['error']}")
            continue
        rows.append(row_of(name, "sac_milp", why, r, **extra))
        peak = r["measured_peak_bytes"]
        log(f"  sac_milp at {budget} ({why}): {len(decisions)} modules, "
            f"measured {peak} ({'within' if peak <= budget else 'OVER'}), "
            f"grads equal {r['gradients_equal']}")
        if all(v[1] is not running for v in options.values()):
            options[("sac_milp", why)] = (peak, running)


@contextlib.contextmanager
def _sac_milp_running(planner, decisions, eager):
    with planner.applied(decisions):
        yield eager


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
                t["error"] = failure(e)
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
    here = os.path.dirname(os.path.abspath(__file__))
    return dict(machine(args.device, args.dtype, descriptions, source=here),
                repeats=args.repeats, warmup=args.warmup, pairs=args.pairs,
                sizes=args.sizes, compile_budgets=args.compile_budgets,
                compile_solvers=args.compile_solvers,
                solver_budgets=args.solver_budgets, every=args.every,
                deadline_seconds=args.deadline_seconds)


def float_list(v):
    """Comma-separated activation_memory_budget settings, each in [0, 1]."""
    out = [script.nonnegative(b) for b in v.split(",")]
    if not all(b <= 1 for b in out):
        raise argparse.ArgumentTypeError(f"{v!r}: budgets are in [0, 1]")
    return out


def int_list(v):
    """Comma-separated N of checkpoint_every_n, each at least 2."""
    out = [script.positive_count(n) for n in v.split(",") if n]
    if not all(n >= 2 for n in out):
        raise argparse.ArgumentTypeError(f"{v!r}: N is at least 2")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--dtype", default="float32",
                    choices=["float32", "bfloat16"],
                    help="the parameters' and the batch's floating point "
                         "type (pure bf16 training, not autocast)")
    ap.add_argument("--models", default="resnet50,vit_b_16,gpt2,unet",
                    help="the studies' models (rematbench.torch.options."
                         "models; '' for none)")
    ap.add_argument("--zoo", default="",
                    help="models of rematbench.zoo by name, comma-separated "
                         f"(known: {', '.join(zoo.ZOO)})")
    ap.add_argument("--every", default="2", type=int_list,
                    help="N of the 'checkpoint every N-th block' rows")
    ap.add_argument("--compile-solvers",
                    default="greedy,ilp,dp_knapsack_sliding_hirschberg",
                    type=lambda v: [x for x in v.split(",") if x],
                    help="torch.compile's knapsack solvers measured besides "
                         "its default (dp), as compile_<solver> rows")
    ap.add_argument("--solver-budgets", default="0.5,0.2",
                    type=float_list,
                    help="the activation_memory_budget settings of the "
                         "compile_<solver> rows")
    ap.add_argument("--no-sac-milp", dest="sac_milp", action="store_false",
                    help="leave out PyTorch's sac_milp rows")
    ap.add_argument("--sizes", choices=["quick", "cpu", "gpu"], default=None,
                    help="model sizes: quick (the test's), cpu (minutes on "
                         "two cores) or gpu (batch 64 at 224x224, GPT-2 "
                         "small at sequence 1024); default: gpu on a GPU, "
                         "else cpu. Zoo models (--zoo) are built at the "
                         "zoo's sizes test, bench and gpu respectively")
    ap.add_argument("--quick", action="store_true",
                    help="the same as --sizes quick")
    ap.add_argument("--out", default=None,
                    help="directory (default results/torch_options); the "
                         "files are named <device>[-<dtype>].{json,md,png} "
                         "(cpu.json for float32 on the CPU)")
    ap.add_argument("--compile-budgets", default="1.0,0.5,0.2,0.05",
                    type=float_list,
                    help="torch.compile's activation_memory_budget settings")
    ap.add_argument("--deadline", dest="deadline_seconds",
                    type=script.nonnegative,
                    default=None,
                    help="seconds after which no new measurement starts "
                         "(what is left is recorded as skipped); the "
                         "results are written after every model")
    ap.add_argument("--fail-fast", action="store_true",
                    help="stop at the first model whose run raises (the "
                         "results so far are written)")
    ap.add_argument("--repeats", type=script.positive_count, default=5)
    ap.add_argument("--warmup", type=script.count, default=2)
    ap.add_argument("--ladder", type=script.positive_count, default=5)
    ap.add_argument("--pairs", type=script.positive_count, default=21,
                    help="pairs of steps timed alternately in each "
                         "head-to-head comparison")
    ap.add_argument("--threads", type=script.positive_count, default=1,
                    help="torch threads")
    ap.add_argument("--solve-threads", type=script.positive_count,
                    default=None,
                    help="threads of rematbench's solves (default "
                         "--threads)")
    ap.add_argument("--solve-timeout", type=script.positive, default=20)
    ap.add_argument("--calibrate", type=script.count, default=0,
                    help="plan again this many times below a budget whose "
                         "measured peak went over it (default 0: the plan's "
                         "predicted peak is taken as it is, and a row over "
                         "its budget is reported as such)")
    ap.add_argument("--compiled-max", type=script.count, default=6,
                    help="rematbench_compiled schedules compiled per model "
                         "(each takes 10-35 s on two cores), at the "
                         "torch.compile options' levels, highest first")
    ap.add_argument("--calibrate-compiled", type=script.count, default=2,
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
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in table]
    if unknown:
        ap.error(f"--models: unknown {', '.join(unknown)} (known: "
                 f"{', '.join(table)})")
    zoo_names = [n for n in args.zoo.split(",") if n]
    unknown = [n for n in zoo_names if n not in zoo.ZOO]
    if unknown:
        ap.error(f"--zoo: unknown {', '.join(unknown)} (known: "
                 f"{', '.join(zoo.ZOO)})")
    both = set(names) & set(zoo_names)
    if both:
        ap.error(f"{', '.join(both)} named by --models and --zoo: run them "
                 "apart (a row names its model)")
    cases = {n: studies_case(*table[n]) for n in names}
    zoo_size = {"quick": "test", "cpu": "bench", "gpu": "gpu"}[args.sizes]
    cases.update((n, zoo_case(n, zoo_size)) for n in zoo_names)
    names = list(cases)
    if not names:
        ap.error("no model: name some with --models or --zoo")
    name = args.device if (args.device, args.dtype) == ("cpu", "float32") \
        else f"{args.device}-{args.dtype}"
    ctx = context(args, {n: c.description for n, c in cases.items()})
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
                run_model(n, cases[n], args, rows, summaries[-1])
        except (Exception, Stopped) as e:  # what was measured still counts
            import traceback
            traceback.print_exc()
            summaries[-1]["error"] = failure(e)
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
    script.run(main)
