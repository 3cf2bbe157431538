"""remat(), the one-line training step: the plans a training loop needs,
made as its batches come (rematbench.torch.plan makes each).

    train_step = rt.remat(model, budget=0.5)
    loss = train_step(**batch)       # was: model(**batch).loss.backward()
"""

import rematbench
from rematbench.torch import buckets as bucketing
from rematbench.torch.checks import autocast_state
from rematbench.torch.plan import plan
from rematbench.torch.search import NoFit
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
    length, by the algorithm that won there alone, falling back to every
    algorithm where it fits nothing);
    later calls run the plan that holds for them: gradients are added to
    .grad, batch-norm statistics updated once, dropout's masks those of
    plain training; the loss comes back detached. compile=True runs the
    program compiled by inductor, planned so that its measured peak is
    within the budget (Plan.compiled_within_budget; else the plan runs
    eagerly). With `buckets` (lengths), a keyword batch's token tensors
    are padded up to the least bucket at or above their length
    (rematbench.torch.buckets), so that varied lengths share a plan per
    bucket. `plans` maps each batch layout to its plans."""

    def __init__(self, model, loss_fn, budget, compile=False, buckets=None,
                 **plan_args):
        if budget is None:
            raise rematbench.Error(
                "remat: give a budget (bytes, '8GiB', or a fraction of "
                "plain training's peak: 0.5)")
        self.model, self.loss_fn, self.budget = model, loss_fn, budget
        self.compile, self.plan_args = compile, plan_args
        self.buckets = None if buckets is None else \
            bucketing.lengths_of(buckets)
        self.pad_id = bucketing.pad_id_of(model)
        self.plans = {}

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
        if self.buckets is not None:
            if args:
                raise rematbench.Error(
                    "remat: buckets pad keyword batches (input_ids, "
                    "attention_mask, labels); pass the batch as "
                    "train_step(**batch) or pad it yourself")
            kwargs = bucketing.pad(kwargs, self.buckets, self.pad_id)
        key = self.layout_key(args, kwargs)
        plans = self.plans.setdefault(key, [])
        for p in plans:
            loss = p.step_if_holds(*args, **kwargs)
            if loss is not None:
                return loss
        example = kwargs if kwargs and not args else args
        if kwargs and args:
            raise rematbench.Error(
                "remat: give the batch as positional or as keyword "
                "arguments, not both")
        p = self._plan_like_neighbour(key, example)
        if p is None:
            p = plan(self.model, example, self.loss_fn, self.budget,
                     **self.plan_args)
        copies = bucketing.new_bytes(given, kwargs)
        if p.predicted_peak_bytes + copies > p.budget_bytes:
            # The padded copies live through the step: planned below the
            # budget by them (they took 6 KB over it on the bench Llama).
            p = p.at(p.budget_bytes - copies)
        if self.compile:
            p = p.compiled_within_budget(*args, **kwargs)
        plans.append(p)
        return p.step(*args, **kwargs)


    def _plan_like_neighbour(self, key, example):
        """A new shape of a structure planned before: traced, and solved
        only by the algorithm that won the latest plan of that structure,
        which answers in a fraction of a full search; None where there is
        no such plan, algorithms were chosen by the caller, or that
        algorithm fits nothing at this shape (then every algorithm
        runs)."""
        if "algorithms" in self.plan_args:
            return None
        structure = self.structure_of(key)
        neighbours = [p for k, ps in self.plans.items()
                      if k != key and self.structure_of(k) == structure
                      for p in ps]
        if not neighbours:
            return None
        try:
            return plan(self.model, example, self.loss_fn, self.budget,
                        **dict(self.plan_args,
                               algorithms=[neighbours[-1].algorithm]))
        except NoFit:
            return None


def remat(model, loss_fn=None, budget=None, compile=False, buckets=None,
          **plan_args):
    """The one-line entry point: a callable train_step(*args, **kwargs)
    that runs forward and backward of one batch within `budget` (bytes as
    an int or '512MiB', or a float: a fraction of the NoRemat activation
    peak) and returns the loss: loss_fn(model(*inputs), target) for
    train_step(*inputs, target), or the model's own loss
    (model(**batch).loss) for train_step(**batch) without loss_fn; see
    plan() for every form. `buckets` (a list of sequence lengths) pads
    keyword batches up to them: one plan per bucket. `plan_args` go to
    plan() (algorithms, timeout, ...). See RematStep."""
    return RematStep(model, loss_fn, budget, compile, buckets, **plan_args)
