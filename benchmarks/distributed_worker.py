"""One configuration of the data-parallel benchmark, run under mpiexec (see bench_distributed.py).

Every rank trains on its B/N share of a fixed synthetic batch (throughput does
not depend on the values) for ``--steps`` timed steps after ``--warmup``;
rank 0 prints one JSON line. N comes from MPI (``PMI_SIZE``/``PMI_RANK``);
N > 1 wraps the model in Lamina's DistributedDataParallel or PyTorch's
(gloo backend), both with ``gradient_as_bucket_view=True`` (gradients are views
of the all-reduce buckets, no copy out of them; PyTorch's option and ours).
Threads: ``LAMINA_NUM_THREADS`` / ``torch.set_num_threads``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

SHAPES = {"mlp": (784,), "resnet9": (3, 32, 32)}


def lamina_side(model: str, batch: np.ndarray, labels: np.ndarray, world: int) -> tuple:
    import lamina.autograd as ag
    from lamina import nn, optim
    from lamina.models import MLP, ResNet9

    ag.manual_seed(0)
    net = MLP(784, (256, 256), 10) if model == "mlp" else ResNet9()
    ddp = None
    if world > 1:
        import lamina.distributed as dist
        from lamina.nn.parallel import DistributedDataParallel
        dist.init_process_group("mpi")
        net = ddp = DistributedDataParallel(net, gradient_as_bucket_view=True)
    opt = optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    x, y = ag.tensor(batch), ag.tensor(labels)
    loss_fn = nn.CrossEntropyLoss()

    def step() -> None:
        opt.zero_grad()
        loss_fn(net(x), y).backward()
        opt.step()

    def comm_seconds(check: bool = False) -> float:
        """Blocking all-reduce of every gradient bucket, as one step would need; with
        ``check``, each call also compares the ranks' calls first, as DDP does not."""
        if ddp is None:
            return 0.0
        import lamina.distributed as dist
        from lamina.distributed._collectives import _all_reduce
        start = time.perf_counter()
        for b in ddp._buckets:
            _all_reduce(b.flat, dist.ReduceOp.AVG, async_op=False, check=check)
        return time.perf_counter() - start

    def counters() -> tuple[float, int, int]:
        """(seconds backward was blocked on all-reduces, bytes overlapped, bytes reduced)."""
        if ddp is None:
            return 0.0, 0, 0
        return ddp.wait_seconds, ddp.overlapped_bytes, ddp.reduced_bytes

    return step, comm_seconds, counters


def torch_side(model: str, batch: np.ndarray, labels: np.ndarray, world: int, rank: int,
               port: int) -> tuple:
    import torch

    torch.manual_seed(0)
    if model == "mlp":
        from train_mnist import torch_model as mnist_model
        net = mnist_model("mlp", 256)
    else:
        from train_cifar10 import torch_model as cifar_model
        net = cifar_model("resnet9")
    if world > 1:
        import torch.distributed as tdist
        tdist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                 world_size=world)
        net = torch.nn.parallel.DistributedDataParallel(net, gradient_as_bucket_view=True)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.from_numpy(batch), torch.from_numpy(labels)

    def step() -> None:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(x), y).backward()
        opt.step()

    return step, (lambda check=False: 0.0), (lambda: (0.0, 0, 0))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--framework", choices=("lamina", "torch"), required=True)
    p.add_argument("--model", choices=tuple(SHAPES), required=True)
    p.add_argument("--batch", type=int, required=True, help="global batch B")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--port", type=int, default=29611)
    a = p.parse_args()
    world, rank = int(os.environ.get("PMI_SIZE", "1")), int(os.environ.get("PMI_RANK", "0"))
    rng = np.random.default_rng(rank)
    per = a.batch // world
    batch = rng.standard_normal((per,) + SHAPES[a.model]).astype(np.float32)
    labels = rng.integers(0, 10, per)
    if a.framework == "torch":
        import torch
        torch.set_num_threads(a.threads)
        step, comm, counters = torch_side(a.model, batch, labels, world, rank, a.port)
    else:
        step, comm, counters = lamina_side(a.model, batch, labels, world)
    for _ in range(a.warmup):
        step()
    before = counters()
    times = []
    for _ in range(a.steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    waited, overlapped, reduced = (x - y for x, y in zip(counters(), before))
    wait_per_step = waited / a.steps
    comm_per_step = float(np.median([comm() for _ in range(3)]))
    checked_per_step = float(np.median([comm(True) for _ in range(3)]))
    if rank == 0:
        t = float(np.median(times))
        print(json.dumps({"framework": a.framework, "model": a.model, "procs": world,
                          "threads": a.threads, "batch": a.batch, "step_s": t,
                          "samples_per_s": a.batch / t, "wait_s": wait_per_step,
                          "allreduce_s": comm_per_step, "checked_allreduce_s": checked_per_step,
                          "overlap": overlapped / reduced if reduced else 0.0}))


if __name__ == "__main__":
    main()
