"""Gradient buckets: many small gradients packed into a few flat buffers.

Parameters are grouped, in reverse registration order (roughly the order in
which backward finishes their gradients), into buckets of at most
``cap_bytes`` per dtype and device. Each bucket is one flat NDArray on the
parameters' own device, so one all-reduce averages all of its gradients and,
with ``gradient_as_bucket_view``, each averaged gradient can be handed out
as a view of the bucket instead of a copy. Host memory goes to MPI as it is
(``host_view``); a device bucket is staged through the host by the
collective (MPI) or reduced where it lives (NCCL).
"""

from __future__ import annotations

from collections.abc import Sequence

import lamina.ndarray as nd
import numpy as np
from lamina.autograd import Tensor, no_grad
from lamina.distributed._buffers import host_view
from lamina.ndarray import NDArray


class Bucket:
    """A flat buffer holding the gradients of ``params``, slot ``i`` at ``offsets[i]``."""

    def __init__(self, params: Sequence[Tensor]) -> None:
        self.params = list(params)
        self.offsets = [int(o) for o in np.cumsum([0] + [p.numel() for p in self.params])]
        p0 = self.params[0]
        self.flat: NDArray = nd.zeros(self.offsets[-1], dtype=p0.dtype, device=p0.device)
        self.host = host_view(self.flat)  # None when the bucket's memory is not host memory
        self.nbytes = self.offsets[-1] * p0.dtype.itemsize
        # each slot's view, made once: slicing an NDArray costs more than copying a small one
        spans = list(zip(self.offsets[:-1], self.offsets[1:]))
        self.slots = [self.flat[lo:hi].reshape(p.shape) for (lo, hi), p in zip(spans, self.params)]
        self.host_slots = ([self.host[lo:hi].reshape(p.shape) for (lo, hi), p in
                            zip(spans, self.params)] if self.host is not None else [])
        self.ready = [False] * len(self.params)
        self.used = [False] * len(self.params)
        self.n_ready = 0

    def reset(self) -> None:
        self.ready = [False] * len(self.params)
        self.used = [False] * len(self.params)
        self.n_ready = 0

    def put(self, i: int, grad: Tensor | None) -> None:
        """Copies ``grad`` (or zeros, for an unused parameter) into slot ``i``."""
        if self.host is not None:
            if grad is None:
                self.host_slots[i].fill(0)
            else:
                view = host_view(grad._data)
                np.copyto(self.host_slots[i], view if view is not None else grad._data.numpy())
        else:
            slot = self.slots[i]
            slot[(slice(None),) * slot.ndim] = 0.0 if grad is None else grad._data
        self.ready[i] = True
        self.used[i] = grad is not None
        self.n_ready += 1

    @property
    def full(self) -> bool:
        return self.n_ready == len(self.params)

    def grad(self, i: int, as_view: bool) -> Tensor:
        """Slot ``i`` shaped like its parameter: a view of the bucket, or a copy."""
        if as_view:
            return Tensor._make(self.slots[i])
        if self.host is not None:
            p = self.params[i]
            return Tensor._make(nd.array(self.host_slots[i], dtype=p.dtype, device=p.device))
        return Tensor._make(self.slots[i].copy())


FIRST_BUCKET_BYTES = 2 ** 20  # PyTorch's too: the first bucket starts early in backward


def make_buckets(params: Sequence[Tensor], cap_bytes: int) -> list[Bucket]:
    """Groups ``params`` (in the order given) into buckets of one dtype and device each.

    Args:
        params: parameters in the order their gradients are expected to be ready.
        cap_bytes: a bucket closes once it holds at least this many bytes (the
            first one of each dtype at ``min(cap_bytes, 1 MiB)``, so that its
            all-reduce overlaps with the rest of backward even for small models).
    """
    buckets: list[Bucket] = []
    open_: dict[tuple[str, str], tuple[list[Tensor], int]] = {}
    started: set[tuple[str, str]] = set()
    for p in params:
        key = (p.dtype.name, str(p.device))
        members, size = open_.get(key, ([], 0))
        members.append(p)
        size += p.numel() * p.dtype.itemsize
        if size >= (cap_bytes if key in started else min(cap_bytes, FIRST_BUCKET_BYTES)):
            started.add(key)
            buckets.append(Bucket(members))
            members, size = [], 0
        open_[key] = (members, size)
    for members, _ in open_.values():
        if members:
            buckets.append(Bucket(members))
    return buckets


def broadcast_coalesced(tensors: Sequence[Tensor], src: int = 0) -> None:
    """Copies every tensor's values from rank ``src`` with one broadcast of their bytes.

    One collective for all of them, whatever their dtypes: each is a round in
    which every rank waits for the slowest, and this runs at every forward.
    """
    from lamina.distributed._group import current, wait_requests

    group = current("broadcast")
    tensors = [t for t in tensors if t.numel()]
    sizes = [t.numel() * t.dtype.itemsize for t in tensors]
    if not tensors:
        return
    if group.rank == src:
        flat = np.concatenate([np.ascontiguousarray(t._data.numpy()).reshape(-1).view(np.uint8)
                               for t in tensors])
    else:
        flat = np.empty(sum(sizes), dtype=np.uint8)
    wait_requests([group.comm.Ibcast(flat, root=src)], "broadcast")
    if group.rank == src:
        return
    start = 0
    with no_grad():  # in place (views and kept copies of the tensor see it)
        for t, size in zip(tensors, sizes):
            t.copy_(flat[start:start + size].view(t.dtype.np).reshape(t.shape))
            start += size
