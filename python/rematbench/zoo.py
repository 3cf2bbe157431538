"""A zoo of models nobody here wrote, built from small configs with random
weights (as PyTorch's own benchmark suites build them; nothing is
downloaded): Hugging Face transformers, timm, torchvision, PEFT adapters
and torch.nn's recurrent layers, each with an example batch as its users
pass it. The model-zoo test trains some of them under a plan; the study
bench/studies/model_zoo.py all of them.

    model, batch = zoo.build("llama")   # batch: a Batch
    loss = model(*batch.args, **batch.kwargs)...

Token batches are padded (the second sequence's last quarter masked out)
wherever the model takes an attention mask.
"""

import dataclasses
import os

import torch
import torch.nn as nn

VOCAB, SEQ, BATCH = 128, 16, 2
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


def _tokens(g, labels=True, mask=True):
    ids = torch.randint(VOCAB, (BATCH, SEQ), generator=g)
    kw = {"input_ids": ids}
    if mask:
        m = torch.ones(BATCH, SEQ, dtype=torch.long)
        m[1, SEQ - SEQ // 4:] = 0
        kw["attention_mask"] = m
    if labels:
        kw["labels"] = ids
    return kw


def _lm(cls_name, config_name, **config):
    def build(g):
        import transformers
        cfg = getattr(transformers, config_name)(**config)
        return getattr(transformers, cls_name)(cfg), Batch(kwargs=_tokens(g))
    return build


_DECODER = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128,
                num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, max_position_embeddings=64)


def _classifier(cls_name, config_name, **config):
    def build(g):
        import transformers
        cfg = getattr(transformers, config_name)(num_labels=3, **config)
        kw = _tokens(g, labels=False)
        kw["labels"] = torch.randint(3, (BATCH,), generator=g)
        return getattr(transformers, cls_name)(cfg), Batch(kwargs=kw)
    return build


_ENCODER = dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2,
                num_attention_heads=4, intermediate_size=128,
                max_position_embeddings=64)


def _t5(g):
    import transformers
    cfg = transformers.T5Config(vocab_size=VOCAB, d_model=64, d_kv=16,
                                d_ff=128, num_layers=2, num_heads=4,
                                decoder_start_token_id=0)
    kw = _tokens(g, labels=False)
    kw["labels"] = torch.randint(VOCAB, (BATCH, SEQ // 2), generator=g)
    return transformers.T5ForConditionalGeneration(cfg), Batch(kwargs=kw)


def _hf_vit(g):
    import transformers
    cfg = transformers.ViTConfig(image_size=32, patch_size=8, hidden_size=64,
                                 num_hidden_layers=2, num_attention_heads=4,
                                 intermediate_size=128, num_labels=5)
    kw = {"pixel_values": torch.randn(BATCH, 3, 32, 32, generator=g),
          "labels": torch.randint(5, (BATCH,), generator=g)}
    return transformers.ViTForImageClassification(cfg), Batch(kwargs=kw)


def _lora(g):
    import peft
    model, batch = ZOO["llama"](g)
    config = peft.LoraConfig(r=4, lora_alpha=8,
                             target_modules=["q_proj", "v_proj"])
    return peft.get_peft_model(model, config), batch


def _images(g, size=32, classes=5):
    return Batch(args=(torch.randn(BATCH, 3, size, size, generator=g),
                       torch.randint(classes, (BATCH,), generator=g)),
                 loss_fn=nn.CrossEntropyLoss())


def _timm(name, size=32, **kw):
    def build(g):
        import timm
        return timm.create_model(name, pretrained=False, num_classes=5,
                                 **kw), _images(g, size)
    return build


def _torchvision(name, size=32, **kw):
    def build(g):
        import torchvision
        return getattr(torchvision.models, name)(weights=None,
                                                 num_classes=5,
                                                 **kw), _images(g, size)
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


def _recurrent(g):
    return Recurrent(), Batch(
        args=(torch.randint(50, (4, 24), generator=g),
              torch.randint(5, (4,), generator=g)),
        loss_fn=nn.CrossEntropyLoss())


ZOO = {
    "gpt2": _lm("GPT2LMHeadModel", "GPT2Config", vocab_size=VOCAB, n_embd=64,
                n_layer=2, n_head=4, n_positions=64),
    "llama": _lm("LlamaForCausalLM", "LlamaConfig", **_DECODER),
    "qwen2": _lm("Qwen2ForCausalLM", "Qwen2Config", **_DECODER),
    "gemma": _lm("GemmaForCausalLM", "GemmaConfig", head_dim=16, **_DECODER),
    "mistral": _lm("MistralForCausalLM", "MistralConfig", **_DECODER),
    "opt": _lm("OPTForCausalLM", "OPTConfig", vocab_size=VOCAB,
               hidden_size=64, ffn_dim=128, num_hidden_layers=2,
               num_attention_heads=4, max_position_embeddings=64,
               word_embed_proj_dim=64),
    "bert": _classifier("BertForSequenceClassification", "BertConfig",
                        **_ENCODER),
    "roberta": _classifier("RobertaForSequenceClassification",
                           "RobertaConfig", pad_token_id=1,
                           **dict(_ENCODER, max_position_embeddings=66)),
    "distilbert": _classifier("DistilBertForSequenceClassification",
                              "DistilBertConfig", vocab_size=VOCAB, dim=64,
                              n_layers=2, n_heads=4, hidden_dim=128,
                              max_position_embeddings=64),
    "t5": _t5,
    "hf_vit": _hf_vit,
    "llama_lora": _lora,
    "convnext": _timm("convnext_atto"),
    "swin": _timm("swin_tiny_patch4_window7_224", size=56, img_size=56,
                  embed_dim=24, depths=(1, 1, 1, 1), num_heads=(1, 1, 2, 2)),
    "efficientnet": _timm("efficientnet_b0"),
    "resnet_d": _timm("resnet18d"),
    "timm_vit": _timm("vit_tiny_patch16_224", img_size=32, patch_size=8),
    "mobilenetv3": _timm("mobilenetv3_small_050"),
    "resnet18": _torchvision("resnet18"),
    "mobilenet_v2": _torchvision("mobilenet_v2"),
    "recurrent": _recurrent,
}


def build(name, seed=0):
    """(model in training mode, Batch) of zoo model `name`, its weights
    and batch drawn from `seed`."""
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed + 1)
    model, batch = ZOO[name](g)
    return model.train(), batch
