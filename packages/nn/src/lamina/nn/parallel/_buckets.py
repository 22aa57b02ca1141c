"""Gradient buckets: many small gradients packed into a few flat buffers.

Parameters are grouped, in reverse registration order (roughly the order in
which backward finishes their gradients), into buckets of at most
``cap_bytes`` per dtype. Each bucket is one flat NDArray in host memory on
the ``numpy`` device (or on the parameters' own device for NCCL), so one
all-reduce averages all of its gradients.
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

    def __init__(self, params: Sequence[Tensor], device: str) -> None:
        self.params = list(params)
        self.offsets = list(np.cumsum([0] + [p.numel() for p in self.params]))
        dtype = self.params[0].dtype
        self.flat: NDArray = nd.zeros(int(self.offsets[-1]), dtype=dtype, device=device)
        self.host = host_view(self.flat)  # None when the bucket lives on a device
        self.ready = [False] * len(self.params)
        self.used = [False] * len(self.params)
        self.n_ready = 0

    def reset(self) -> None:
        self.ready = [False] * len(self.params)
        self.used = [False] * len(self.params)
        self.n_ready = 0

    def put(self, i: int, grad: Tensor | None) -> None:
        """Copies ``grad`` (or zeros, for an unused parameter) into slot ``i``."""
        lo, hi = int(self.offsets[i]), int(self.offsets[i + 1])
        if self.host is not None:
            if grad is None:
                self.host[lo:hi] = 0
            else:
                view = host_view(grad.data)
                self.host[lo:hi] = (view if view is not None else grad.data.numpy()).reshape(-1)
        elif grad is None:
            self.flat[lo:hi] = 0.0
        else:
            self.flat[lo:hi] = grad.data.compact().reshape((hi - lo,))
        self.ready[i] = True
        self.used[i] = grad is not None
        self.n_ready += 1

    @property
    def full(self) -> bool:
        return self.n_ready == len(self.params)

    def take(self, i: int) -> Tensor:
        """Slot ``i`` as a new gradient Tensor on the parameter's device and shape."""
        p = self.params[i]
        lo, hi = int(self.offsets[i]), int(self.offsets[i + 1])
        if self.host is not None:
            return Tensor._make(nd.array(self.host[lo:hi].reshape(p.shape), dtype=p.dtype,
                                         device=p.device))
        return Tensor._make(self.flat[lo:hi].reshape(p.shape).copy())


FIRST_BUCKET_BYTES = 2 ** 20  # PyTorch's too: the first bucket starts early in backward


def make_buckets(params: Sequence[Tensor], cap_bytes: int, device_of: dict[str, str]
                 ) -> list[Bucket]:
    """Groups ``params`` (in the order given) into buckets of one dtype and device each.

    Args:
        params: parameters in the order their gradients are expected to be ready.
        cap_bytes: a bucket closes once it holds at least this many bytes (the
            first one of each dtype at ``min(cap_bytes, 1 MiB)``, so that its
            all-reduce overlaps with the rest of backward even for small models).
        device_of: parameter device name -> the device the bucket lives on.
    """
    buckets: list[Bucket] = []
    open_: dict[tuple[str, str], tuple[list[Tensor], int]] = {}
    started: set[tuple[str, str]] = set()
    for p in params:
        key = (p.dtype.name, p.device.name)
        members, size = open_.get(key, ([], 0))
        members.append(p)
        size += p.numel() * p.dtype.itemsize
        if size >= (cap_bytes if key in started else min(cap_bytes, FIRST_BUCKET_BYTES)):
            started.add(key)
            buckets.append(Bucket(members, device_of[p.device.name]))
            members, size = [], 0
        open_[key] = (members, size)
    for members, _ in open_.values():
        if members:
            buckets.append(Bucket(members, device_of[members[0].device.name]))
    return buckets


def broadcast_coalesced(tensors: Sequence[Tensor], src: int = 0) -> None:
    """Copies every tensor's values from rank ``src``, with one broadcast per dtype."""
    from lamina.distributed import broadcast, get_rank

    by_dtype: dict[str, list[Tensor]] = {}
    for t in tensors:
        if t.numel():
            by_dtype.setdefault(t.dtype.name, []).append(t)
    for dtype, group in by_dtype.items():
        flat = np.concatenate([t.data.numpy().reshape(-1) for t in group])
        buf = nd.array(flat, dtype=dtype, device="numpy")
        broadcast(buf, src)
        if get_rank() == src:
            continue
        values = buf.numpy()
        start = 0
        with no_grad():  # in place (views and kept copies of the parameter see it)
            for t in group:
                t.copy_(values[start:start + t.numel()].reshape(t.shape))
                start += t.numel()
