"""The random-number generators of a training step: reading and setting
their state, drawing dropout's mask as plain training does, and replaying
draws to reach a random op's state from an earlier one's.

Both engines (rematbench.torch.interpreter and .fx_program) run the same
steps of rematbench.torch.lowering, whose random ops call what is here:
PyTorch's own run_and_save_rng_state (a first execution draws from the
generator as it stands and saves the state it started from) and
run_with_rng_state (a recomputation runs from a saved state and puts the
generator back), or Replay. Inductor keeps both operators inside its
graphs as calls of the eager op, so compiled programs draw the same masks.
"""

import torch
import torch.fx

from torch._prims.rng_prims import run_and_save_rng_state, run_with_rng_state


def get_state(device):
    """The state of the generator that ops on `device` draw from (the
    states run_and_save_rng_state saves)."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_rng_state(device)
    return torch.get_rng_state()


def set_state(state, device):
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.set_rng_state(state, device)
    else:
        torch.set_rng_state(state)


def snapshot(device):
    """Every generator a step on `device` may draw from (the CPU's, and the
    device's own): restore() puts them back after tracing or measuring."""
    device = torch.device(device)
    devices = [torch.device("cpu")] + ([device] if device.type != "cpu"
                                       else [])
    return [(d, get_state(d)) for d in devices]


def restore(saved):
    for device, state in saved:
        set_state(state, device)


def seed(value, device):
    """Seeds every generator a step on `device` draws from."""
    torch.manual_seed(value)
    if torch.device(device).type == "cuda":
        torch.cuda.manual_seed_all(value)


RANDOM_WORDS = ("bernoulli", "dropout", "rand", "normal", "uniform",
                "multinomial", "exponential", "geometric", "cauchy",
                "log_normal", "random_")


def is_random(target):
    """Whether traced op `target` draws random numbers."""
    if torch.Tag.nondeterministic_seeded in getattr(target, "tags", ()):
        return True
    s = str(target)
    name = s.split(".")[1] if s.startswith("aten.") else s
    return any(w in name for w in RANDOM_WORDS)


@torch.library.custom_op("rematbench::bernoulli_in_layout", mutates_args=(),
                         tags=(torch.Tag.flexible_layout,))
def _bernoulli_in_layout(like: torch.Tensor, size: list[int],
                         stride: list[int], p: float) -> torch.Tensor:
    """aten.bernoulli.p as plain training ran it. Dropout draws its mask
    in place, `bernoulli_(empty_like(x), p)`, into a tensor with x's
    strides; functionalization made that the out-of-place
    `bernoulli.p(empty_like(x), p)`, whose result is contiguous. The random
    numbers fill memory in order, so on a transposed x (attention with
    batch_first=True) they would land on other elements than in plain
    training. The layout is given explicitly (`like` gives only the device
    and dtype), since inductor may lay out its own tensors otherwise; an
    op, not a Python function, so that the generator's save-and-replay
    operators carry it into inductor's graphs, and one that allocates its
    result, so that no compiled graph sees an alias."""
    return torch.empty_strided(size, stride, dtype=like.dtype,
                               device=like.device).bernoulli_(p)


@_bernoulli_in_layout.register_fake
def _(like, size, stride, p):
    return like.new_empty_strided(size, stride)


BERNOULLI_IN_LAYOUT = torch.ops.rematbench.bernoulli_in_layout.default


def random_call(n, args, kwargs):
    """(op, args, kwargs) that run traced random op node `n` as plain
    training does, on `args` and `kwargs` (an engine's values of n's)."""
    if n.target is torch.ops.aten.bernoulli.p:
        like = n.args[0].meta["val"]
        return (BERNOULLI_IN_LAYOUT,
                (args[0], list(like.shape), list(like.stride())) +
                tuple(args[1:]), kwargs)
    return n.target, tuple(args), kwargs


def traced_random(op):
    """The traced random op that `op` (from random_call) stands for."""
    if op is BERNOULLI_IN_LAYOUT:
        return torch.ops.aten.bernoulli.p
    return op


class Fresh:
    """A tensor argument of a replayed draw: made when the draw runs
    (zeros, so that a probability argument is in [0, 1]), since how far a
    random op moves the generator depends on its arguments' shapes, not
    their values."""

    def __init__(self, shape, stride, dtype):
        self.shape, self.stride, self.dtype = shape, stride, dtype

    @classmethod
    def like(cls, x):
        """The Fresh of FX node x's value."""
        m = x.meta["tensor_meta"]
        return cls(tuple(m.shape), tuple(m.stride), m.dtype)

    def make(self, device):
        return torch.empty_strided(self.shape, self.stride, dtype=self.dtype,
                                   device=device).zero_()

    def nbytes(self):
        return torch.empty_strided(self.shape, self.stride, dtype=self.dtype,
                                   device="meta").untyped_storage().nbytes()


def draw(n):
    """(op, args, kwargs) that move the generator as random op node `n`
    does, without its inputs: tensor arguments are Fresh. Dropout's mask
    (bernoulli_in_layout) takes its input only for the dtype and device,
    so an empty one stands for it and the draw allocates the mask alone."""
    args, kwargs = torch.fx.node.map_arg((n.args, n.kwargs), Fresh.like)
    op, args, kwargs = random_call(n, args, kwargs)
    if op is BERNOULLI_IN_LAYOUT:
        args = (Fresh((0,), (1,), args[0].dtype),) + tuple(args[1:])
    return op, tuple(args), dict(kwargs)


def run_draw(triple, device):
    """Runs a draw() triple on `device`, its result dropped."""
    op, args, kwargs = triple

    def make(a):
        return a.make(device) if isinstance(a, Fresh) else a
    op(*map(make, args), **{k: make(a) for k, a in kwargs.items()})


def record(partition, seed_value=None):
    """{FX index of each random op: the generator state before it} when the
    graph runs in its own (eager) order from `seed_value` (None: from the
    generator's state now, which is left where an eager step would leave
    it). Only the random ops run, in FX order, each on fresh tensors
    shaped like its arguments (draw()'s, one op's worth of memory at a
    time): engines take these states when a schedule first runs the random
    ops out of eager order."""
    device = partition.params[0].device
    if seed_value is not None:
        seed(seed_value, device)
    states = {}
    with torch.no_grad():
        for m in sorted(partition.random):
            states[m] = get_state(device)
            run_draw(draw(partition.fx[m]), device)
    return states


# Random ops that move the generator by an amount set by their arguments'
# shapes and dtypes alone, so that Replay can draw them again from fresh
# tensors. Others draw by value (RReLU's noise only for negative inputs;
# Poisson, gamma and binomial samples by rejection): replaying them from
# zeros would leave the generator elsewhere, so a recomputation of one
# starts from a state saved at it, and no replay runs past it.
_REPLAYABLE = frozenset((
    "bernoulli", "native_dropout", "rand", "rand_like", "randn",
    "randn_like", "randint", "randint_like", "randperm", "normal",
    "uniform", "exponential", "cauchy", "log_normal", "geometric",
    "random"))


def replayable(n):
    """Whether random op node `n` can be among a Replay's draws."""
    packet = getattr(n.target, "overloadpacket", None)
    return packet is not None and \
        str(packet).removeprefix("aten.").rstrip("_") in _REPLAYABLE


def draw_bytes(n):
    """The bytes a replayed draw of random op node `n` (draw()) holds while
    it runs: its fresh arguments and its result."""
    op, args, kwargs = draw(n)
    fresh = sum(a.nbytes() for a in list(args) + list(kwargs.values())
                if isinstance(a, Fresh))
    if op is BERNOULLI_IN_LAYOUT:
        return fresh + Fresh(tuple(args[1]), tuple(args[2]),
                             args[0].dtype).nbytes()
    vals = n.meta["val"]
    vals = vals if isinstance(vals, (tuple, list)) else (vals,)
    return fresh + sum(v.untyped_storage().nbytes() for v in vals
                       if isinstance(v, torch.Tensor))


class Replay:
    """Recomputes a random op from the generator state saved at an earlier
    random op (its anchor) rather than from a state of its own: restores
    the anchor's state, draws the random ops between the anchor and this
    one (same ops, same shapes, results dropped at once) to reach this
    op's state, runs the op and puts the generator back. The program then
    holds one state per anchor instead of one per recomputed random op,
    for the draws' time; `draws` are draw()'s triples, in eager order. With
    `save` or `after` it returns (the op's own state or None, the state
    after the op or None, its result): later recomputations of the op
    start from its own state, and the next random op's from the state
    after it, and replay nothing."""

    __name__ = "replay_rng"

    def __init__(self, draws, save=False, after=False):
        self.draws, self.save, self.after = draws, save, after

    def __call__(self, state, op, *args, **kwargs):
        device = next(a.device for a in args if isinstance(a, torch.Tensor))
        saved = get_state(device)
        set_state(state, device)
        for d in self.draws:
            run_draw(d, device)
        own = get_state(device) if self.save else None
        out = op(*args, **kwargs)
        after = get_state(device) if self.after else None
        set_state(saved, device)
        return (own, after, out) if self.save or self.after else out


__all__ = ["get_state", "set_state", "snapshot", "restore", "seed",
           "is_random", "random_call", "traced_random", "draw", "run_draw",
           "record", "replayable", "draw_bytes", "Replay",
           "run_and_save_rng_state", "run_with_rng_state",
           "BERNOULLI_IN_LAYOUT"]
