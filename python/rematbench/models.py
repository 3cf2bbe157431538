"""The models scripts/export_torch.py traces and rematbench.torch.replay
rebuilds: the ones defined here (UNet, PSPNet, Seq2Seq), torchvision's,
the traced training step (TrainStep) and the command-line options that pick
one. Kept apart from the tracer so that the replayer rebuilds exactly the
model an export was made from (same options, same seed, same device) without
importing the tracing machinery twice, and so that a new model is added in
one place. The studies' models are here too (rematbench.torch.options
builds them at the studies' sizes): their U-Net is UNet, their GPT-2 and
ViT-B/16 sequences of blocks (GPTEmbed, GPTBlock, GPTHead; ViTStem,
ViTHead).
"""

import argparse
import math
import shlex

import torch
import torch.nn as nn
import torch.nn.functional as F

import torchvision



class UNet(nn.Module):
    """A small U-Net: padded 3x3 conv-bn-relu pairs, max-pool down,
    transposed-conv up, concatenated skips."""

    def __init__(self, levels=4, base=16, in_ch=3, classes=2):
        super().__init__()

        def block(cin, cout):
            return nn.Sequential(
                nn.Conv2d(cin, cout, 3, padding=1, bias=False),
                nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                nn.Conv2d(cout, cout, 3, padding=1, bias=False),
                nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

        chans = [base * 2**i for i in range(levels)]
        self.down = nn.ModuleList()
        cin = in_ch
        for c in chans:
            self.down.append(block(cin, c))
            cin = c
        self.pool = nn.MaxPool2d(2)
        self.up = nn.ModuleList()
        self.dec = nn.ModuleList()
        for c in reversed(chans[:-1]):
            self.up.append(nn.ConvTranspose2d(cin, c, 2, stride=2))
            self.dec.append(block(2 * c, c))
            cin = c
        self.head = nn.Conv2d(cin, classes, 1)

    def forward(self, x):
        skips = []
        for i, blk in enumerate(self.down):
            x = blk(x)
            if i + 1 < len(self.down):
                skips.append(x)
                x = self.pool(x)
        for up, dec in zip(self.up, self.dec):
            x = dec(torch.cat([up(x), skips.pop()], dim=1))
        return self.head(x)


class PSPNet(nn.Module):
    """PSPNet (Zhao et al. 2017): a dilated torchvision ResNet (output stride
    8), pyramid pooling with bins 1, 2, 3, 6, concat, a 3x3 head and
    bilinear upsampling to the input size. No auxiliary loss."""

    def __init__(self, backbone="resnet50", classes=21, bins=(1, 2, 3, 6)):
        super().__init__()
        res = getattr(torchvision.models, backbone)(
            weights=None,
            replace_stride_with_dilation=None
            if backbone in ("resnet18", "resnet34") else [False, True, True])
        self.stem = nn.Sequential(res.conv1, res.bn1, res.relu, res.maxpool)
        self.layers = nn.Sequential(res.layer1, res.layer2, res.layer3,
                                    res.layer4)
        feat = res.fc.in_features
        red = feat // len(bins)
        self.stages = nn.ModuleList(
            nn.Sequential(nn.AdaptiveAvgPool2d(b),
                          nn.Conv2d(feat, red, 1, bias=False),
                          nn.BatchNorm2d(red), nn.ReLU(inplace=True))
            for b in bins)
        self.head = nn.Sequential(
            nn.Conv2d(feat + red * len(bins), 512, 3, padding=1, bias=False),
            nn.BatchNorm2d(512), nn.ReLU(inplace=True),
            nn.Conv2d(512, classes, 1))

    def forward(self, x):
        size = x.shape[-2:]
        f = self.layers(self.stem(x))
        pyramid = [f] + [
            F.interpolate(s(f), size=f.shape[-2:], mode="bilinear",
                          align_corners=False) for s in self.stages
        ]
        out = self.head(torch.cat(pyramid, dim=1))
        return F.interpolate(out, size=size, mode="bilinear",
                             align_corners=False)


class Seq2Seq(nn.Module):
    """torch.nn.Transformer (post-norm encoder-decoder) with a linear head
    to a vocabulary; source and target are given as embeddings."""

    def __init__(self, d_model, heads, layers, ffn, vocab, dropout):
        super().__init__()
        self.transformer = nn.Transformer(
            d_model=d_model, nhead=heads, num_encoder_layers=layers,
            num_decoder_layers=layers, dim_feedforward=ffn, dropout=dropout)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, src, tgt):
        return self.head(self.transformer(src, tgt))


class Mlp(nn.Module):
    """`depth` Linear(width, width) + ReLU layers and a linear head: a
    model whose every tensor size is known by hand (the replay tests')."""

    def __init__(self, width, depth, classes):
        super().__init__()
        layers = []
        for _ in range(depth):
            layers += [nn.Linear(width, width), nn.ReLU()]
        self.body = nn.Sequential(*layers, nn.Linear(width, classes))

    def forward(self, x):
        return self.body(x)


class TinyResNet(nn.Module):
    """A 3x3 conv-bn-relu stem, `depth` torchvision BasicBlocks of `width`
    channels, global average pooling and a linear head: a residual network
    small enough for the exact solvers (the replay tests')."""

    def __init__(self, width, depth, classes):
        super().__init__()
        from torchvision.models.resnet import BasicBlock
        self.stem = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1, bias=False),
            nn.BatchNorm2d(width), nn.ReLU(inplace=True))
        self.blocks = nn.Sequential(*[BasicBlock(width, width)
                                      for _ in range(depth)])
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(width, classes)

    def forward(self, x):
        x = self.pool(self.blocks(self.stem(x)))
        return self.fc(torch.flatten(x, 1))


class GPTBlock(nn.Module):
    """A GPT-2 decoder block: pre-norm causal self-attention and MLP, each
    with a residual connection and dropout `p`."""

    def __init__(self, d, heads, p):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.attn_drop, self.resid_drop = nn.Dropout(p), nn.Dropout(p)
        self.mlp_drop = nn.Dropout(p)

    def forward(self, x):
        b, t, d = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q = q.view(b, t, h, d // h).transpose(1, 2)
        k = k.view(b, t, h, d // h).transpose(1, 2)
        v = v.view(b, t, h, d // h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // h))
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (self.attn_drop(att) @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.resid_drop(self.proj(y))
        x = x + self.mlp_drop(self.out(F.gelu(self.fc(self.ln2(x)))))
        return x


class GPTEmbed(nn.Module):
    """GPT-2's token and position embeddings, with dropout `p`."""

    def __init__(self, vocab, seq, d, p):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.drop = nn.Dropout(p)

    def forward(self, idx):
        t = idx.shape[1]
        pos = torch.arange(t, device=idx.device)
        return self.drop(self.tok(idx) + self.pos(pos))


class GPTHead(nn.Module):
    """GPT-2's final layer norm and vocabulary projection, the logits
    flattened over batch and sequence."""

    def __init__(self, d, vocab):
        super().__init__()
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, x):
        return self.head(self.ln(x)).flatten(0, 1)


class ViTStem(nn.Module):
    """torchvision's VisionTransformer up to its encoder layers."""

    def __init__(self, vit):
        super().__init__()
        self.vit = vit

    def forward(self, x):
        v = self.vit
        x = v._process_input(x)
        cls = v.class_token.expand(x.shape[0], -1, -1)
        x = torch.cat([cls, x], dim=1) + v.encoder.pos_embedding
        return v.encoder.dropout(x)


class ViTHead(nn.Module):
    """torchvision's VisionTransformer after its encoder layers."""

    def __init__(self, vit):
        super().__init__()
        self.ln, self.heads = vit.encoder.ln, vit.heads

    def forward(self, x):
        return self.heads(self.ln(x)[:, 0])


TORCHVISION_CLASSIFIERS = ("resnet18", "resnet34", "resnet50", "resnet101",
                           "resnet152", "vgg11", "vgg16", "vgg19",
                           "densenet121", "densenet161", "googlenet",
                           "vit_b_16")
MODELS = TORCHVISION_CLASSIFIERS + ("deeplabv3_resnet50", "unet", "pspnet",
                                    "transformer", "mlp", "resnet_tiny")


class TrainStep(nn.Module):
    """The traced module: model and loss. The loss is a leaf module so that
    the module granularity has one loss node."""

    def __init__(self, model, key=None):
        super().__init__()
        self.model = model
        self.loss = nn.CrossEntropyLoss()
        self.key = key

    def forward(self, *inputs):
        *xs, target = inputs
        out = self.model(*xs)
        if self.key is not None:
            out = out[self.key]
        if out.dim() == 3:  # transformer: (seq, batch, vocab)
            out = out.reshape(-1, out.shape[-1])
            target = target.reshape(-1)
        return self.loss(out, target)


DEFAULT_CLASSES = {"unet": 2, "pspnet": 21, "deeplabv3_resnet50": 21,
                   "mlp": 3, "resnet_tiny": 10}

# The seed every export and replay builds its model and batch with: an
# export's parameters and batch are a function of its options alone.
SEED = 0


def add_model_args(p):
    """The options that define the model and the batch (also those an
    export's provenance records, so a replay rebuilds the same step)."""
    p.add_argument("--model", required=True, choices=MODELS)
    p.add_argument("--batch", type=int, default=2,
                   help="batch size (>= 2: batch norm trains)")
    p.add_argument("--image", type=int, default=224, help="image side")
    p.add_argument("--classes", type=int, default=None,
                   help="classes (vocabulary for the transformer); default "
                   "1000, 21 for pspnet and deeplabv3, 2 for unet")
    p.add_argument("--levels", type=int, default=4, help="unet levels")
    p.add_argument("--base", type=int, default=16, help="unet base channels")
    p.add_argument("--backbone", default="resnet50",
                   choices=("resnet18", "resnet34", "resnet50", "resnet101"),
                   help="pspnet backbone")
    p.add_argument("--d-model", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--layers", type=int, default=6,
                   help="transformer encoder and decoder layers (each)")
    p.add_argument("--ffn", type=int, default=0, help="0: 4 x d-model")
    p.add_argument("--seq", type=int, default=32,
                   help="transformer source and target length")
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--width", type=int, default=8,
                   help="mlp: units per layer (and input features); "
                   "resnet_tiny: channels")
    p.add_argument("--depth", type=int, default=2,
                   help="mlp: hidden layers; resnet_tiny: residual blocks")


MODEL_ARGS = ("model", "batch", "image", "classes", "levels", "base",
              "backbone", "d_model", "heads", "layers", "ffn", "seq",
              "dropout", "width", "depth")


def finish_model_args(p, args):
    if args.batch < 2:
        p.error("--batch must be at least 2 (training-mode batch norm)")
    if args.classes is None:
        args.classes = DEFAULT_CLASSES.get(args.model, 1000)
    return args


def model_args_dict(args):
    return {k: getattr(args, k) for k in MODEL_ARGS}


class _Refuse(argparse.ArgumentParser):

    def error(self, message):
        raise ValueError(message)


def model_args_from_provenance(prov):
    """The model options of an export: its `model_args` (exports since the
    replayer) or, for older files, the options of its recorded command.
    Raises ValueError when neither names a model this module can build."""
    p = _Refuse(add_help=False)
    add_model_args(p)
    if isinstance(prov.get("model_args"), dict):
        d = prov["model_args"]
        unknown = set(d) - set(MODEL_ARGS)
        if unknown:
            raise ValueError(f"unknown model option(s) {sorted(unknown)}")
        argv = []
        for k, v in d.items():
            if v is not None:
                argv += ["--" + k.replace("_", "-"), str(v)]
        args, _ = p.parse_known_args(argv)
    elif isinstance(prov.get("command"), str):
        args, _ = p.parse_known_args(shlex.split(prov["command"])[1:])
    else:
        raise ValueError("provenance has neither model_args nor command")
    return finish_model_args(p, args)


def size_suffix(args):
    if args.model == "transformer":
        return (f"l{args.layers}_d{args.d_model}_h{args.heads}_s{args.seq}"
                f"_b{args.batch}")
    if args.model == "unet":
        return f"l{args.levels}_c{args.base}_b{args.batch}_i{args.image}"
    if args.model == "pspnet":
        return f"{args.backbone}_b{args.batch}_i{args.image}"
    if args.model == "mlp":
        return f"w{args.width}_d{args.depth}_b{args.batch}"
    if args.model == "resnet_tiny":
        return f"w{args.width}_d{args.depth}_b{args.batch}_i{args.image}"
    return f"b{args.batch}_i{args.image}"


def build(args, device="cpu"):
    """Returns (TrainStep, inputs tuple) for the options `args`, built on
    the CPU from SEED (so that the parameters and the batch are the same on
    every device) and then moved to `device`."""
    torch.manual_seed(SEED)
    step, inputs = _build(args)
    return step.to(device), tuple(t.to(device) for t in inputs)


def _build(args):
    n, h = args.batch, args.image
    img = torch.randn(n, 3, h, h)
    name = args.model
    if name in TORCHVISION_CLASSIFIERS:
        kw = {"weights": None, "num_classes": args.classes}
        if name == "googlenet":
            kw.update(aux_logits=False, init_weights=True)
        if name == "vit_b_16":
            kw["image_size"] = h
        model = getattr(torchvision.models, name)(**kw)
        return TrainStep(model), (img, torch.randint(args.classes, (n,)))
    seg_target = torch.randint(args.classes, (n, h, h))
    if name == "deeplabv3_resnet50":
        model = torchvision.models.segmentation.deeplabv3_resnet50(
            weights=None, weights_backbone=None, num_classes=args.classes,
            aux_loss=False)
        return TrainStep(model, key="out"), (img, seg_target)
    if name == "unet":
        model = UNet(levels=args.levels, base=args.base,
                     classes=args.classes)
        return TrainStep(model), (img, seg_target)
    if name == "pspnet":
        model = PSPNet(backbone=args.backbone, classes=args.classes)
        return TrainStep(model), (img, seg_target)
    if name == "transformer":
        d, s = args.d_model, args.seq
        model = Seq2Seq(d, args.heads, args.layers, args.ffn or 4 * d,
                        args.classes, args.dropout)
        src, tgt = torch.randn(s, n, d), torch.randn(s, n, d)
        return TrainStep(model), (src, tgt,
                                  torch.randint(args.classes, (s, n)))
    if name == "mlp":
        model = Mlp(args.width, args.depth, args.classes)
        return TrainStep(model), (torch.randn(n, args.width),
                                  torch.randint(args.classes, (n,)))
    if name == "resnet_tiny":
        model = TinyResNet(args.width, args.depth, args.classes)
        return TrainStep(model), (img, torch.randint(args.classes, (n,)))
    raise ValueError(f"unknown model '{name}'")
