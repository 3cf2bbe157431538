"""remat(), the one-line training step: the plans a training loop needs,
made as its batches come (rematbench.torch.plan makes each).

    train_step = rt.remat(model, budget=0.5)
    loss = train_step(**batch)       # was: model(**batch).loss.backward()
"""

import time
import warnings

import rematbench
from rematbench import files
from rematbench.torch import buckets as bucketing
from rematbench.torch import rng
from rematbench.torch.checks import autocast_state
from rematbench.torch.plan import PLAN_SECONDS, plan, trace_batch
from rematbench.torch.shape_family import Traces
from rematbench.torch.traced_step import split_batch


class RematStep:
    """One training step within an activation-memory budget, as one call:

        train_step = rt.remat(model, nn.CrossEntropyLoss(), budget=0.5)
        for x, y in batches:
            opt.zero_grad()
            loss = train_step(x, y)   # was: loss = loss_fn(model(x), y)
            opt.step()                #      loss.backward()

        train_step = rt.remat(model, budget=0.5)   # the model's own loss
        loss = train_step(**batch)    # was: model(**batch).loss.backward()

    A batch with a new layout (structure, shapes, dtypes), or whose values
    read in Python differ from every plan's (a padded batch after an
    unpadded one), is planned (plan(), with the batch as the example; a
    new shape of a structure planned before, such as another sequence
    length, by the algorithms that won there alone, falling back to every
    algorithm where they fit nothing; once three lengths of a structure
    are traced, a new one's step is derived from their traces rather
    than traced: shape_family; one whose first run fails is traced
    instead, with a warning, or, under DistributedDataParallel, is an
    error);
    later calls run the plan that holds for them: gradients are added to
    .grad, batch-norm statistics updated once, dropout's masks those of
    plain training; the loss comes back detached. compile=True runs the
    program compiled by inductor, planned so that its measured peak is
    within the budget (Plan.compiled_within_budget; else the plan runs
    eagerly). With `buckets` (lengths), a keyword batch's token tensors
    are padded up to the least bucket at or above their length
    (rematbench.torch.buckets), so that varied lengths share a plan per
    bucket. With `pad_to_planned`, a keyword batch of a new length runs
    padded up to the least longer length planned (no plan made; see
    _step_padded) until padding has cost it as much time as a plan; each
    plan then leaves room for the padded copies. With `max_length`, a
    structure's first batch is also traced tiled up to that length
    (buckets.tiled), so that lengths up to it derive once the structure
    has its three (four) traces: none is traced for being longer than
    any before. A new shape
    of a structure planned before is searched within `shape_plan_seconds`
    rather than plan_seconds (the structure's first search found which
    algorithms win; the search is anytime). `plans` maps each batch
    layout to its plans."""

    def __init__(self, model, loss_fn, budget, compile=False, buckets=None,
                 pad_to_planned=False, shape_plan_seconds=0.5,
                 max_length=None, **plan_args):
        if budget is None:
            raise rematbench.Error(
                "remat: give a budget (bytes, '8GiB', or a fraction of "
                "plain training's peak: 0.5)")
        for own in ("first", "reserve_bytes", "traces"):
            if own in plan_args:
                raise rematbench.Error(
                    f"remat: {own} is remat's own (a new shape's winners "
                    "first, room for padded copies, the traces a new "
                    "shape is derived from); pass it to plan()")
        if isinstance(shape_plan_seconds, bool) or not isinstance(
                shape_plan_seconds, (int, float)) or \
                not shape_plan_seconds > 0:
            raise rematbench.Error(
                f"remat: shape_plan_seconds must be a number of seconds "
                f"> 0, not {shape_plan_seconds!r}")
        self.shape_plan_seconds = shape_plan_seconds
        if max_length is not None and (
                isinstance(max_length, bool) or
                not isinstance(max_length, int) or max_length < 1):
            raise rematbench.Error(
                f"remat: max_length must be a positive integer (the "
                f"longest sequence length batches will have), not "
                f"{max_length!r}")
        self.max_length = max_length
        self.model, self.loss_fn, self.budget = model, loss_fn, budget
        self.compile, self.plan_args = compile, plan_args
        self.buckets = None if buckets is None else \
            bucketing.lengths_of(buckets)
        self.pad_to_planned = bool(pad_to_planned)
        self.pad_id = bucketing.pad_id_of(model)
        self.plans = {}
        # Each structure's traces, from which a new shape's step is
        # derived (shape_family).
        self.traces = {}
        # pad_to_planned's books: each layout's token length, each
        # structure's latest planning time, each unplanned layout's time
        # lost to padding.
        self.planned_length, self.last_plan_seconds, self.padding_waste = \
            {}, {}, {}
        # The token length the latest step ran at, padded or not (None: a
        # batch without token tensors).
        self.ran_length = None

    @staticmethod
    def layout_key(args, kwargs):
        """The key of `plans` a batch's plans are under: its layout
        (nesting, other values), the autocast state, and each tensor's
        shape, dtype and device."""
        tensors, (spec, rest) = split_batch(args, kwargs)
        return (repr(spec), repr(rest), autocast_state(),
                tuple((tuple(t.shape), t.dtype, str(t.device))
                      for t in tensors))

    @staticmethod
    def structure_of(key):
        """A layout key without the tensors' sizes: batches of one
        structure differ only in their shapes (a sequence length)."""
        *rest, tensors = key
        return (*rest, tuple((len(shape), dtype, device)
                             for shape, dtype, device in tensors))

    def __call__(self, *args, **kwargs):
        given = kwargs
        if (self.buckets is not None or self.pad_to_planned) and args:
            raise rematbench.Error(
                "remat: buckets and pad_to_planned pad keyword batches "
                "(input_ids, attention_mask, labels); pass the batch as "
                "train_step(**batch) or pad it yourself")
        if self.buckets is not None or self.pad_to_planned:
            kwargs = bucketing.pad(kwargs, self.buckets or [], self.pad_id)
        self.ran_length = bucketing.length_of(kwargs)
        key = self.layout_key(args, kwargs)
        for p in self.plans.setdefault(key, []):
            loss = p.step_if_holds(*args, **kwargs)
            if loss is not None:
                return loss
        if kwargs and args:
            raise rematbench.Error(
                "remat: give the batch as positional or as keyword "
                "arguments, not both")
        if self.pad_to_planned:
            loss = self._step_padded(key, kwargs)
            if loss is not None:
                return loss
        return self._plan_and_step(key, args, kwargs, given)

    def _plan_and_step(self, key, args, kwargs, given):
        """Plans the batch (`kwargs`: `given` as padded) under `key` and
        runs its step. A new shape of a structure planned before (another
        sequence length) is solved by the algorithms that won there alone,
        which answer in a fraction of a full search, and by every
        algorithm only where they fit nothing."""
        started = time.perf_counter()
        structure = self.structure_of(key)
        winners = [p.algorithm for k, ps in self.plans.items()
                   if self.structure_of(k) == structure for p in ps]
        # The padded copies live through the step: planned below the
        # budget by them (they took 6 KB over it on the bench Llama).
        reserve = bucketing.room_to_pad(kwargs) if self.pad_to_planned \
            else bucketing.new_bytes(given, kwargs)
        plan_args = dict(self.plan_args)
        if winners:
            plan_args["plan_seconds"] = min(
                plan_args.get("plan_seconds", PLAN_SECONDS),
                self.shape_plan_seconds)
        traces = self.traces.setdefault(structure, Traces())
        if self.max_length is not None and not traces.families:
            self._trace_at_max_length(traces, args, kwargs)
        p = plan(self.model, kwargs if kwargs else args, self.loss_fn,
                 self.budget, first=list(dict.fromkeys(reversed(winners))),
                 reserve_bytes=reserve, traces=traces, **plan_args)
        family = p.traced.info.get("derived_by")
        saved = rng.snapshot(p.traced.device)
        try:
            if self.compile:
                p = p.compiled_within_budget(*args, **kwargs)
            planned = time.perf_counter() - started
            loss = p.step(*args, **kwargs)
        except RuntimeError as e:
            if family is None:
                raise
            # A derived step that fails to run was derived wrong: the
            # program adds gradients and updates buffers only once it has
            # run, so the batch is planned again, traced.
            why = files.first_line(e)
            family.broken = f"a step derived from it failed: {why}"
            if p.sync is not None:
                # Its buffer broadcast and some gradient reductions may
                # have run on this rank alone: a second try would pair
                # its collectives with the other ranks' next ones (same
                # sizes: gradients averaged silently wrong).
                raise rematbench.Error(
                    f"remat: the step derived from traces at lengths "
                    f"{p.traced.derived_from} failed ({why}); under "
                    f"DistributedDataParallel it is not tried again, "
                    f"which would put the ranks' collectives out of "
                    f"step (this rank derives no more lengths)") from e
            rng.restore(saved)
            warnings.warn(f"rematbench.torch: the step derived from traces "
                          f"at lengths {p.traced.derived_from} failed "
                          f"({why}); tracing instead")
            return self._plan_and_step(key, args, kwargs, given)
        self.plans[key].append(p)
        self.last_plan_seconds[structure] = planned
        self.planned_length[key] = bucketing.length_of(kwargs)
        return loss

    def _trace_at_max_length(self, traces, args, kwargs):
        """Adds to a new structure's `traces` a trace of its batch tiled up
        to max_length (buckets.tiled), so that its later lengths up to it
        are derived once the family has its three (four) traces, rather
        than traced as each comes longer than any before (the Kusumoto
        authors' first answer: plan in advance for the graphs that may
        occur). Nothing where the batch is as long already or its tiling
        is not clear."""
        longer = bucketing.tiled(args, kwargs, self.max_length)
        if longer is None:
            return
        longer_args, longer_kwargs = longer
        options = {k: self.plan_args[k] for k in ("cost", "repeats")
                   if k in self.plan_args}
        try:
            traced = trace_batch(
                self.model, longer_kwargs if longer_kwargs else longer_args,
                self.loss_fn, **options)
        except (RuntimeError, IndexError) as e:  # the model's, there
            why = files.first_line(e)
            raise rematbench.Error(
                f"remat: max_length={self.max_length}: the first batch "
                f"tiled to that length did not trace ({why}); give the "
                f"longest length the model takes") from e
        traces.add(traced)

    def _step_padded(self, key, kwargs):
        """The step of a batch of a new length, padded up to the least
        longer length planned for its structure, while the time padding
        has wasted on that length (the padded step's share beyond the
        batch's own length) is below what its structure's latest plan
        took (rent or buy: for each length, at most twice the time of the
        better of padding and planning had its count been known); None
        where it plans (a first or a longest length, or padding has cost
        a plan)."""
        structure = self.structure_of(key)
        length = bucketing.length_of(kwargs)
        if length is None or self.padding_waste.get(key, 0.0) >= \
                self.last_plan_seconds.get(structure, 0.0):
            return None
        target = min((n for k, n in self.planned_length.items()
                      if self.structure_of(k) == structure and
                      n is not None and n > length), default=None)
        if target is None:
            return None
        padded = bucketing.pad(kwargs, [target], self.pad_id)
        padded_key = self.layout_key((), padded)
        self.ran_length = target
        started = time.perf_counter()
        for p in self.plans.setdefault(padded_key, []):
            loss = p.step_if_holds(**padded)
            if loss is not None:
                self.padding_waste[key] = self.padding_waste.get(key, 0.0) \
                    + (time.perf_counter() - started) * (1 - length / target)
                return loss
        # The target's plans were traced on unpadded batches, whose values
        # read in Python (a model's check that the mask is all ones) are
        # not a padded batch's: a plan of the padded target serves every
        # shorter length from now on.
        return self._plan_and_step(padded_key, (), padded, kwargs)


def remat(model, loss_fn=None, budget=None, compile=False, buckets=None,
          pad_to_planned=False, shape_plan_seconds=0.5, max_length=None,
          **plan_args):
    """The one-line entry point: a callable train_step(*args, **kwargs)
    that runs forward and backward of one batch within `budget` (bytes as
    an int or '512MiB', or a float: a fraction of the NoRemat activation
    peak) and returns the loss: loss_fn(model(*inputs), target) for
    train_step(*inputs, target), or the model's own loss
    (model(**batch).loss) for train_step(**batch) without loss_fn; see
    plan() for every form. `buckets` (a list of sequence lengths) pads
    keyword batches up to them: one plan per bucket. `pad_to_planned`
    runs a new length padded up to a longer one planned until padding has
    cost a plan's time. `shape_plan_seconds` limits the search of a new
    shape of a structure planned before. `max_length` (the longest
    sequence length batches will have) traces each structure's first
    batch tiled up to it too, so that later lengths up to it are derived.
    `plan_args` go to plan()
    (algorithms, timeout, ...). See RematStep."""
    return RematStep(model, loss_fn, budget, compile, buckets,
                     pad_to_planned, shape_plan_seconds, max_length,
                     **plan_args)
