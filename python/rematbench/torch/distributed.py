"""Models wrapped for data-parallel training. A plan runs the wrapped
module's step as its own program, which writes each gradient itself and
so never fires the hooks DistributedDataParallel's reducer waits on: the
reducer's work is done here instead, as the reducer does it, so that every
rank's gradients equal plain DDP's. Other wrappers are refused.
"""

import torch
import torch.distributed as dist
import torch.nn as nn

import rematbench


class DataParallelSync:
    """What DistributedDataParallel `ddp` does around a step: broadcasts
    the module's buffers from rank 0 before the forward where DDP's forward
    would (broadcast_buffers, unless the step before ran under no_sync()),
    and after the backward, unless in no_sync(),
    replaces each trained parameter's .grad by the mean over the ranks: the
    reducer multiplies each gradient by 1 / world size as it copies it into
    its bucket, then sums the buckets over the ranks; here all the
    gradients travel in one flat buffer, or, where the program reduces them
    itself (in_program), each once the program has finished it and those
    before it in reverse parameter order (every rank the same order,
    whatever its schedule), overlapping the rest of the backward as DDP's
    buckets do. (With two
    ranks the sum of two values is the same in any order, so the gradients
    are plain DDP's bit for bit; with more, the ranks' order of summation
    may differ from the reducer's.)"""

    def __init__(self, ddp):
        self.ddp = ddp
        self.group = ddp.process_group

    def before_step(self):
        ddp = self.ddp
        if ddp.require_forward_param_sync and getattr(
                ddp, "forward_sync_buffers", ddp.broadcast_buffers):
            with torch.no_grad():
                for b in ddp.module.buffers():
                    dist.broadcast(b, 0, group=self.group)

    def in_program(self, params):
        """The GradientReducer a program runs this step, or None: only
        where the gradients are synchronized and nothing accumulates into
        .grad (an accumulated gradient is reduced after the sum)."""
        if self.ddp.require_backward_grad_sync and all(
                p.grad is None for p in params):
            return GradientReducer(self.group)
        return None

    def after_step(self, params, reduced=False):
        # As DDP's forward leaves it: the next forward syncs the buffers
        # only after a step that synchronized the gradients.
        ddp = self.ddp
        ddp.require_forward_param_sync = ddp.require_backward_grad_sync
        if not ddp.require_backward_grad_sync or reduced:
            return  # no_sync(): gradients accumulate locally
        grads = [p.grad for p in params if p.grad is not None]
        if not grads:
            return
        scale = 1.0 / dist.get_world_size(self.group)
        flat = torch.cat([g.reshape(-1) for g in grads]).mul_(scale)
        dist.all_reduce(flat, group=self.group)
        at = 0
        with torch.no_grad():
            for g in grads:
                g.copy_(flat[at:at + g.numel()].view_as(g))
                at += g.numel()


class GradientReducer:
    """The reducer a program calls (fx_program.build's `reduce`): each
    finished gradient multiplied by 1 / world size and summed over the
    ranks in place, asynchronously; finish() waits for them all."""

    def __init__(self, group):
        self.group = group
        self.scale = 1.0 / dist.get_world_size(group)

    def start(self, gradient):
        gradient.mul_(self.scale)
        return dist.all_reduce(gradient, group=self.group, async_op=True)

    def finish(self, works):
        for w in works:
            w.wait()


def unwrap(model):
    """(the module whose step is traced, its DataParallelSync or None).
    Raises rematbench.Error for a wrapper whose gradients a plan would get
    wrong."""
    if isinstance(model, nn.parallel.DistributedDataParallel):
        if hasattr(model, "buffer_hook"):
            raise rematbench.Error(
                "plan: DistributedDataParallel with a buffer communication "
                "hook is not supported")
        return model.module, DataParallelSync(model)
    if isinstance(model, nn.DataParallel):
        raise rematbench.Error(
            "plan: nn.DataParallel is not supported: plan the module "
            "inside it, or train with DistributedDataParallel")
    kinds = [type(m).__name__ for m in model.modules()
             if type(m).__name__ in ("FullyShardedDataParallel",)
             or "FSDP" in type(m).__name__]
    if kinds:
        raise rematbench.Error(
            f"plan: {kinds[0]} (FSDP) is not supported: its parameters "
            "are gathered and resharded by hooks a plan's program does not "
            "run; use DistributedDataParallel")
    return model, None
