"""Padding a keyword batch's token tensors up to a few lengths (buckets),
so that a training loop over varied sequence lengths runs one plan per
bucket rather than one per length (rt.remat(..., buckets=...)).

Every plan is made for one shape; tracing a new shape costs seconds, and a
data set of varied lengths brings many. Padding to buckets is the answer
the Kusumoto authors gave for variable-length batches ("plan in advance
for the set of graphs that may occur"): the set is the buckets. It follows
transformers' conventions, as its data collators pad: `labels` with -100
(ignored by the loss), `attention_mask` with 0, every other token tensor
with the pad id; a batch with `input_ids` and no `attention_mask` gets one
(ones where the tokens are), so that no real token attends to padding.
On the right, with the mask, the loss and gradients are those of the
unpadded batch up to rounding (the sums run over other sizes); they are
plain training's on the padded batch bit for bit.
"""

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

import rematbench

# What transformers' collators pad each key with; other token tensors get
# the pad id.
PAD_VALUES = {"labels": -100, "attention_mask": 0,
              "decoder_attention_mask": 0}


def lengths_of(buckets):
    """The sorted bucket lengths, validated: positive integers, one at
    least."""
    try:
        lengths = sorted(set(buckets))
    except TypeError:
        raise rematbench.Error(f"remat: buckets must be a list of positive "
                               f"integer lengths, not {buckets!r}") from None
    if not lengths or any(isinstance(n, bool) or not isinstance(n, int) or
                          n < 1 for n in lengths):
        raise rematbench.Error(f"remat: buckets must be a list of positive "
                               f"integer lengths, not {buckets!r}")
    return lengths


def is_tokens(t):
    """Token tensors (ids, masks, labels): integer or boolean, batch by
    length. Floating tensors (pixels, embeddings) are never padded."""
    return (isinstance(t, torch.Tensor) and t.dim() >= 2 and
            not t.is_floating_point() and not t.is_complex())


def pad(kwargs, lengths, pad_id=0):
    """`kwargs` with every token tensor padded on the right along its
    second dimension to the least bucket length at or above its own; a
    tensor longer than every bucket is left as it is (that length is
    planned apart). Adds `attention_mask` where there are `input_ids` and
    no mask."""
    out = dict(kwargs)
    ids = kwargs.get("input_ids")
    if is_tokens(ids) and "attention_mask" not in kwargs:
        # Also where nothing is padded: a batch of a bucket's own length
        # then has the layout of the batches padded up to it.
        out["attention_mask"] = torch.ones_like(ids, dtype=torch.long)
    for key, t in list(out.items()):
        if not is_tokens(t):
            continue
        target = next((n for n in lengths if n >= t.shape[1]), None)
        if target is not None and target > t.shape[1]:
            out[key] = _padded(t, target, PAD_VALUES.get(key, pad_id))
    return out


def new_bytes(kwargs, padded):
    """Bytes of the tensors `pad` made (not the caller's): they live
    through the step beside the caller's batch, so they are activation
    memory the plan must leave room for."""
    return sum(t.untyped_storage().nbytes() for key, t in padded.items()
               if isinstance(t, torch.Tensor) and t is not kwargs.get(key))


def length_of(kwargs):
    """The longest token tensor's length in a keyword batch, or None
    where it has none (nothing to pad)."""
    lengths = [t.shape[1] for t in kwargs.values() if is_tokens(t)]
    return max(lengths) if lengths else None


def tiled(args, kwargs, length):
    """(args, kwargs) with every token tensor of the batch's length (its
    longest) repeated along its second dimension up to `length`: a batch
    of the same structure at that length, whose masks and labels read as
    the batch's do (all ones stay all ones), laid out as the batch's
    (contiguous: the graph traced holds the inputs' strides; a tensor
    passed twice is one tensor twice, as the trace sees it). None where
    the batch is that long already or the tiling is not clear: no token
    tensor, one of another length (a T5's labels) or not contiguous, or
    another tensor with a dimension of the batch's length (embeddings)."""
    leaves, spec = tree_flatten((args, kwargs))
    tokens = [t for t in leaves if is_tokens(t)]
    if not tokens:
        return None
    n = max(t.shape[1] for t in tokens)
    if n >= length or any(t.shape[1] != n or not t.is_contiguous()
                          for t in tokens) or any(
            isinstance(t, torch.Tensor) and not is_tokens(t) and
            n in t.shape for t in leaves):
        return None
    reps = -(-length // n)
    longer = {}  # one tensor passed twice (input_ids as labels) stays one
    for t in tokens:
        if id(t) not in longer:
            longer[id(t)] = t.repeat(1, reps, *[1] * (t.dim() - 2))[
                :, :length].contiguous()
    return tree_unflatten([longer.get(id(t), t) if is_tokens(t) else t
                           for t in leaves], spec)


def room_to_pad(kwargs):
    """Bytes that a batch padded up to this layout (`pad` made its token
    tensors) can hold beside the caller's batch through the step: every
    token tensor of the layout, and the attention mask twice (the one
    `pad` adds at the batch's own length is held while its padded copy
    runs)."""
    tokens = [t for t in kwargs.values() if is_tokens(t)]
    mask = kwargs.get("attention_mask")
    return sum(t.untyped_storage().nbytes() for t in tokens) + (
        mask.untyped_storage().nbytes() if is_tokens(mask) else 0)


def _padded(t, length, value):
    shape = list(t.shape)
    shape[1] = length - t.shape[1]
    return torch.cat([t, t.new_full(shape, value)], dim=1)


def pad_id_of(model):
    """The model's pad token id (transformers' config.pad_token_id), or 0:
    padded positions are masked and ignored, so any id trains the same."""
    config = getattr(model, "config", None)
    value = getattr(config, "pad_token_id", None)
    return value if isinstance(value, int) else 0
