#!/usr/bin/env python3
"""Trains a small ResNet (torchvision's ResNet-18, 10 classes, 64x64 images,
batch 16) for a few SGD steps on two alternating batches under 60% of its
NoRemat activation memory (the memory lower bound, set by what convolutions
allocate inside them, is 55%), beside plain training from the same weights and
batches, on the CPU:

  .venv/bin/python python/examples/resnet_budget.py

Prints the plan's table, both loss curves, the largest gradient difference
and what plan.replay() measured. Exit status 1 if the curves differ.
"""

import sys
import time

import torch
import torch.nn as nn
import torchvision

import rematbench.torch as rt

STEPS, BATCH, IMAGE, CLASSES = 6, 16, 64, 10


def model():
    torch.manual_seed(0)
    return torchvision.models.resnet18(num_classes=CLASSES)


def data():
    g = torch.Generator().manual_seed(1)
    two = [(torch.randn(BATCH, 3, IMAGE, IMAGE, generator=g),
            torch.randint(CLASSES, (BATCH,), generator=g)) for _ in range(2)]
    return [two[i % 2] for i in range(STEPS)]


def train(net, step):
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    losses, grads = [], []
    for x, y in data():
        opt.zero_grad()
        losses.append(float(step(x, y)))
        grads.append([p.grad.clone() for p in net.parameters()])
        opt.step()
    return losses, grads


def main():
    torch.set_num_threads(1)
    loss_fn = nn.CrossEntropyLoss()

    plain_net = model()

    def plain_step(x, y):
        loss = loss_fn(plain_net(x), y)
        loss.backward()
        return loss

    plain, plain_grads = train(plain_net, plain_step)

    net = model()
    t0 = time.perf_counter()
    plan = rt.plan(net, data()[0], loss_fn, budget=0.6)  # 60% of NoRemat
    print(f"plan: {time.perf_counter() - t0:.1f} s (tracing and timing the "
          f"step {plan.trace_seconds:.1f} s)")
    print(plan)
    planned, planned_grads = train(net, plan.step)

    worst = max((a - b).abs().max().item()
                for ga, gb in zip(plain_grads, planned_grads)
                for a, b in zip(ga, gb))
    print(f"plain loss:   {' '.join(f'{x:.6f}' for x in plain)}")
    print(f"planned loss: {' '.join(f'{x:.6f}' for x in planned)}")
    print(f"largest gradient difference over {STEPS} steps: {worst}")
    r = plan.replay()
    print(f"replay ({plan.algorithm}): activation peak measured "
          f"{r['measured_peak_bytes']:,} bytes (simulated "
          f"{r['simulated_peak_bytes']:,}; NoRemat measured "
          f"{r['baseline_measured_peak_bytes']:,}); step "
          f"{r['step_seconds'] * 1e3:.0f} ms vs NoRemat "
          f"{r['baseline_seconds'] * 1e3:.0f} ms (overhead measured "
          f"{r['ratio_to_baseline']:.2f}, predicted "
          f"{r['predicted_overhead']:.2f})")
    return 0 if plain == planned else 1


if __name__ == "__main__":
    sys.exit(main())
