"""DDP against one process: N ranks with B/N samples each == 1 process with B.

Every rank also trains a plain replica on the whole batch in-process (the
one-process reference), starting from rank 0's initial weights, and compares
parameters after several steps. Covers MLP, CNN (BatchNorm in eval mode) and
LSTM with SGD and Adam, with gradients copied out of the buckets or left as
views of them; no_sync accumulation; uneven shards; unused parameters;
buffers (PyTorch's broadcast_buffers rule) and checkpoints.
Usage: ddp.py CHECKPOINT_DIR
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import lamina.autograd as ag
import lamina.distributed as dist
import numpy as np
from lamina import nn, optim
from lamina.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("mpi", timeout=120)
rank, world = dist.get_rank(), dist.get_world_size()
B = 24  # divisible by 2, 3, 4 and 8
STEPS = 4


class CNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(4 * 3 * 3, 5)

    def forward(self, x: ag.Tensor) -> ag.Tensor:
        return self.fc(self.pool(self.bn(self.conv(x)).relu()).flatten(1))


class LSTMNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(3, 6, batch_first=True)
        self.fc = nn.Linear(6, 5)

    def forward(self, x: ag.Tensor) -> ag.Tensor:
        out, _ = self.lstm(x)
        return self.fc(out[:, -1])


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 5))


MODELS: dict[str, tuple[Callable[[], nn.Module], tuple[int, ...]]] = {
    "mlp": (mlp, (8,)), "cnn": (CNN, (2, 6, 6)), "lstm": (LSTMNet, (4, 3))}
OPTIMIZERS = {"sgd": lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9),
              "adam": lambda ps: optim.Adam(ps, lr=0.01)}
loss_fn = nn.CrossEntropyLoss()


def batches(shape: tuple[int, ...], n: int, seed: int) -> list[tuple[ag.Tensor, ag.Tensor]]:
    rng = np.random.default_rng(seed)
    return [(ag.tensor(rng.standard_normal((n,) + shape).astype("float32")),
             ag.tensor(rng.integers(0, 5, n))) for _ in range(STEPS)]


def shard(t: ag.Tensor, r: int = rank, n: int = world) -> ag.Tensor:
    per = len(t) // n
    return t[r * per:(r + 1) * per]


def pair(build: Callable[[], nn.Module], **ddp_args: bool) -> tuple[DDP, nn.Module]:
    """A DDP model from a rank-specific init, and the reference from rank 0's init."""
    ag.manual_seed(100 + rank)
    net = build()
    ag.manual_seed(100)
    ref = build()
    return DDP(net, bucket_cap_mb=0.0005, **ddp_args), ref  # ~500 B: several buckets


def assert_same(ddp: DDP, ref: nn.Module, what: str, tol: float = 2e-5) -> None:
    for (name, p), (_, q) in zip(ddp.module.named_parameters(), ref.named_parameters()):
        diff = np.abs(p.detach().numpy() - q.detach().numpy()).max(initial=0.0)
        scale = max(1.0, float(np.abs(q.detach().numpy()).max(initial=0.0)))
        assert diff <= tol * scale, f"{what}: {name} differs by {diff} on rank {rank}"


def equivalence(model: str, opt_name: str, as_view: bool = False,
                set_to_none: bool = True) -> None:
    build, shape = MODELS[model]
    ddp, ref = pair(build, gradient_as_bucket_view=as_view)
    if model == "cnn":  # batch statistics differ by design when a batch is sharded
        ddp.eval()
        ref.eval()
    assert_same(ddp, ref, f"{model} after construction", tol=0.0)
    opt, ref_opt = OPTIMIZERS[opt_name](ddp.parameters()), OPTIMIZERS[opt_name](ref.parameters())
    for x, y in batches(shape, B, seed=7):
        opt.zero_grad(set_to_none)
        loss_fn(ddp(shard(x)), shard(y)).backward()
        check_grad_memory(ddp, as_view)
        opt.step()
        ref_opt.zero_grad(set_to_none)
        loss_fn(ref(x), y).backward()
        ref_opt.step()
    assert_same(ddp, ref, f"{model}/{opt_name}/as_view={as_view}/set_to_none={set_to_none} "
                f"after {STEPS} steps")


def check_grad_memory(ddp: DDP, as_view: bool) -> None:
    """With gradient_as_bucket_view each .grad is its bucket slot's memory, else a copy."""
    for p in ddp.parameters():
        bucket, i = ddp._slot[id(p)]
        shares = p.grad._data.buffer is bucket.flat.buffer
        assert shares == as_view, f"as_view={as_view} but .grad shares the bucket: {shares}"
        assert p.grad.shape == p.shape
        if as_view:
            assert p.grad._data.offset == bucket.offsets[i], "a .grad views the wrong slot"
    assert 0 <= ddp.overlapped_bytes <= ddp.reduced_bytes


def no_sync_accumulation(as_view: bool) -> None:
    ddp, ref = pair(mlp, gradient_as_bucket_view=as_view)
    opt, ref_opt = optim.SGD(ddp.parameters(), lr=0.1), optim.SGD(ref.parameters(), lr=0.1)
    x, y = batches((8,), B, seed=11)[0]
    loss_fn(ddp(shard(x)), shard(y)).backward()  # a synced step first: .grad may be views now
    opt.step()
    loss_fn(ref(x), y).backward()
    ref_opt.step()
    opt.zero_grad(set_to_none=False)  # zeroes the buckets through the views
    ref_opt.zero_grad(set_to_none=False)
    micro = batches((8,), B, seed=11)[:3]
    with ddp.no_sync():
        for x, y in micro[:2]:
            loss_fn(ddp(shard(x)), shard(y)).backward()
    local = [p.grad.numpy().copy() for p in ddp.parameters()]
    x, y = micro[2]
    loss_fn(ddp(shard(x)), shard(y)).backward()
    opt.step()
    sum(loss_fn(ref(x), y) for x, y in micro).backward()
    ref_opt.step()
    assert_same(ddp, ref, f"no_sync accumulation, as_view={as_view}")
    if world > 1:  # inside no_sync nothing was averaged: local grads differ across ranks
        gathered = dist._group.current("test").comm.allgather(local[0])
        assert not np.allclose(gathered[0], gathered[1]), "no_sync still communicated"


def uneven_shards() -> None:
    """Ranks with different shard sizes: DDP averages per-rank mean losses (as PyTorch)."""
    sizes = [5, 3, 4, 2][:world] if world <= 4 else [2 + r % 4 for r in range(world)]
    ddp, ref = pair(mlp)
    opt, ref_opt = optim.SGD(ddp.parameters(), lr=0.1), optim.SGD(ref.parameters(), lr=0.1)
    x, y = batches((8,), sum(sizes), seed=13)[0]
    starts = np.cumsum([0] + sizes)
    part = slice(int(starts[rank]), int(starts[rank + 1]))
    loss_fn(ddp(x[part]), y[part]).backward()
    opt.step()
    per_rank = [loss_fn(ref(x[int(a):int(b)]), y[int(a):int(b)])
                for a, b in zip(starts[:-1], starts[1:])]
    (sum(per_rank) / world).backward()
    ref_opt.step()
    assert_same(ddp, ref, "uneven shards")


class TwoHeads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 3)
        self.b = nn.Linear(4, 3)
        self.never = nn.Linear(4, 3)

    def forward(self, x: ag.Tensor, use_b: bool) -> ag.Tensor:
        return self.a(x) + self.b(x) if use_b else self.a(x)


def unused_parameters() -> None:
    x = ag.ones(2, 4)
    ddp = DDP(TwoHeads())
    ddp(x, True).sum().backward()
    try:
        ddp(x, True)
    except RuntimeError as e:
        assert "never.weight" in str(e) and "find_unused_parameters" in str(e), str(e)
    else:
        raise AssertionError("a parameter without gradient did not raise")
    ag.manual_seed(5)
    ref = TwoHeads()
    ag.manual_seed(5)
    ddp = DDP(TwoHeads(), find_unused_parameters=True)
    for _ in range(2):  # twice: the state resets between iterations
        ddp.zero_grad()
        ddp(x * (rank + 1), rank == 0).sum().backward()
    assert ddp.module.never.weight.grad is None, "a parameter no rank used got a gradient"
    ref_b = [ag.grad(ref(x * (r + 1), r == 0).sum(), ref.b.weight, allow_unused=True)[0]
             for r in range(world)]
    want = sum(g.numpy() for g in ref_b if g is not None) / world
    np.testing.assert_allclose(ddp.module.b.weight.grad.numpy(), want, rtol=1e-5)


def running_means(ddp: DDP) -> list[np.ndarray]:
    """Every rank's BatchNorm running mean, gathered on every rank."""
    mine = ddp.module.bn.running_mean.numpy().copy()
    return dist._group.current("test").comm.allgather(mine)


def buffer_sync(**options: bool) -> None:
    """PyTorch's forward_sync_buffers: a forward starts by copying rank 0's buffers when
    the previous forward synced gradients (grad enabled, outside no_sync). Its older
    broadcast_buffers=False also leaves out the copy at construction."""
    x = batches((2, 6, 6), B, seed=17)[0][0]
    net = CNN()
    net.bn.running_mean.data = ag.full((4,), float(rank)).data
    ddp = DDP(net, **options)
    at_init = "forward_sync_buffers" in options or options.get("broadcast_buffers", True)
    assert ddp.module.bn.running_mean.tolist() == [0.0 if at_init else float(rank)] * 4, (
        f"{options}: buffers at construction")
    broadcast = options.get("forward_sync_buffers", options.get("broadcast_buffers", True))
    ddp(shard(x)).sum().backward()  # a training forward: each rank's own batch statistics
    before = running_means(ddp)
    assert world == 1 or not np.allclose(before[0], before[1]), "shards gave equal statistics"
    ddp.eval()
    with ag.no_grad():
        ddp(shard(x))  # follows a synced forward: copies rank 0's (eval leaves them so)
        after = running_means(ddp)
        want = before[0] if broadcast else before[rank]
        np.testing.assert_array_equal(after[rank], want, err_msg=f"{options}")
        ddp.module.bn.running_mean.data = ag.full((4,), float(rank)).data
        ddp(shard(x))  # follows a forward without grad: no copy
        assert ddp.module.bn.running_mean.tolist() == [float(rank)] * 4, "copied after no_grad"
    ddp.train()
    with ddp.no_sync():
        ddp(shard(x)).sum().backward()
    ddp(shard(x)).sum().backward()  # follows a no_sync forward: no copy
    ddp.eval()
    with ag.no_grad():
        last = running_means(ddp)
        assert world == 1 or not np.allclose(last[0], last[1]), "copied after no_sync"
        ddp(shard(x))  # follows a synced forward again
        want = last[0] if broadcast else last[rank]
        np.testing.assert_array_equal(running_means(ddp)[rank], want)


def buffers_and_checkpoint(folder: Path) -> None:
    net = CNN()
    net.bn.running_mean.data = ag.full((4,), float(rank)).data
    ddp = DDP(net)
    assert ddp.module.bn.running_mean.tolist() == [0.0] * 4, "buffers not copied from rank 0"
    path = folder / "ddp.safetensors"
    dist.save_on_rank0(ddp.module.state_dict(), path)
    loaded = nn.load(path)
    for name, t in ddp.module.state_dict().items():
        np.testing.assert_array_equal(loaded[name].numpy(), t.detach().numpy(), err_msg=name)
    single = CNN()
    single.load_state_dict(loaded)  # any world size loads it, one process included


for model in MODELS:
    for opt_name in OPTIMIZERS:
        equivalence(model, opt_name)
        equivalence(model, opt_name, as_view=True)
equivalence("mlp", "sgd", as_view=True, set_to_none=False)  # .zero_() on bucket views
buffer_sync()
buffer_sync(broadcast_buffers=False)
buffer_sync(forward_sync_buffers=False)
buffer_sync(broadcast_buffers=False, forward_sync_buffers=True)  # PyTorch ignores the first
no_sync_accumulation(as_view=False)
no_sync_accumulation(as_view=True)
uneven_shards()
unused_parameters()
buffers_and_checkpoint(Path(sys.argv[1]))
print(f"rank {rank}: ddp checks passed")
