"""One measuring instrument for every way of running a training step:
plain eager, torch.utils.checkpoint, SAC, torch.compile at any memory
budget, and rematbench's plans.

    from rematbench.torch import measure
    r = measure.measure_step(lambda: loss_fn(model(x), y).backward(), model)
    r["measured_peak_bytes"], r["step_seconds"], r["grads"]

The step is a callable that runs one forward and backward and leaves the
gradients in each parameter's .grad (as loss.backward() does). Before every
run the gradients are set to None and the model's buffers and the RNG
state are put back to what they were when measure_step was called, so every
run computes the same step.

Activation peak: the allocator's own record of every allocation and free
made during one run (with addresses: ops' outputs, their temporaries and
workspaces alike), on the model's device: on the CPU the profiler's memory
events; on CUDA the caching allocator's history
(torch.cuda.memory._record_memory_history), because the profiler's CUDA
memory events do not add up there (on an H100 their live sum passed what
the card holds: results/torch_options/cuda-probe/README.md).
The peak is the largest sum of live allocations made during the run, not
counting the allocations that end up as the parameters' gradients (those
live at the end whose address is a .grad's storage). Parameters,
optimizer state and the batch were allocated before the run and are not
counted either; nor are caches of the allocator (on CUDA, reserved but
unallocated blocks). On CUDA, `cuda_peak_bytes` adds
torch.cuda.max_memory_allocated above the start (gradients included).

Step time: the median of `repeats` runs after `warmup` (synchronized on
CUDA), without the profiler.
"""

import math
import statistics
import time

import torch

from rematbench.torch import rng


def allocation_events(fn, device, mark=None):
    """Runs fn(); returns (result, [(ptr, bytes)]) of the allocations
    (+bytes) and frees (-bytes) on `device`, in the order the allocator
    made them (on CUDA without `mark`: the allocator's history,
    cuda_allocator_events). With `mark` (a prefix of record_function
    names), from the profiler, each event is (ptr, bytes, label): the rest
    of the name of the innermost record_function around it whose name
    starts with `mark`, or None outside every such range."""
    if device.type == "cuda" and mark is None:
        return cuda_allocator_events(fn, device)
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CPU]
    if device.type == "cuda":
        acts.append(ProfilerActivity.CUDA)
    with profile(activities=acts, profile_memory=True,
                 record_shapes=False) as prof:
        result = fn()
    events = []
    stack = [(e, None) for e in
             prof.profiler.kineto_results.experimental_event_tree()]
    while stack:
        e, label = stack.pop()
        if mark is not None and e.name.startswith(mark):
            label = e.name[len(mark):]
        ef = e.extra_fields
        if type(ef).__name__ == "_ExtraFields_Allocation" and \
                ef.device.type == device.type:
            events.append((e.start_time_ns, ef.id, ef.ptr, ef.alloc_size,
                           label))
        stack.extend((c, label) for c in e.children)
    events.sort(key=lambda e: e[:4])
    if mark is None:
        return result, [(p, b) for _, _, p, b, _ in events]
    return result, [(p, b, label) for _, _, p, b, label in events]


def cuda_allocator_events(fn, device):
    """Runs fn() while CUDA's caching allocator records its history;
    returns (result, [(ptr, bytes)]) from the allocator's own trace of
    `device` (history_events): every thread's allocations in one order,
    the backward's too (the autograd engine runs it in a thread of its
    own on CUDA)."""
    from torch.cuda import memory
    index = device.index if device.index is not None else \
        torch.cuda.current_device()
    torch.cuda.synchronize(device)
    start = 0
    try:
        memory._record_memory_history("all", context=None, device=device,
                                      clear_history=True)
    except TypeError:  # a torch without clear_history: skip what was kept
        memory._record_memory_history("all", context=None, device=device)
        start = len(memory._snapshot(device)["device_traces"][index])
    try:
        result = fn()
        torch.cuda.synchronize(device)
        trace = memory._snapshot(device)["device_traces"][index][start:]
    finally:
        memory._record_memory_history(None, device=device)
    return result, history_events(trace)


def history_events(trace):
    """[(ptr, bytes)] of an allocator history (a snapshot's device trace):
    +size for each block handed out ("alloc"), -size for each block given
    back ("free_completed": a block freed while another stream still uses
    it is requested free first and given back later); the allocator's
    segment traffic (cudaMalloc, cudaFree) is not the program's."""
    sign = {"alloc": 1, "free_completed": -1}
    return [(e["addr"], sign[e["action"]] * e["size"]) for e in trace
            if e["action"] in sign]


def kept_blocks(events, ptrs):
    """Indices in `events` of the allocations still live at the end whose
    address is in `ptrs` (the blocks that become parameter gradients)."""
    ptrs, live = set(ptrs), {}  # live: ptr -> index of its allocation
    for k, e in enumerate(events):
        if e[1] > 0:
            live[e[0]] = k
        else:
            live.pop(e[0], None)
    return {k for p, k in live.items() if p in ptrs}


def live_totals(events, exclude_ptrs=()):
    """The sum of live allocations after each of `events`, leaving out the
    blocks still live at the end whose address is in `exclude_ptrs` (the
    gradients)."""
    skip = kept_blocks(events, exclude_ptrs)
    total, cur = 0, {}
    for k, e in enumerate(events):
        p, b = e[0], e[1]
        if b > 0:
            if k not in skip:
                cur[p] = b
                total += b
        elif p in cur:
            total -= cur.pop(p)
        yield total


def peak_of(events, exclude_ptrs=()):
    """The largest sum of live allocations, over `events` [(ptr, bytes)],
    leaving out blocks still live at the end whose address is in
    `exclude_ptrs` (the gradients). Returns (peak, live at the end,
    excluded bytes)."""
    peak = total = 0
    for total in live_totals(events, exclude_ptrs):
        peak = max(peak, total)
    excluded = sum(events[k][1] for k in kept_blocks(events, exclude_ptrs))
    return peak, total, excluded


def median_interval(n, level=0.95):
    """Indices (lo, hi) into n sorted samples of a distribution-free
    confidence interval for their median: the widest order statistics with
    at most (1 - level) / 2 of Binomial(n, 1/2) below lo and above hi
    (e.g. n = 21: the 6th and 16th smallest, 97.3%); None when n is too
    small for any interval at that level."""
    tail, k = 0.0, 0
    while True:
        p = math.comb(n, k) / 2 ** n
        if tail + p > (1 - level) / 2:
            break
        tail += p
        k += 1
    return None if k == 0 else (k - 1, n - k)


def measure_step(step, model, repeats=5, warmup=2, reference=None,
                 peak=True, timing=True, seed=None, baseline=None):
    """Measures `step` (a callable: one forward + backward on `model`,
    gradients left in .grad). Returns a dict, the measurement record
    (results/SCHEMA.md): `measured_peak_bytes` (allocator-level activation
    peak, see the module's docstring), `end_bytes` (what the step leaves
    allocated besides gradients), `grad_bytes`, `step_seconds`
    (median), `times` (every timed run), `grads` (of the first run, from
    the state at the call), `gradients_equal` and `max_grad_diff` against
    `reference` (a list of tensors, one per parameter; None: not
    compared), `cuda_peak_bytes` (CUDA only). With `seed`, every run
    starts from torch.manual_seed(seed) rather than from the generator's
    state at the call (so that runs measured at different times draw the
    same dropout masks). With `baseline` (another step on the same model,
    plain training's), the timed runs alternate the two, and
    `baseline_seconds`, `ratio_to_baseline` (the median over the pairs
    of step / baseline; in every other pair the baseline runs first, so
    that neither gains from running second) and `ratio_ci95` (a 95%
    confidence interval of that median, median_interval; from 6 pairs)
    come back too: on a shared machine whose load changes, only the
    paired ratio compares."""
    params = list(model.parameters())
    device = params[0].device
    cuda = device.type == "cuda"
    buffers = list(model.buffers())
    saved = [b.detach().clone() for b in buffers]
    if seed is not None:
        rng.seed(seed, device)
    generators = rng.snapshot(device)

    def reset():
        with torch.no_grad():
            for b, v in zip(buffers, saved):
                b.copy_(v)
        rng.restore(generators)
        for p in params:
            p.grad = None

    def sync():
        if cuda:
            torch.cuda.synchronize(device)

    out = {}
    reset()
    step()
    sync()
    grads = [None if p.grad is None else p.grad.detach().clone()
             for p in params]
    out["grads"] = grads
    if reference is not None:
        diffs = [float("inf") if (a is None) != (b is None) else
                 0.0 if a is None else
                 float((a.double() - b.double()).abs().max())
                 for a, b in zip(grads, reference)]
        out["max_grad_diff"] = max(diffs) if diffs else 0.0
        out["gradients_equal"] = all(
            (a is None and b is None) or
            (a is not None and b is not None and torch.equal(a, b))
            for a, b in zip(grads, reference))
    if timing:
        times, base = [], []

        def timed(fn):
            reset()
            sync()
            t0 = time.perf_counter()
            fn()
            sync()
            return time.perf_counter() - t0

        for k in range(warmup + repeats):
            if baseline is not None and k % 2:  # each first in turn
                b = timed(baseline)
                t = timed(step)
            else:
                t = timed(step)
                b = timed(baseline) if baseline is not None else None
            if k >= warmup:
                times.append(t)
                base.append(b)
        out["times"] = times
        out["step_seconds"] = statistics.median(times)
        if baseline is not None:
            ratios = sorted(t / b for t, b in zip(times, base))
            out["baseline_seconds"] = statistics.median(base)
            out["ratio_to_baseline"] = statistics.median(ratios)
            ci = median_interval(len(ratios))
            if ci is not None:
                out["ratio_ci95"] = [ratios[ci[0]], ratios[ci[1]]]
    if peak:
        reset()
        sync()
        if cuda:
            torch.cuda.reset_peak_memory_stats(device)
            start = torch.cuda.memory_allocated(device)
        _, events = allocation_events(lambda: (step(), sync()), device)
        if cuda:
            out["cuda_peak_bytes"] = torch.cuda.max_memory_allocated(
                device) - start
        ptrs = {p.grad.untyped_storage().data_ptr() for p in params
                if p.grad is not None}
        out["measured_peak_bytes"], out["end_bytes"], out["grad_bytes"] = \
            peak_of(events, ptrs)
    reset()
    return out
