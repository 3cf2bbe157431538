"""rt.remat on a DistributedDataParallel model (run by ctest as
python.distributed): two processes with gloo on the CPU train a small
network with batch norm (buffers broadcast from rank 0) and dropout, on
different batches per rank, beside plain DDP from the same weights and
generator states; after each of 3 steps, one of them under no_sync()
(gradient accumulation), every rank's gradients, losses, buffers and
parameters equal plain DDP's bit for bit, whether the gradients were
reduced inside the program as it finished them (step 1) or after it
(step 3, onto accumulated gradients). FSDP (fully_shard) and
DataParallel are refused in one line.
"""

import json
import os
import socket
import tempfile

from conftest import require_modules

torch, = require_modules("torch")
nn = torch.nn

import pytest

import rematbench as rb
import rematbench.torch as rt


class Net(nn.Module):

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(),
            *[layer for _ in range(4) for layer in
              (nn.Conv2d(6, 6, 3, padding=1), nn.Tanh())],
            nn.Dropout(0.2),
            nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(24, 5))

    def forward(self, x):
        return self.body(x)


def worker(rank, world, port, out_dir):
    import copy
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank, world_size=world)
    torch.manual_seed(0)
    net = Net()
    plain, planned = DDP(copy.deepcopy(net)), DDP(net)
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(100 + rank)
    batches = [(torch.randn(4, 3, 16, 16, generator=g),
                torch.randint(5, (4,), generator=g)) for _ in range(3)]
    # Count the gradients the program reduces as it finishes them.
    from rematbench.torch import distributed
    started = []
    start = distributed.GradientReducer.start
    distributed.GradientReducer.start = \
        lambda self, g: started.append(g.numel()) or start(self, g)
    # Each rank plans with other algorithms: their programs finish the
    # gradients in other orders, and must still reduce them in one.
    train_step = rt.remat(planned, loss_fn, budget=0.8, timeout=3,
                          algorithms=[["twremat", "checkpoint_last"],
                                      ["dtr", "chen_greedy"]][rank])
    opts = [torch.optim.SGD(m.parameters(), lr=0.1)
            for m in (plain, planned)]
    same, losses = [], []
    for k, (x, y) in enumerate(batches):
        accumulate = k == 1  # step 2 accumulates, step 3 synchronizes
        got = []
        for m, opt in zip((plain, planned), opts):
            torch.manual_seed(1000 + 10 * k + rank)
            with (m.no_sync() if accumulate else _nothing()):
                if m is plain:
                    loss = loss_fn(m(x), y)
                    loss.backward()
                else:
                    loss = train_step(x, y)
            got.append((loss.detach(), [p.grad.clone()
                                        for p in m.parameters()],
                        [b.clone() for b in m.buffers()]))
            if not accumulate:
                opt.step()
                opt.zero_grad()
        (la, ga, ba), (lb, gb, bb) = got
        losses.append([float(la), float(lb)])
        same.append(bool(torch.equal(la, lb)) and
                    all(torch.equal(a, b) for a, b in zip(ga, gb)) and
                    all(torch.equal(a, b) for a, b in zip(ba, bb)))
    ((plan,),) = train_step.plans.values()
    params_equal = all(torch.equal(a, b) for a, b in
                       zip(plain.parameters(), planned.parameters()))
    # The gradients were averaged: the ranks' parameters agree.
    flat = torch.cat([p.detach().reshape(-1) for p in planned.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    ranks_agree = all(torch.equal(gathered[0], t) for t in gathered)
    # FSDP gathers and reshards parameters in hooks a plan's program does
    # not run: refused in one line.
    from torch.distributed.fsdp import fully_shard
    try:
        rt.plan(fully_shard(Net()), batches[0], loss_fn, budget=0.8)
        fsdp = "planned"
    except rb.Error as e:
        fsdp = str(e)
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump({"same": same, "losses": losses, "started": started,
                   "algorithm": plan.algorithm,
                   "parameters": sum(1 for _ in net.parameters()),
                   "params_equal": params_equal,
                   "ranks_agree": ranks_agree, "fsdp": fsdp}, f)
    dist.destroy_process_group()


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ddp_gradients_equal_plain_ddp():
    import torch.multiprocessing as mp
    world = 2
    with tempfile.TemporaryDirectory() as out:
        mp.spawn(worker, args=(world, free_port(), out), nprocs=world)
        results = [json.load(open(os.path.join(out, f"rank{r}.json")))
                   for r in range(world)]
    for r in results:
        assert r["same"] == [True, True, True], r
        assert r["params_equal"] and r["ranks_agree"], r
        # Step 1 (no gradient held before it) reduced every gradient inside
        # the program; step 3 (after accumulating) after it.
        assert len(r["started"]) == r["parameters"], r
        assert r["fsdp"].startswith("plan: ") and "(FSDP) is not " \
            "supported" in r["fsdp"] and "\n" not in r["fsdp"], r["fsdp"]
    assert results[0]["algorithm"] != results[1]["algorithm"]
    # The ranks trained on different batches: their losses differ.
    assert results[0]["losses"][0][0] != results[1]["losses"][0][0]


def test_other_wrappers_are_refused():
    net = Net()
    x, y = torch.randn(2, 3, 8, 8), torch.randint(5, (2,))
    with pytest.raises(rb.Error, match="DataParallel is not supported"):
        rt.plan(nn.DataParallel(net), (x, y), nn.CrossEntropyLoss(),
                budget=0.5)
