"""PyTorch's own memory planner, torch.distributed._tools.sac_ilp, as its
users run it: module-level statistics (MemTracker, RuntimeEstimator,
SACEstimator, under FakeTensorMode), `sac_milp` choosing per module how
much activation memory selective checkpointing discards under a budget in
GiB, and each chosen module's operators saved or recomputed as
`get_optimal_checkpointing_policy_per_module` decides, applied with
`create_selective_checkpoint_contexts`.

Two things PyTorch's tools assume that a CPU or a zoo batch does not give:
- the runtime estimator times each operator with accelerator events (the
  cost model needs CUDA's capabilities); on the CPU the same operators run
  and are timed by the wall clock (`_WallClock`);
- the statistics run under FakeTensorMode, where a value read in Python
  (transformers asks whether a padding mask is all ones) cannot be: such
  a model or batch fails there. A plan is applied to each module's
  operators by name and occurrence (`_selective`).

sac_milp's budget covers parameters, gradients and activations
(MemTracker's view); `Planner.solve(activation_bytes)` asks for the
parameters and gradients plus `activation_bytes`, so that its setting is
comparable with an activation budget.
"""

import collections
import contextlib
import copy
import functools
import time
from unittest import mock

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils.checkpoint import (CheckpointPolicy, checkpoint,
                                    create_selective_checkpoint_contexts)

GIB = 2 ** 30


class _WallClock:
    """An event with torch.Event's interface, timed by the wall clock: the
    runtime estimator's operator timing on the CPU."""

    def __init__(self, enable_timing=True):
        self.t = None

    def record(self, stream=None):
        self.t = time.perf_counter()

    def elapsed_time(self, end):
        return (end.t - self.t) * 1e3


@contextlib.contextmanager
def _timed_on(device):
    if device.type != "cpu":
        yield
        return
    with mock.patch.object(torch, "Event", _WallClock), \
            mock.patch.object(torch.accelerator, "current_stream",
                              lambda *a: None), \
            mock.patch.object(torch.accelerator, "synchronize",
                              lambda *a: None):
        yield


def _statistics(build, device):
    """(the module info for sac_milp, the SAC statistics per module fqn,
    the seconds they took): the recipe of torch.distributed._tools' own
    tests, under FakeTensorMode, for one step of `build()`'s
    (model, args, kwargs, loss_of(outputs)), a fresh copy of the model."""
    from torch.distributed._tools.ilp_utils import aggregate_stats
    from torch.distributed._tools.mem_tracker import MemTracker, _ModState
    from torch.distributed._tools.runtime_estimator import RuntimeEstimator
    from torch.distributed._tools.sac_estimator import SACEstimator
    t0 = time.perf_counter()
    # Built for real and then faked: some models' initialisation reads
    # values (a truncated normal's bounds), which fake tensors cannot.
    model, args, kwargs, loss_of = build()
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    _fake_state(model, mode)
    args, kwargs = torch.utils._pytree.tree_map_only(
        torch.Tensor, mode.from_tensor, (args, kwargs))
    with mode, _timed_on(device):
        def step():
            loss_of(model(*args, **kwargs)).backward()
            model.zero_grad(set_to_none=True)
        tracker = MemTracker()
        tracker.track_external(model)
        with tracker as mt:
            step()
            mt.reset_mod_stats()
            loss = loss_of(model(*args, **kwargs))
            before = mt.get_tracker_snapshot("current")
            loss.backward()
            last = mt.get_tracker_snapshot("current")
            model.zero_grad(set_to_none=True)
        for stats in tracker.memory_tracking.values():
            # Modules whose inputs need no gradient have no post-backward
            # snapshot (ModTracker's hook does not fire): the step's last,
            # as PyTorch's own tests fill it in. A module with no backward
            # at all (a rotary embedding's table) has none of the three:
            # it is as the backward found it.
            if _ModState.POST_BW not in stats.snapshots:
                stats.snapshots[_ModState.POST_BW] = [copy.deepcopy(last)]
            for state in (_ModState.PRE_BW, _ModState.PEAK_BW):
                if state not in stats.snapshots:
                    stats.snapshots[state] = [copy.deepcopy(before)]
        runtimes = RuntimeEstimator()
        with runtimes(estimate_mode_type="operator-level-benchmark"):
            step()
        sac = SACEstimator()
        with sac(estimate_mode_type="operator-level-benchmark"):
            loss = loss_of(model(*args, **kwargs))
        loss.backward()
        # A module whose operators hold no memory or take no time (views
        # only) has nothing to trade, and its trade-off curve would divide
        # by zero: it is left out, as a leaf that is never checkpointed.
        for fqn, stats in list(sac.sac_mod_stats.items()):
            if sum(stats.memory) == 0 or sum(stats.runtimes) == 0:
                del sac.sac_mod_stats[fqn]
        info = aggregate_stats(model, tracker, runtimes, sac, device)
    return info, dict(sac.sac_mod_stats), time.perf_counter() - t0


def _fake_state(model, mode):
    """The model's parameters and buffers replaced by fake tensors of
    `mode` (a parameter shared by two modules stays shared)."""
    fakes = {}
    for m in model.modules():
        for k, p in m._parameters.items():
            if p is not None:
                if id(p) not in fakes:
                    fakes[id(p)] = torch.nn.Parameter(
                        mode.from_tensor(p.detach()), p.requires_grad)
                m._parameters[k] = fakes[id(p)]
        for k, b in m._buffers.items():
            if b is not None:
                m._buffers[k] = mode.from_tensor(b)


class Planner:
    """sac_milp over one model's statistics. `build` makes the model and
    batch afresh as (model, args, kwargs, loss_of), for the statistics;
    `model` is the model the plans are applied to."""

    def __init__(self, model, build, device):
        from torch.distributed._tools.ilp_utils import (
            get_peak_memory_runtime_baseline, parse_module_info)
        self.model = model
        info, self.sac_stats, self.statistics_seconds = \
            _statistics(build, device)
        order = info["mod_order"]["fw_pre_order"]
        if len(order) != len(set(order)):
            # parse_module_info's assertion, said in words.
            twice = sorted({f for f in order if order.count(f) > 1})
            raise RuntimeError(
                "sac_milp's statistics take each module to run once per "
                f"step; {', '.join(twice[:3])} ran more than once")
        tracked = {m["fqn"] for m in info["mod_stats"]}
        untracked = [f for f in order if f not in tracked]
        if untracked:
            raise RuntimeError(
                f"sac_milp's statistics: {len(untracked)} module(s) ran "
                f"without memory statistics ({', '.join(untracked[:3])})")
        self.graph = parse_module_info(info)
        self.baseline_peak_bytes, self.baseline_ms = \
            get_peak_memory_runtime_baseline(self.graph)
        self.static_bytes = sum(
            p.numel() * p.element_size() * (2 if p.requires_grad else 1)
            for p in model.parameters())

    def solve(self, activation_bytes):
        """(decisions {module fqn: fraction of its activation memory
        discarded}, sac_milp's bound on the peak in bytes (-1: nothing
        fits), the solve's seconds) at the parameters and gradients plus
        `activation_bytes`."""
        from torch.distributed._tools.sac_ilp import sac_milp
        t = time.perf_counter()
        decisions, _, peak = sac_milp(
            copy.deepcopy(self.graph),
            memory_budget=(self.static_bytes + activation_bytes) / GIB)
        return decisions, peak, time.perf_counter() - t

    @contextlib.contextmanager
    def applied(self, decisions):
        """The model with each decided module's forward under selective
        checkpointing, its operators saved as
        get_optimal_checkpointing_policy_per_module chooses for the
        module's fraction kept."""
        from torch.distributed._tools.sac_ilp import (
            get_optimal_checkpointing_policy_per_module)
        modules = dict(self.model.named_modules())
        root = type(self.model).__name__
        patched = []
        try:
            for fqn, discard in decisions.items():
                stats = self.sac_stats[fqn]
                saved = get_optimal_checkpointing_policy_per_module(
                    stats, memory_budget=1 - discard)
                if not saved:
                    raise RuntimeError(f"sac_milp: no per-operator policy "
                                       f"for {fqn} at {1 - discard:.3f}")
                name = fqn[len(root) + 1:] if fqn != root else ""
                m = modules[name]
                m.forward = _selective(m.forward, stats.func_names, saved)
                patched.append(m)
            yield
        finally:
            for m in patched:
                del m.forward


def _selective(forward, names, saved):
    """`forward` checkpointed, the k-th call of each operator saved where
    the statistics' k-th call of it was (`names` and `saved`, in the
    statistics' order). Matched by operator and occurrence, not by
    position: the real step may run an operator the fake one did not (a
    reshape that copies where the fake tensor's strides made it a view),
    and such an operator is recomputed."""
    decided, seen = {}, collections.Counter()
    for name, keep in zip(names, saved):
        decided[(name, seen[name])] = keep
        seen[name] += 1

    def context():
        counts = {False: collections.Counter(), True: collections.Counter()}

        def policy(ctx, op, *args, **kwargs):
            name = op._overloadpacket.__name__
            k = counts[ctx.is_recompute][name]
            counts[ctx.is_recompute][name] += 1
            return CheckpointPolicy.MUST_SAVE if decided.get((name, k)) \
                else CheckpointPolicy.PREFER_RECOMPUTE
        # The per-operator MILP saves an in-place operator with the
        # operator it changes (its constraint); SAC's check that a saved
        # tensor is not changed afterwards would refuse that plan, so the
        # check is off, and the gradients are compared with plain
        # training's instead.
        return create_selective_checkpoint_contexts(
            policy, allow_cache_entry_mutation=True)
    return functools.wraps(forward)(
        lambda *a, **kw: checkpoint(forward, *a, use_reentrant=False,
                                    context_fn=context, **kw))
