"""PyTorch's own memory options and the models the studies compare them
with rematbench on (bench/studies/torch_options.py, torch_peak_gap.py,
memory_bounds.py, compiled_profile.py).

The options: each block checkpointed (torch.utils.checkpoint, non-reentrant),
checkpoint_sequential over a sequence of modules, selective activation
checkpointing (SAC: matrix products and convolutions saved, the rest
recomputed) per block, and torch.compile at an activation_memory_budget.
The models: GPT-2, ViT-B/16, ResNet-50 and a U-Net at three sizes
(models()); each builder returns (model, (x, y), loss_fn, blocks,
sequential): the blocks the per-block options wrap, and the model as an
nn.Sequential of them for checkpoint_sequential (None where skip
connections cross blocks).
"""

import contextlib
import datetime
import math
import os
import platform
import subprocess
import sys

import torch
import torch._dynamo
import torch._functorch.config as fconfig
import torch.nn as nn
from torch.utils.checkpoint import checkpoint, checkpoint_sequential

from rematbench import models as zoo

# The algorithms the studies' plans choose from.
HEURISTICS = ["noremat", "dtr", "rotor", "chen_greedy", "chen_sqrtn",
              "chen_recursive", "revolve", "twremat", "checkpoint_last",
              "checkpoint_reuse", "dp_approx"]


# --------------------------------------------------------------------------
# Models.


def _batch(g, batch, image, classes):
    x = torch.randn(batch, 3, image, image, generator=g)
    return x, torch.randint(classes, (batch,), generator=g)


def gpt2(batch, seq, d, layers, heads, vocab, p=0.1):
    """A GPT-2-style decoder of `layers` blocks, trained on random tokens."""
    blocks = [zoo.GPTBlock(d, heads, p) for _ in range(layers)]
    model = nn.Sequential(zoo.GPTEmbed(vocab, seq, d, p), *blocks,
                          zoo.GPTHead(d, vocab))
    g = torch.Generator().manual_seed(1)
    x = torch.randint(vocab, (batch, seq), generator=g)
    y = torch.randint(vocab, (batch * seq,), generator=g)
    return model, (x, y), nn.CrossEntropyLoss(), blocks, model


def vit_b_16(batch, image):
    """torchvision's ViT-B/16 (10 classes) as stem, encoder layers, head.
    The Sequential holds the ViT (through ViTStem) and its layers again:
    parameters are shared, so each is listed once."""
    import torchvision
    vit = torchvision.models.vit_b_16(image_size=image, num_classes=10)
    blocks = list(vit.encoder.layers)
    model = nn.Sequential(zoo.ViTStem(vit), *blocks, zoo.ViTHead(vit))
    g = torch.Generator().manual_seed(1)
    return model, _batch(g, batch, image, 10), nn.CrossEntropyLoss(), \
        blocks, model


def resnet50(batch, image):
    """torchvision's ResNet-50 (10 classes), its bottleneck blocks in one
    Sequential."""
    import torchvision
    r = torchvision.models.resnet50(num_classes=10)
    blocks = [b for layer in (r.layer1, r.layer2, r.layer3, r.layer4)
              for b in layer]
    seq = nn.Sequential(r.conv1, r.bn1, r.relu, r.maxpool, *blocks,
                        r.avgpool, nn.Flatten(1), r.fc)
    g = torch.Generator().manual_seed(1)
    return seq, _batch(g, batch, image, 10), nn.CrossEntropyLoss(), \
        blocks, seq


def unet(batch, image):
    """rematbench.models.UNet with 4 poolings (5 resolutions: levels=5 in
    its terms), base 16, 3 classes, per-pixel targets; no Sequential (the
    skips cross blocks)."""
    model = zoo.UNet(levels=5, base=16, classes=3)
    blocks = list(model.down) + list(model.dec)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(batch, 3, image, image, generator=g)
    y = torch.randint(3, (batch, image, image), generator=g)
    return model, (x, y), nn.CrossEntropyLoss(), blocks, None


def models(size):
    """name -> (builder, description) at `size`: "quick" (the tests'),
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


def placed(model, batch, device, dtype):
    """The model and batch on `device`, floating point in `dtype`."""
    model.to(device=device, dtype=dtype)
    return [t.to(device=device, dtype=dtype) if t.is_floating_point()
            else t.to(device) for t in batch]


# --------------------------------------------------------------------------
# PyTorch's options.


@contextlib.contextmanager
def patched_blocks(blocks, wrap):
    """Each block's forward replaced by wrap(its forward) inside."""
    for b in blocks:
        b.forward = wrap(b.forward)
    try:
        yield
    finally:
        for b in blocks:
            del b.forward


def checkpointed(forward, **kw):
    """`forward` under torch.utils.checkpoint (non-reentrant); `kw` are
    checkpoint's, keyword arguments of the call go to `forward`."""
    return lambda *a, **call_kw: checkpoint(
        forward, *a, use_reentrant=False, **kw, **call_kw)


def sac_policy(ctx, op, *args, **kwargs):
    """Selective activation checkpointing's policy: the outputs of matrix
    products, convolutions and attention saved, the rest recomputed."""
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


def selective(forward):
    """`forward` under selective activation checkpointing (sac_policy)."""
    return checkpointed(forward, context_fn=sac_context)


def sequential_step(seq, loss_fn, x, y):
    """(segments, step): checkpoint_sequential over `seq` in about
    sqrt(len(seq)) segments, and the training step that runs it."""
    segments = max(1, round(math.sqrt(len(seq))))

    def step():
        out = checkpoint_sequential(seq, segments, x, use_reentrant=False)
        loss_fn(out, y).backward()
    return segments, step


@contextlib.contextmanager
def compiled(model, batch, budget, solver=None):
    """The training step of `model` on `batch` (a rematbench.zoo.Batch)
    compiled by torch.compile at activation_memory_budget `budget` with
    the partitioner's knapsack `solver` (None: its default), compiled by a
    first step whose gradients are cleared; dynamo's caches are reset
    before and after."""
    torch._dynamo.reset()
    patch = {"activation_memory_budget": budget}
    if solver is not None:
        patch["activation_memory_budget_solver"] = solver
    try:
        with fconfig.patch(**patch):
            cm = torch.compile(model)

            def step():
                batch.plain_step(cm)
            torch.manual_seed(0)
            step()
            for p in model.parameters():
                p.grad = None
            yield step
    finally:
        torch._dynamo.reset()


def repeated_blocks(model):
    """The blocks a per-block option wraps in a model nobody here wrote:
    the children of each ModuleList or Sequential whose two or more
    children are all of one class with submodules of their own (a
    transformer's layers, a ResNet stage's blocks), outermost first."""
    found = []

    def walk(m):
        kids = list(m.children())
        if isinstance(m, (nn.ModuleList, nn.Sequential)) and \
                len(kids) >= 2 and len({type(k) for k in kids}) == 1 and \
                any(True for _ in kids[0].children()):
            found.extend(kids)
            return
        for k in kids:
            walk(k)
    walk(model)
    return found


# --------------------------------------------------------------------------
# What the options are measured against.


def gradients_once_lower_bound(nodes):
    """The least activation memory of a schedule that computes each node
    that is not a forward value (the loss, each gradient) once, as
    checkpoint_last and checkpoint_reuse do, on the traced graph's `nodes`
    (a graph document's): while such a node b is computed, besides what
    computing it takes (its inputs, itself, its workspace), every
    non-forward value computed before it (an ancestor) and read after it (by
    a descendant) is live. The graph's lower bound counts only the former;
    the difference is what this class of schedules cannot reach."""
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


def machine(device, dtype, descriptions, source=None):
    """Where, when and with what a study ran: device, CPU, versions, the
    commit of the tree `source` (default: the working directory; "-dirty"
    when the run's code is not the commit's), the command line and the
    models' descriptions."""
    import numpy
    try:
        import torchvision
        tv = torchvision.__version__
    except ImportError:
        tv = None
    cpu = None
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f
                       if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    git = None
    try:
        git = subprocess.run(["git", "-C", source or os.getcwd(), "describe",
                              "--always", "--dirty"], capture_output=True,
                             text=True, check=True).stdout.strip()
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
