#!/usr/bin/env python3
"""rematbench.torch.remat: a training loop under an activation-memory
budget, changed in one line. Trains a small GPT-style decoder with dropout
(4 layers, d 64, sequence 64, batch 4) for 5 AdamW steps within 40% of
its NoRemat activation memory, beside plain training from the same
weights, batches and RNG seed, on the CPU:

  .venv/bin/python python/examples/one_line.py            # eager program
  .venv/bin/python python/examples/one_line.py --compile  # inductor

Prints both loss curves and, for the last step, the allocator-level
activation peak (rematbench.torch.measure) of plain training and of the plan.
Exit status 1 if the eager curves differ (compiled: if they differ by more
than 1e-4).
"""

import math
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import rematbench.torch as rt
from rematbench.torch import measure


class Block(nn.Module):

    def __init__(self, d=64, heads=4, p=0.1):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.drop = nn.Dropout(p)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2)
                   for z in self.qkv(self.ln1(x)).split(d, dim=2))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        att = self.drop(att.masked_fill(~mask, float("-inf")).softmax(-1))
        x = x + self.drop(self.proj((att @ v).transpose(1, 2)
                                    .reshape(b, t, d)))
        return x + self.drop(self.out(F.gelu(self.fc(self.ln2(x)))))


class Decoder(nn.Module):

    def __init__(self, vocab=256, seq=64, d=64, layers=4):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = nn.Sequential(*[Block(d) for _ in range(layers)])
        self.head = nn.Linear(d, vocab)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        return self.head(self.blocks(x)).flatten(0, 1)


def batches(n=5):
    g = torch.Generator().manual_seed(1)
    return [(torch.randint(256, (4, 64), generator=g),
             torch.randint(256, (4 * 64,), generator=g)) for _ in range(n)]


def train(planned, compile=False):
    torch.manual_seed(0)
    model = Decoder()
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    # The one line: a training step within 40% of the NoRemat activation
    # peak (or budget="8MiB", or bytes).
    train_step = rt.remat(model, loss_fn, budget=0.4, compile=compile,
                          algorithms=["rotor", "dtr", "chen_greedy",
                                      "twremat"])
    torch.manual_seed(7)
    losses = []
    for x, y in batches():
        opt.zero_grad()
        if planned:
            loss = train_step(x, y)
        else:
            loss = loss_fn(model(x), y)
            loss.backward()
        losses.append(loss.item() if not loss.requires_grad else
                      loss.detach().item())
        opt.step()
    x, y = batches()[-1]
    step = (lambda: train_step(x, y)) if planned else \
        (lambda: loss_fn(model(x), y).backward())
    peak = measure.measure_step(step, model, repeats=3, warmup=1)
    return losses, peak, train_step


def main():
    compile = "--compile" in sys.argv
    torch.set_num_threads(1)
    plain, plain_peak, _ = train(False)
    ours, our_peak, train_step = train(True, compile)
    ((plan,),) = train_step.plans.values()
    print(f"plan: {plan.algorithm}, budget {plan.budget_bytes} bytes "
          f"(40% of the NoRemat peak {plan.noremat_peak_bytes}), "
          f"predicted peak {plan.predicted_peak_bytes}, predicted overhead "
          f"{plan.solution.overhead:.3f}{', inductor' if compile else ''}")
    print("plain loss:   " + " ".join(f"{v:.6f}" for v in plain))
    print("planned loss: " + " ".join(f"{v:.6f}" for v in ours))
    print(f"activation peak measured at the allocator: plain "
          f"{plain_peak['measured_peak_bytes']:,} bytes, planned "
          f"{our_peak['measured_peak_bytes']:,} bytes; step: plain "
          f"{plain_peak['step_seconds'] * 1e3:.1f} ms, planned "
          f"{our_peak['step_seconds'] * 1e3:.1f} ms")
    worst = max(abs(a - b) for a, b in zip(plain, ours))
    ok = worst == 0 if not compile else worst < 1e-4
    print(f"largest loss difference: {worst:.3g}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
