"""DistributedDataParallel: one model replica per process, gradients averaged in backward.

How a step works (``docs/distributed.md`` has the picture):

1. Construction groups the parameters into flat buckets, checks every rank
   holds the same parameters, buffers, bucket layout and options (what the
   unchecked per-step collectives rely on), copies parameters and buffers
   from rank 0 (so replicas start equal) and puts a post-accumulate-grad
   hook on each parameter.
2. ``forward`` copies buffers from rank 0 again (PyTorch's
   ``forward_sync_buffers``: when the previous forward was one that syncs
   gradients), then runs the module on this rank's shard.
3. During ``backward`` each hook copies its finished gradient into its
   bucket; a full bucket starts a non-blocking all-reduce at once (buckets
   start in index order on every rank, as MPI matches collectives by order),
   so communication overlaps with the rest of backward. When the last bucket
   has started, all are waited for, averaged, and set as ``.grad`` (copies,
   or views of the buckets with ``gradient_as_bucket_view``) before
   ``backward()`` returns.

Averaging gradients of per-rank mean losses over N equal shards equals the
gradient of the mean loss over the whole batch, so N processes with B/N
samples each take the same step as one process with B.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import lamina.distributed as dist
from lamina.autograd import Function, Tensor, is_grad_enabled
from lamina.distributed._collectives import _all_reduce

from .._module import Module
from ._buckets import Bucket, broadcast_coalesced, make_buckets


class DistributedDataParallel(Module):
    """Wraps ``module`` so that ``backward`` averages its gradients over all ranks.

    Args:
        module: the replica on this rank (same architecture on every rank).
        bucket_cap_mb: gradients are all-reduced in flat buckets of about this
            many megabytes (one collective per bucket).
        find_unused_parameters: after each forward, find the parameters the
            output does not depend on and count them as ready (their gradient
            is the average over the ranks that did use them; ``.grad`` stays
            untouched where no rank used them). Without it, such a parameter
            makes the next forward raise.
        broadcast_buffers: copy buffers (BatchNorm running statistics) from
            rank 0 at construction and in forward (PyTorch's older name:
            ``False`` keeps each rank's own buffers from the start). Ignored
            when ``forward_sync_buffers`` is given, as in PyTorch.
        gradient_as_bucket_view: after each synced backward, every ``.grad``
            is a view of its slot in the flat all-reduce bucket instead of a
            copy (PyTorch's option of that name): no copy out of the bucket
            and no second set of gradient memory. The next synced backward
            overwrites the bucket, so a ``.grad`` kept from an earlier step
            changes too.
        forward_sync_buffers: copy buffers from rank 0 at the start of each
            forward that follows a forward with gradient sync (grad enabled,
            outside ``no_sync``), as PyTorch does; batch statistics themselves
            stay per process. ``None`` takes ``broadcast_buffers``; once
            given, buffers are always copied at construction.

    Counters: ``wait_seconds`` adds up the time backward spent blocked on
    all-reduces that had not finished behind the rest of backward;
    ``reduced_bytes`` the bytes all-reduced in backward, and
    ``overlapped_bytes`` those of buckets whose all-reduce had completed
    before backward produced its last gradient (hidden behind backward; the
    last bucket never is). The wrapped module is
    ``.module``; save ``ddp.module.state_dict()`` to get a
    checkpoint that loads at any world size.

    Example:
        ``model = DistributedDataParallel(MLP())`` after
        ``lamina.distributed.init_process_group()``, then train as usual.
    """

    def __init__(self, module: Module, bucket_cap_mb: float = 25.0,
                 find_unused_parameters: bool = False, broadcast_buffers: bool = True,
                 gradient_as_bucket_view: bool = False,
                 forward_sync_buffers: bool | None = None) -> None:
        super().__init__()
        if not dist.is_initialized():
            raise RuntimeError("DistributedDataParallel: the default process group has not "
                               "been initialized; call lamina.distributed.init_process_group()")
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: module must be a Module, "
                            f"got {type(module).__name__}")
        if not bucket_cap_mb > 0:
            raise ValueError(f"DistributedDataParallel: bucket_cap_mb must be > 0, "
                             f"got {bucket_cap_mb}")
        self.module = module
        self.find_unused_parameters = find_unused_parameters
        self.forward_sync_buffers = (broadcast_buffers if forward_sync_buffers is None
                                     else forward_sync_buffers)
        self.gradient_as_bucket_view = gradient_as_bucket_view
        named = _unique_named_parameters(module)
        self._names = {id(p): name for name, p in named}
        trainable = [p for _, p in reversed(named) if p.requires_grad]
        self._buckets = make_buckets(trainable, int(bucket_cap_mb * 2 ** 20))
        init_sync_buffers = forward_sync_buffers is not None or broadcast_buffers
        _check_same_layout(named, module, self._buckets,
                           {"find_unused_parameters": find_unused_parameters,
                            "forward_sync_buffers": self.forward_sync_buffers,
                            "broadcast buffers at construction": init_sync_buffers})
        broadcast_coalesced([p for _, p in named]
                            + (list(module.buffers()) if init_sync_buffers else []))
        self._slot: dict[int, tuple[Bucket, int]] = {
            id(p): (b, i) for b in self._buckets for i, p in enumerate(b.params)}
        self._works: list[dist.Work] = []
        self._require_sync = True
        self._sync_buffers = True  # PyTorch's require_forward_param_sync
        self.wait_seconds = 0.0
        self.reduced_bytes = 0
        self.overlapped_bytes = 0
        self._handles = [p.register_post_accumulate_grad_hook(self._grad_ready)
                         for p in trainable]

    # ------------------------------------------------------------------ forward
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        self._check_previous_reduction()
        for b in self._buckets:
            b.reset()
        self._works = []
        if self.forward_sync_buffers and self._sync_buffers and dist.get_world_size() > 1:
            broadcast_coalesced(list(self.module.buffers()))
        out = self.module(*args, **kwargs)
        # as PyTorch: the next forward copies buffers only after one that syncs gradients
        self._sync_buffers = self._require_sync and is_grad_enabled()
        if self.find_unused_parameters and self._sync_buffers:
            reached = _reachable_leaves(out)
            for bucket in self._buckets:
                for i, p in enumerate(bucket.params):
                    if id(p) not in reached:
                        self._mark(bucket, i, None)
        return out

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Inside, ``backward`` only accumulates local gradients (no communication).

        The first backward after the block averages the accumulated gradients,
        so k micro-batches under ``no_sync`` plus one outside equal one step on
        all of them.
        """
        previous, self._require_sync = self._require_sync, False
        try:
            yield
        finally:
            self._require_sync = previous

    # ----------------------------------------------------------------- backward
    def _grad_ready(self, p: Tensor) -> None:
        if not self._require_sync:
            return
        bucket, i = self._slot[id(p)]
        if bucket.ready[i]:
            raise RuntimeError(
                f"DistributedDataParallel: parameter '{self._names[id(p)]}' received a "
                "gradient twice in one iteration (a second backward over the same forward, or "
                "find_unused_parameters=True with a parameter the output does use); run "
                "forward again before each backward")
        self._mark(bucket, i, p.grad)

    def _mark(self, bucket: Bucket, i: int, grad: Tensor | None) -> None:
        bucket.put(i, grad)
        # MPI progresses the buckets in flight only inside MPI calls: test them here
        done = [work.is_completed() for work in self._works]
        # buckets start strictly in index order, the same on every rank
        while len(self._works) < len(self._buckets) and self._buckets[len(self._works)].full:
            b = self._buckets[len(self._works)]
            # unchecked: construction checked that every rank has this bucket layout
            work = _all_reduce(b.flat, dist.ReduceOp.AVG, async_op=True, check=False)
            assert work is not None  # async_op=True returns the Work
            self._works.append(work)
        if len(self._works) == len(self._buckets):
            self._finish(done)

    def _finish(self, done: list[bool]) -> None:
        """Waits for every bucket and sets the averaged gradients as ``.grad``.

        ``done[k]``: bucket k's all-reduce had completed before the last gradient came.
        """
        used_somewhere = self._global_usage() if self.find_unused_parameters else None
        start = time.perf_counter()
        for work in self._works:
            work.wait()
        self.wait_seconds += time.perf_counter() - start
        self.reduced_bytes += sum(b.nbytes for b in self._buckets)
        self.overlapped_bytes += sum(b.nbytes for b, d in zip(self._buckets, done) if d)
        as_view = self.gradient_as_bucket_view
        for b in self._buckets:
            for i, p in enumerate(b.params):
                if used_somewhere is None or used_somewhere[id(p)]:
                    p.grad = b.grad(i, as_view)
        self._works = []
        for b in self._buckets:
            b.reset()

    def _global_usage(self) -> dict[int, bool]:
        """Whether each parameter got a gradient on at least one rank."""
        import lamina.ndarray as nd
        flags = [int(u) for b in self._buckets for u in b.used]
        counts = nd.array(flags, dtype="int64", device="numpy")
        _all_reduce(counts, dist.ReduceOp.SUM, async_op=False, check=False)  # layout checked
        params = [p for b in self._buckets for p in b.params]
        return {id(p): bool(c) for p, c in zip(params, counts.numpy().tolist())}

    def _check_previous_reduction(self) -> None:
        started = [b for b in self._buckets if b.n_ready]
        if not started:
            return
        missing = [self._names[id(p)] for b in self._buckets for i, p in enumerate(b.params)
                   if not b.ready[i]]
        raise RuntimeError(
            "DistributedDataParallel: the previous backward did not produce gradients for "
            f"parameters {missing}, so their reduction never finished. Pass "
            "find_unused_parameters=True, or make sure every parameter contributes to the loss")


def _unique_named_parameters(module: Module) -> list[tuple[str, Tensor]]:
    seen: set[int] = set()
    named: list[tuple[str, Tensor]] = []
    for name, p in module.named_parameters():
        if id(p) not in seen:
            seen.add(id(p))
            named.append((name, p))
    return named


def _check_same_layout(named: list[tuple[str, Tensor]], module: Module,
                       buckets: list[Bucket], options: dict[str, bool]) -> None:
    """Raises on every rank when some rank's model, buckets or options differ from rank 0's.

    What every later collective of DDP sends follows from these (the buffers'
    and buckets' sizes and dtypes, which collectives a step issues), so one
    exchange here stands for the per-call check of ``lamina.distributed``
    that DDP's own collectives leave out.
    """
    from lamina.distributed._group import current

    mine = {"parameters": [(n, tuple(p.shape), p.dtype.name) for n, p in named],
            "buffers": [(n, tuple(b.shape), b.dtype.name) for n, b in module.named_buffers()],
            "buckets (elements, dtype)": [(b.offsets[-1], b.flat.dtype.name) for b in buckets],
            **{name: [value] for name, value in options.items()}}
    every = current("DistributedDataParallel").comm.allgather(mine)
    for rank, theirs in enumerate(every):
        for what in mine:
            if theirs[what] != every[0][what]:
                diff = next((a, b) for a, b in zip(every[0][what] + [None], theirs[what] + [None])
                            if a != b)
                raise RuntimeError(
                    f"DistributedDataParallel: rank {rank}'s {what} differ from rank 0's "
                    f"(rank 0 has {diff[0]}, rank {rank} has {diff[1]}); every rank must build "
                    "the same model and wrap it with the same options")


def _reachable_leaves(out: Any) -> set[int]:
    """ids of the leaf tensors that the Tensors in ``out`` were computed from."""
    stack: list[Any] = []

    def collect(x: Any) -> None:
        if isinstance(x, Tensor):
            stack.append(x.grad_fn if x.grad_fn is not None else x)
        elif isinstance(x, (list, tuple)):
            for y in x:
                collect(y)
        elif isinstance(x, dict):
            for y in x.values():
                collect(y)

    collect(out)
    leaves: set[int] = set()
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Function):
            stack.extend(node.next)
        else:
            leaves.add(id(node))
    return leaves
