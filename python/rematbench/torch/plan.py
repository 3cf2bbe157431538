"""plan() and the Plan it returns (rematbench.torch.step has remat(), the
one-line training step).

    import rematbench.torch as rt
    plan = rt.plan(model, (x, y), nn.CrossEntropyLoss(), budget=0.5)
    print(plan)                      # every algorithm: peak, overhead, time
    for x, y in batches:             # same shapes as the example batch
        opt.zero_grad()
        loss = plan.step(x, y)       # forward + backward under the schedule
        opt.step()                   # gradients are in each p.grad
    plan.replay()                    # measured peak and time vs NoRemat

plan() traces one training step (TracedStep: the joint forward+backward
graph of ATen ops, costs measured on the model's device), searches it
(rematbench.torch.search: every registered algorithm that suits the
graph's size, each schedule judged as the program it becomes) and keeps
the feasible schedule of least predicted overhead. plan.step runs that
schedule as an FX program (rematbench.torch.fx_program, eagerly or, after
plan.compile(), by inductor), which gives the gradients, loss and
batch-norm statistics of plain training (bit for bit on the CPU,
eagerly). plan.replay() runs it in the measuring interpreter
(rematbench.torch.interpreter) to count live storages.
"""

import collections.abc
import platform
import statistics
import time

import torch

import rematbench
from rematbench.torch import distributed, fx_program, rng
from rematbench.torch.checks import Unsupported, autocast_state
from rematbench.torch.interpreter import run_step
from rematbench.torch.memory import as_events
from rematbench.torch.search import Search, SearchOptions
from rematbench.torch.shape_family import Traces
from rematbench.torch.traced_step import LossStep, TracedStep, split_batch


PLAN_SECONDS = 3.0  # plan()'s default search time limit


def plan(model, example_inputs, loss_fn=None, budget=None,
         algorithms="all", timeout=10.0, exact_max_nodes=100,
         cost="measured", repeats=3, threads=None, plan_seconds=PLAN_SECONDS,
         first=(), reserve_bytes=0, traces=None):
    """Plans training `model` within an activation-memory budget.

    example_inputs: an example batch: a tuple of positional arguments or a
        dict of keyword arguments (tensors, nested in tuples, lists and
        dicts, and other values, which later batches must repeat). A step
        computes loss_fn(model(*inputs[:-1]), inputs[-1]) when given
        loss_fn and a tuple of two or more (inputs..., target); otherwise
        outputs = model(*args, **kwargs) and loss_fn(outputs, batch), or,
        without loss_fn, the loss the model returns (outputs.loss,
        outputs["loss"], outputs[0] or the output itself). Later steps
        must have the same shapes and dtypes. Parameters that do not
        require grad are frozen: no gradient is computed for them.
        A DistributedDataParallel model trains as plain DDP does (its
        gradients averaged over the ranks after each step).
    budget: the bound on the simulated activation peak (what training
        holds besides parameters, gradients and the batch: the graph's
        static_bytes). An int or a str such as '512MiB' is bytes; a float
        is a fraction of the NoRemat activation peak (0.5: half of what
        plain training holds).
    algorithms: "all" (every registered algorithm; exact ones only on
        graphs of at most `exact_max_nodes` nodes) or a list of names or
        'name:k=v,...' specs. Each solve gets `timeout` seconds; they run
        on `threads` threads (default: one per CPU).
    plan_seconds: the search's time limit (tracing comes before it): the
        fastest kinds of algorithm start first, each with the time left,
        and the best plan found when it runs out is the answer (the table
        says which were cut short or not started). Each solve first tries
        for a thirtieth of it; one that needs more runs again (the limit
        then a thirtieth later) unless a schedule within 0.1% of overhead
        1 fits.
    first: algorithm specs solved alone first (rt.remat gives a new
        shape those that won at its neighbours); `algorithms` run, with a
        time limit of their own, only where none of them fits.
    reserve_bytes: bytes the plan leaves free below the budget (rt.remat
        leaves room for its padded copies of a batch).
    traces: the traces of the batch's structure (shape_family.Traces,
        which rt.remat keeps): a new shape's step is derived from those of
        other shapes where they fit it, in a fraction of a trace, and a
        step traced is added to them.
    cost: "measured" (each op's median time over `repeats` runs of the
        step on the model's device, nanoseconds) or "flop".

    Tracing and timing run the step several times; the model's buffers and
    the RNG state are restored afterwards. Raises NoFit (a rematbench.Error)
    when no algorithm fits the budget, naming the smallest budget that
    fits.
    """
    if budget is None:
        raise rematbench.Error("plan: give a budget (bytes, '8GiB', or a "
                               "fraction of plain training's peak: 0.5)")
    options = SearchOptions(algorithms, timeout, exact_max_nodes, threads,
                            plan_seconds)
    if not isinstance(first, (list, tuple)) or \
            not all(isinstance(a, str) for a in first):
        raise rematbench.Error(f"plan: first must be a list of algorithm "
                               f"names, not {first!r}")
    if isinstance(reserve_bytes, bool) or not isinstance(
            reserve_bytes, int) or reserve_bytes < 0:
        raise rematbench.Error(f"plan: reserve_bytes must be an integer "
                               f">= 0, not {reserve_bytes!r}")
    if traces is not None and not isinstance(traces, Traces):
        raise rematbench.Error(f"plan: traces must be a "
                               f"shape_family.Traces, not {traces!r}")
    _check_trace_options(cost, repeats)
    inner, sync = distributed.unwrap(model)
    tensors, _ = _batch(example_inputs)
    traced = traces.derived(tensors) if traces is not None else None
    if traced is None:
        traced = trace_batch(model, example_inputs, loss_fn, cost, repeats)
        if traces is not None:
            traces.add(traced)
    search = Search(traced, options, {
        "generator": "rematbench.torch", "model": type(inner).__name__,
        "host": platform.node(), "threads": torch.get_num_threads()})
    return Plan(inner, search, search.at(budget, reserve_bytes, first), sync)


def trace_batch(model, example_inputs, loss_fn=None, cost="measured",
                repeats=3):
    """The TracedStep of one training step of `model` on `example_inputs`
    (as plan() takes them), not searched: plan()'s trace, and rt.remat's
    of a batch at its max_length."""
    _check_trace_options(cost, repeats)
    inner, _ = distributed.unwrap(model)
    tensors, layout = _batch(example_inputs)
    try:
        return TracedStep.trace(LossStep(inner, loss_fn, layout), tensors,
                                f"torch_{type(inner).__name__}", cost=cost,
                                repeats=repeats, layout=layout)
    except Unsupported as e:
        raise rematbench.Error(f"plan: {e}") from None


def _check_trace_options(cost, repeats):
    if cost not in ("measured", "flop"):
        raise rematbench.Error(f"plan: cost must be 'measured' or 'flop', "
                               f"not {cost!r}")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or \
            repeats < 1:
        raise rematbench.Error(f"plan: repeats must be an integer >= 1, "
                               f"not {repeats!r}")


def _batch(example_inputs):
    """(tensors, layout) of an example batch (traced_step.split_batch)."""
    if isinstance(example_inputs, collections.abc.Mapping):
        return split_batch((), example_inputs)
    if isinstance(example_inputs, (tuple, list)):
        return split_batch(tuple(example_inputs), {})
    # A tensor would be taken apart row by row.
    raise rematbench.Error(
        "plan: example_inputs: give a tuple of the step's positional "
        "arguments, such as (x, y), or a dict of keyword arguments, not "
        f"a {type(example_inputs).__name__}")


def _parameter_key(model):
    """Which tensors are the model's parameters, and which of them train:
    a plan's program holds for those it was traced with."""
    return tuple((id(p), p.requires_grad) for p in model.parameters())


class Plan:
    """The planned training step: `table` (every algorithm's row, best
    first), `algorithm`, `schedule`, the traced step `traced` and its
    `graph`; `solutions` (every algorithm's Solution), `partition` and
    `memory` (the program's memory model, ProgramMemory) and `anchorings`
    (each algorithm's shared generator states, lowering.lower's)."""

    def __init__(self, model, search, found, sync=None):
        self.model, self.search, self.sync = model, search, sync
        self.traced, self.graph = search.traced, search.graph
        self.partition, self.memory = search.partition, search.memory
        self.budget_bytes, self.table = found.budget_bytes, found.table
        self.solutions, self.anchorings = found.solutions, found.anchorings
        self.noremat_peak_bytes = search.noremat_peak_bytes
        self.trace_seconds = self.traced.trace_seconds
        self._built = {}  # (algorithm, recorded, reduce) -> BuiltProgram
        self._parameters = _parameter_key(model)
        self._grad_seed = None
        self.compiled = False
        self.use(found.table[0]["algorithm"])

    def _row(self):
        return next(r for r in self.table if r["algorithm"] == self.algorithm)

    @property
    def predicted_peak_bytes(self):
        """The activation peak the plan's program will have: the schedule's
        simulated peak and what the program holds beside it (generator
        states of recomputed random ops, the returned loss)."""
        return self._row()["peak_bytes"]

    @property
    def predicted_overhead(self):
        """The program's predicted step time against plain training's: the
        schedule's overhead and the draws its recomputations replay to
        reach a random op's generator state from an anchor's."""
        return self._row()["overhead"]

    @property
    def anchoring(self):
        """(anchors, saves, chains) of the plan's program (lowering.lower's):
        the random ops whose recomputations start from another's saved
        generator state, where each saves its own, and the recomputations
        that start from the state the one before left."""
        return self.anchorings.get(self.algorithm, ({}, {}, {}))

    @property
    def events(self):
        """The plan's schedule as (kind, node, position) events."""
        return as_events(self.schedule)

    def at(self, budget):
        """A plan for the same traced step at another budget (bytes, or a
        fraction of the NoRemat peak), solved again without tracing again.
        Raises NoFit as plan() does when nothing fits."""
        return Plan(self.model, self.search, self.search.at(budget),
                    self.sync)

    def use(self, algorithm):
        """Runs later steps with another feasible row of the table (a
        "dearer" one judged as a program first)."""
        self.search.judge_rows(self, [algorithm])
        s = self.solutions.get(algorithm)
        row = next((r for r in self.table if r["algorithm"] == algorithm),
                   None)
        if s is None or row is None or row["status"] != "feasible":
            raise rematbench.Error(f"plan: {algorithm} has no feasible "
                                   "schedule at this budget")
        self.algorithm, self.solution, self.schedule = algorithm, s, \
            s.schedule

    def judge(self):
        """Judges as programs the rows planning left "dearer" (simulated
        dearer than the plan's), so that each says if it fits: the table."""
        self.search.judge_rows(self)
        return self.table

    def _mismatch(self, tensors):
        """Why the plan does not hold for a batch of these tensors, or
        None: the model's parameters are not those it traced, or a value
        the step reads in Python (a mask check) is not the example
        batch's."""
        if _parameter_key(self.model) != self._parameters:
            return ("the model's parameters are not those the plan was "
                    "traced with (a module replaced, or requires_grad "
                    "changed): plan again (rt.remat does)")
        wrong = self.traced.guards.check(self.partition.flat(tensors))
        if not wrong:
            return None
        where, traced, now = wrong[0]
        return (f"{where} reads a value of the batch in Python that was "
                f"{traced!r} when the plan was traced and is {now!r} now: "
                "the plan holds for the traced value only; plan again for "
                "this batch (rt.remat does)")

    def holds_for(self, *args, **kwargs):
        """Whether the plan holds for this batch, laid out as the example
        batch was (_mismatch)."""
        return self._mismatch(split_batch(args, kwargs)[0]) is None

    def batch_tensors(self, args, kwargs, refuse=True):
        """The tensors of a batch given as step() takes it, checked against
        the plan's: the same structure and other values, autocast state,
        shapes, dtypes and devices (else rematbench.Error), and the model's
        parameters and the values the step read in Python the traced ones
        (else rematbench.Error, or None where not `refuse`)."""
        tensors, layout = split_batch(args, kwargs)
        if layout != self.traced.layout:
            raise rematbench.Error(
                "plan.step: the batch is not laid out as the example batch "
                "was (its arguments, nesting or non-tensor values differ): "
                "plan again for it")
        if autocast_state() != self.traced.autocast:
            raise rematbench.Error(
                "plan.step: autocast is not as it was when the plan was "
                "traced (the plan's program holds the casts it made): plan "
                "again under this autocast state")
        self._check(tensors)
        why = self._mismatch(tensors)
        if why is None or not refuse:
            return tensors if why is None else None
        raise rematbench.Error(f"plan.step: {why}")

    def _check(self, inputs):
        ref = self.traced.inputs
        if len(inputs) != len(ref):
            raise rematbench.Error(f"plan.step: {len(inputs)} inputs, the "
                                   f"plan was made for {len(ref)}")
        for i, (a, b) in enumerate(zip(inputs, ref)):
            if a.shape != b.shape or a.dtype != b.dtype or \
                    a.device != b.device:
                raise rematbench.Error(
                    f"plan.step: input {i} is {a.dtype} {tuple(a.shape)} on "
                    f"{a.device}; the plan was made for {b.dtype} "
                    f"{tuple(b.shape)} on {b.device} (plan again for other "
                    "shapes)")

    def program(self, algorithm=None, anchoring=None, reduce=False):
        """The schedule of `algorithm` (default: the plan's) compiled into
        a program (fx_program.BuiltProgram: an FX GraphModule of the
        schedule's ops in order), built once; with `anchoring`, built
        with that one instead of the plan's, and not kept; with `reduce`,
        reducing its gradients over the ranks as it finishes them
        (fx_program.build)."""
        algorithm = algorithm or self.algorithm
        events = as_events(self.solutions[algorithm].schedule)
        recorded = not self.partition.random_in_eager_order(events)
        if anchoring is not None:
            return fx_program.build(self.partition, events, recorded,
                                    anchoring)
        key = (algorithm, recorded, reduce)
        if key not in self._built:
            self._built[key] = fx_program.build(
                self.partition, events, recorded,
                self.anchorings.get(algorithm), reduce)
        return self._built[key]

    def free_programs(self):
        """Drops the programs built so far and inductor's graphs of them."""
        self._built.clear()

    def compile(self, compiled=True):
        """Later steps run the program compiled by inductor (compiled
        once, at the next step), or, with compiled=False, eagerly again.
        Compiled, gradients equal plain training's within float rounding
        (inductor's kernels sum in other orders), not bit for bit. The
        plan predicts the eager program's peak, not what inductor's graphs
        hold (its decompositions keep values of their own: 1.8x on a
        ResNet-50 on the CPU); compiled_within_budget() measures it."""
        self.compiled = compiled
        return self

    def compiled_within_budget(self, *args, tries=2, **kwargs):
        """A plan whose program compiled by inductor measures at or below
        this plan's budget: this one, or one solved again below the
        budget by the overshoot (at most `tries` times). Each try compiles
        the program and measures the allocator-level activation peak of a
        step on the batch (rematbench.torch.measure.measure_step: two
        steps, one compiling, one measured; the model's gradients, buffers
        and generator are put back). When no compiled program fits, this
        plan comes back eager (compile(False)), whose peak is the predicted
        one. The plan returned has `compiled_attempts`: (budget solved
        for, algorithm, measured compiled peak) of every try."""
        from rematbench.torch import measure
        budget, planned, p, attempts = self.budget_bytes, \
            self.budget_bytes, self, []
        for _ in range(tries + 1):
            p.compile(True)
            params = list(p.model.parameters())
            grads = [q.grad for q in params]
            try:
                peak = measure.measure_step(
                    lambda: p.step(*args, **kwargs), p.model,
                    timing=False)["measured_peak_bytes"]
            finally:
                for q, g in zip(params, grads):
                    q.grad = g
            attempts.append((planned, p.algorithm, peak))
            if peak <= budget:
                p.compiled_attempts = attempts
                return p
            p.compile(False)
            p.free_programs()
            planned -= peak - budget + 1
            try:
                p = self.at(planned)
            except rematbench.Error:
                break
        self.compile(False)
        self.compiled_attempts = attempts
        return self

    def set_anchoring(self, anchoring):
        """Runs the plan's program with `anchoring` (lowering.lower's
        (anchors, saves, chains)) from the next step on."""
        self.anchorings[self.algorithm] = anchoring
        self._built = {k: b for k, b in self._built.items()
                       if k[0] != self.algorithm}

    def program_inputs(self, inputs, built=None):
        """The arguments of the plan's program (or `built`) for one batch:
        parameters, buffers, the batch and the gradient seed, and the
        generator states recorded in an eager-order pass where the program
        takes them (a schedule that draws random ops out of eager
        order)."""
        built = built or self.program()
        flat = self.partition.flat(inputs)
        # The gradient seed (a 1): made once, not in every step.
        if self._grad_seed is None:
            self._grad_seed = flat[-1]
        flat[-1] = self._grad_seed
        if built.recorded:
            states = rng.record(self.partition)
            flat.append([states[i] for i in sorted(self.partition.random)])
        return flat

    def run_program(self, inputs, built=None, reducer=None):
        """(gradients, loss) of the plan's program (or `built`) on one
        batch, eagerly or compiled as the plan runs it; .grad untouched.
        `reducer`: the program's reducer input, for one built to reduce
        its gradients."""
        built = built or self.program()
        flat = self.program_inputs(inputs, built)
        if built.reduce:
            flat.append(reducer)
        out = built.compiled(flat)(*flat) if self.compiled else built(*flat)
        return out[1:], out[0]

    def step(self, *args, **kwargs):
        """Forward and backward of one batch (laid out as the example
        batch: batch_tensors) under the plan's schedule, run as a program
        (program(), eagerly or, after compile(), by inductor). Adds each
        trained parameter's gradient to its .grad (as loss.backward()
        does; under DistributedDataParallel, then averaged over the ranks
        as DDP does), updates batch-norm statistics once, and returns the
        loss (detached)."""
        return self._step(self.batch_tensors(args, kwargs))

    def step_if_holds(self, *args, **kwargs):
        """step() on a batch the plan holds for (holds_for), checked once;
        None, having run nothing, on one it does not."""
        inputs = self.batch_tensors(args, kwargs, refuse=False)
        return None if inputs is None else self._step(inputs)

    def _step(self, inputs):
        params, reducer = self.traced.grad_params, None
        if self.sync is not None:
            self.sync.before_step()
            if not self.compiled:
                reducer = self.sync.in_program(params)
        built = self.program(reduce=reducer is not None)
        grads, loss = self.run_program(inputs, built, reducer)
        with torch.no_grad():
            for p, g in zip(params, grads):
                if p.grad is None:
                    p.grad = g.detach()
                else:
                    p.grad += g
        if self.sync is not None:
            self.sync.after_step(params, reduced=reducer is not None)
        return loss.detach()

    def replay(self, repeats=3, warmup=1):
        """Runs the plan's schedule and the NoRemat schedule on the example
        batch in the measuring interpreter and measures them: the peak of
        live activation storage (`measured_peak_bytes`,
        `baseline_measured_peak_bytes`; on CUDA also `cuda_peak_bytes`,
        torch.cuda.max_memory_allocated above the step's start) and the
        median wall time of `repeats` back-to-back pairs after `warmup`
        (`step_seconds`, `baseline_seconds`, `ratio_to_baseline`), the
        measurement record's keys (rematbench.torch.measure), beside the
        predictions.
        Buffers and the RNG state are restored, parameters and gradients
        untouched."""
        traced, p = self.traced, self.partition
        device = traced.device
        saved = [b.detach().clone() for b in traced.buffers]
        generators = rng.snapshot(device)
        noremat = rematbench.solve(self.graph, "noremat")
        events, base_events = self.events, as_events(noremat.schedule)

        def restore():
            with torch.no_grad():
                for b, v in zip(traced.buffers, saved):
                    b.copy_(v)
            rng.restore(generators)

        def sync():
            if device.type == "cuda":
                torch.cuda.synchronize(device)

        cuda_peak = None
        if device.type == "cuda":
            sync()
            torch.cuda.reset_peak_memory_stats(device)
            start = torch.cuda.memory_allocated(device)
        peak, _, _ = run_step(p, events, traced.inputs, measure=True)
        if device.type == "cuda":
            sync()
            cuda_peak = torch.cuda.max_memory_allocated(device) - start
        restore()
        base_peak, _, _ = run_step(p, base_events, traced.inputs,
                                   measure=True)
        restore()

        def timed(events):
            sync()
            t0 = time.perf_counter()
            run_step(p, events, traced.inputs)
            sync()
            seconds = time.perf_counter() - t0
            restore()
            return seconds

        for _ in range(warmup):
            timed(base_events)
            timed(events)
        pairs = [(timed(events), timed(base_events))
                 for _ in range(repeats)]
        return {
            "algorithm": self.algorithm,
            "budget_bytes": self.budget_bytes,
            "simulated_peak_bytes": self.solution.peak_bytes,
            "measured_peak_bytes": peak,
            "baseline_simulated_peak_bytes": noremat.peak_bytes,
            "baseline_measured_peak_bytes": base_peak,
            "cuda_peak_bytes": cuda_peak,
            "predicted_overhead": self.solution.overhead,
            "ratio_to_baseline": statistics.median(a / b for a, b in pairs),
            "step_seconds": statistics.median(a for a, _ in pairs),
            "baseline_seconds": statistics.median(b for _, b in pairs),
        }

    def format_table(self):
        peak = self.noremat_peak_bytes
        lines = [f"{self.graph.name}: {self.graph.num_nodes} nodes, budget "
                 f"{self.budget_bytes} bytes ({self.budget_bytes / peak:.0%} "
                 f"of the NoRemat peak {peak}); using {self.algorithm}",
                 f"{'algorithm':<16} {'status':<11} {'peak bytes':>12} "
                 f"{'overhead':>9} {'solve s':>8}"]
        for r in self.table:
            peak = "-" if r["peak_bytes"] is None else str(r["peak_bytes"])
            over = "-" if r["overhead"] is None else f"{r['overhead']:.3f}"
            secs = "-" if r["solve_seconds"] is None else \
                f"{r['solve_seconds']:.3f}"
            lines.append(f"{r['algorithm']:<16} {r['status']:<11} "
                         f"{peak:>12} {over:>9} {secs:>8}")
        for what, prefix in (("cut short by plan_seconds", "cut short"),
                             ("not started (plan_seconds)", "not started")):
            names = [r["algorithm"] for r in self.table
                     if (r["message"] or "").startswith(prefix)]
            if names:
                lines.append(f"{what}: {', '.join(names)}")
        if self.traced.derived_from is not None:
            lines.append("the step derived from its traces at lengths " +
                         ", ".join(map(str, self.traced.derived_from)) +
                         " (shape_family), not traced")
        if self.traced.reused:
            lines.append("the step traced before on another batch of its "
                         "shapes (rt.remat's max_length), not traced again")
        return "\n".join(lines)

    def __str__(self):
        return self.format_table()

    def __repr__(self):
        return (f"<rematbench.torch.Plan {self.algorithm}: peak "
                f"{self.solution.peak_bytes} <= {self.budget_bytes} bytes, "
                f"overhead {self.predicted_overhead:.3f}>")
