"""A zoo of models nobody here wrote, built from small configs with random
weights (as PyTorch's own benchmark suites build them; nothing is
downloaded): Hugging Face transformers, timm, torchvision, PEFT adapters
and torch.nn's recurrent layers, each with an example batch as its users
pass it. The model-zoo test trains some of them under a plan; the study
bench/studies/model_zoo.py all of them.

    model, batch = zoo.build("llama")   # batch: a Batch
    loss = model(*batch.args, **batch.kwargs)...

Token batches are padded (the second sequence's last quarter masked out)
wherever the model takes an attention mask. Two sizes: "test" (the tests':
two layers, width 64, sequence 16, 32x32 images; a step takes
milliseconds), "bench" (four layers, width 256, sequence 128, 64x64
images, batch 4: big enough on the CPU that a step's time is the
model's, not Python's) and "gpu" (decoders of about a billion
parameters at sequence 1024).
"""

import dataclasses
import os

import torch
import torch.nn as nn

VOCAB, SEQ, BATCH = 128, 16, 2  # the "test" size's


@dataclasses.dataclass(frozen=True)
class Size:
    """What a zoo model is built at: its batch, sequence length,
    vocabulary, width and layers (transformers models), image side."""
    batch: int = BATCH
    seq: int = SEQ
    vocab: int = VOCAB
    width: int = 64
    layers: int = 2
    image: int = 32
    heads: int = 4


SIZES = {"test": Size(),
         "bench": Size(batch=4, seq=128, vocab=1024, width=256, layers=4,
                       image=64),
         # A Llama of about a billion parameters (TinyLlama's shape, with
         # an MLP twice the width): what the GPU run builds at this size.
         "gpu": Size(batch=8, seq=1024, vocab=32000, width=2048, layers=22,
                     image=224, heads=32)}
# Every model is built from a config: nothing may reach the hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")


@dataclasses.dataclass
class Batch:
    """A training step's batch: `args` and `kwargs` as the model (or the
    loss function, for `loss_fn`) takes them. With `loss_fn`, a step is
    loss_fn(model(*args[:-1]), args[-1]); without, the model returns its
    own loss (transformers models given labels)."""
    args: tuple = ()
    kwargs: dict = dataclasses.field(default_factory=dict)
    loss_fn: object = None

    def plain_step(self, model):
        """Plain training's forward and backward."""
        if self.loss_fn is not None:
            loss = self.loss_fn(model(*self.args[:-1]), self.args[-1])
        else:
            out = model(*self.args, **self.kwargs)
            loss = out.loss if hasattr(out, "loss") else out
        loss.backward()
        return loss

    @property
    def example(self):
        """The example batch as rt.plan takes it."""
        return self.kwargs if self.kwargs else self.args


def _tokens(g, s, labels=True, mask=True):
    ids = torch.randint(s.vocab, (s.batch, s.seq), generator=g)
    kw = {"input_ids": ids}
    if mask:
        m = torch.ones(s.batch, s.seq, dtype=torch.long)
        m[1, s.seq - s.seq // 4:] = 0
        kw["attention_mask"] = m
    if labels:
        kw["labels"] = ids
    return kw


def _lm(cls_name, config_name, config):
    """A transformers model of `config(size)`'s config on tokens."""
    def build(g, s):
        import transformers
        cfg = getattr(transformers, config_name)(**config(s))
        return getattr(transformers, cls_name)(cfg), \
            Batch(kwargs=_tokens(g, s))
    return build


def _decoder(s, **extra):
    return dict(vocab_size=s.vocab, hidden_size=s.width,
                intermediate_size=2 * s.width, num_hidden_layers=s.layers,
                num_attention_heads=s.heads,
                num_key_value_heads=s.heads // 2,
                max_position_embeddings=4 * s.seq, **extra)


def _classifier(cls_name, config_name, config):
    def build(g, s):
        import transformers
        cfg = getattr(transformers, config_name)(num_labels=3, **config(s))
        kw = _tokens(g, s, labels=False)
        kw["labels"] = torch.randint(3, (s.batch,), generator=g)
        return getattr(transformers, cls_name)(cfg), Batch(kwargs=kw)
    return build


def _encoder(s, **extra):
    return dict(dict(vocab_size=s.vocab, hidden_size=s.width,
                     num_hidden_layers=s.layers, num_attention_heads=4,
                     intermediate_size=2 * s.width,
                     max_position_embeddings=4 * s.seq), **extra)


def _t5(g, s):
    import transformers
    cfg = transformers.T5Config(vocab_size=s.vocab, d_model=s.width,
                                d_kv=s.width // 4, d_ff=2 * s.width,
                                num_layers=s.layers, num_heads=4,
                                decoder_start_token_id=0)
    kw = _tokens(g, s, labels=False)
    kw["labels"] = torch.randint(s.vocab, (s.batch, s.seq // 2), generator=g)
    return transformers.T5ForConditionalGeneration(cfg), Batch(kwargs=kw)


def _hf_vit(g, s):
    import transformers
    cfg = transformers.ViTConfig(image_size=s.image, patch_size=8,
                                 hidden_size=s.width,
                                 num_hidden_layers=s.layers,
                                 num_attention_heads=4,
                                 intermediate_size=2 * s.width, num_labels=5)
    kw = {"pixel_values": torch.randn(s.batch, 3, s.image, s.image,
                                      generator=g),
          "labels": torch.randint(5, (s.batch,), generator=g)}
    return transformers.ViTForImageClassification(cfg), Batch(kwargs=kw)


def _lora(g, s):
    import peft
    model, batch = ZOO["llama"](g, s)
    config = peft.LoraConfig(r=4, lora_alpha=8,
                             target_modules=["q_proj", "v_proj"])
    return peft.get_peft_model(model, config), batch


def _images(g, s, side, classes=5):
    return Batch(args=(torch.randn(s.batch, 3, side, side, generator=g),
                       torch.randint(classes, (s.batch,), generator=g)),
                 loss_fn=nn.CrossEntropyLoss())


def _timm(name, scale=1, **kw):
    """A timm model at `scale` times the size's image side (and told that
    side where `kw` names img_size)."""
    def build(g, s):
        import timm
        side = int(s.image * scale)
        args = dict(kw, img_size=side) if "img_size" in kw else kw
        return timm.create_model(name, pretrained=False, num_classes=5,
                                 **args), _images(g, s, side)
    return build


def _torchvision(name):
    def build(g, s):
        import torchvision
        return getattr(torchvision.models, name)(weights=None,
                                                 num_classes=5), \
            _images(g, s, s.image)
    return build


class Recurrent(nn.Module):
    """An embedding, an LSTM and a GRU layer, and a linear head on the last
    step: the sequence models of torch.nn."""

    def __init__(self, vocab=50, d=32, classes=5):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.lstm = nn.LSTM(d, d, batch_first=True)
        self.gru = nn.GRU(d, d, batch_first=True)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        h, _ = self.lstm(self.emb(x))
        h, _ = self.gru(h)
        return self.head(h[:, -1])


def _recurrent(g, s):
    return Recurrent(d=s.width // 2), Batch(
        args=(torch.randint(50, (2 * s.batch, s.seq + 8), generator=g),
              torch.randint(5, (2 * s.batch,), generator=g)),
        loss_fn=nn.CrossEntropyLoss())


ZOO = {
    "gpt2": _lm("GPT2LMHeadModel", "GPT2Config", lambda s: dict(
        vocab_size=s.vocab, n_embd=s.width, n_layer=s.layers, n_head=4,
        n_positions=4 * s.seq)),
    "llama": _lm("LlamaForCausalLM", "LlamaConfig", _decoder),
    "qwen2": _lm("Qwen2ForCausalLM", "Qwen2Config", _decoder),
    "gemma": _lm("GemmaForCausalLM", "GemmaConfig",
                 lambda s: _decoder(s, head_dim=s.width // 4)),
    "mistral": _lm("MistralForCausalLM", "MistralConfig", _decoder),
    "opt": _lm("OPTForCausalLM", "OPTConfig", lambda s: dict(
        vocab_size=s.vocab, hidden_size=s.width, ffn_dim=2 * s.width,
        num_hidden_layers=s.layers, num_attention_heads=4,
        max_position_embeddings=4 * s.seq, word_embed_proj_dim=s.width)),
    "bert": _classifier("BertForSequenceClassification", "BertConfig",
                        _encoder),
    "roberta": _classifier(
        "RobertaForSequenceClassification", "RobertaConfig",
        lambda s: _encoder(s, pad_token_id=1,
                           max_position_embeddings=4 * s.seq + 2)),
    "distilbert": _classifier(
        "DistilBertForSequenceClassification", "DistilBertConfig",
        lambda s: dict(vocab_size=s.vocab, dim=s.width, n_layers=s.layers,
                       n_heads=4, hidden_dim=2 * s.width,
                       max_position_embeddings=4 * s.seq)),
    "t5": _t5,
    "hf_vit": _hf_vit,
    "llama_lora": _lora,
    "convnext": _timm("convnext_atto"),
    # Window 7 over 4-pixel patches: the side is a multiple of 56.
    "swin": _timm("swin_tiny_patch4_window7_224", scale=7 / 4, img_size=0,
                  embed_dim=24, depths=(1, 1, 1, 1), num_heads=(1, 1, 2, 2)),
    "efficientnet": _timm("efficientnet_b0"),
    "resnet_d": _timm("resnet18d"),
    "timm_vit": _timm("vit_tiny_patch16_224", img_size=0, patch_size=8),
    "mobilenetv3": _timm("mobilenetv3_small_050"),
    "resnet18": _torchvision("resnet18"),
    "mobilenet_v2": _torchvision("mobilenet_v2"),
    "recurrent": _recurrent,
}


def build(name, seed=0, size="test"):
    """(model in training mode, Batch) of zoo model `name` at `size` (a
    key of SIZES, or a Size), its weights and batch drawn from `seed`."""
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed + 1)
    model, batch = ZOO[name](g, size if isinstance(size, Size)
                             else SIZES[size])
    return model.train(), batch
