"""Collectives over the process group: all_reduce, broadcast, all_gather, reduce_scatter.

Each collective accepts Tensors (or NDArrays), works in place like PyTorch's,
and is issued as a non-blocking MPI call. With ``async_op=True`` it returns a
``Work`` whose ``wait()`` completes it (and copies staged results back);
otherwise it waits before returning. Tensors on a cuda device go through NCCL
when the group was initialized with ``backend="nccl"``.

Before any data moves, the ranks check that they all made the same call
(``_agreement``): a mismatch raises on every rank instead of exchanging
garbage. DDP calls the unchecked forms (``check=False``) for its buckets,
whose layout it checks once at construction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from lamina.ndarray import DTypeError, NDArray, ShapeError

from . import _group as G
from ._agreement import Call, verify
from ._buffers import HostBuffer, write
from ._reduce_op import ReduceOp

_MPI_OPS = {ReduceOp.SUM: "SUM", ReduceOp.AVG: "SUM", ReduceOp.PRODUCT: "PROD",
            ReduceOp.MAX: "MAX", ReduceOp.MIN: "MIN"}


class Work:
    """A collective in flight; ``wait()`` completes it (PyTorch's ``Work``).

    Results are in the tensors once ``wait()`` returns. Waiting twice is harmless.
    It holds the host buffers MPI reads and writes until then: mpi4py keeps no
    reference to them, and an MPI that progresses the call inside ``wait`` (Open
    MPI does) would otherwise read memory numpy already freed and reused.
    """

    def __init__(self, requests: list[Any], finish: Callable[[], None], what: str,
                 buffers: tuple[Any, ...] = ()) -> None:
        self._requests = requests
        self._finish: Callable[[], None] | None = finish
        self._what = what
        self._buffers = buffers

    def is_completed(self) -> bool:
        """Whether the collective has finished (drives MPI's progress; never blocks)."""
        if self._finish is None:
            return True
        return bool(G.mpi().Request.Testall(self._requests))

    def wait(self) -> bool:
        """Blocks until the collective has finished and the results are in place."""
        if self._finish is not None:
            G.wait_requests(self._requests, self._what)
            finish, self._finish = self._finish, None
            finish()
            self._buffers = ()
        return True


def _array(t: Any, op: str, name: str = "tensor") -> NDArray:
    data = getattr(t, "_data", t)  # a Tensor's NDArray (its .data is a Tensor)
    if not isinstance(data, NDArray):
        raise TypeError(f"{op}: {name} must be a Tensor or NDArray, got {type(t).__name__}")
    return data


def _mpi_op(op: Any, dtype: Any, name: str) -> Any:
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{name}: op must be a ReduceOp (SUM, AVG, PRODUCT, MAX, MIN), "
                        f"got {op!r}")
    if op is ReduceOp.AVG and not dtype.is_floating:
        raise DTypeError(f"{name}: ReduceOp.AVG needs a floating point tensor, got {dtype}; "
                         "use SUM and divide, or convert with .float()")
    if op in (ReduceOp.MAX, ReduceOp.MIN) and dtype.is_floating:
        return _nan_propagating(op, np.dtype(dtype.np))
    return getattr(G.mpi(), _MPI_OPS[op])


_NAN_OPS: dict[tuple[ReduceOp, str], Any] = {}


def _nan_propagating(op: ReduceOp, dtype: np.dtype) -> Any:
    """MAX or MIN as an MPI op that propagates NaN (numpy's maximum/minimum, as PyTorch's).

    MPI's own MAX keeps whichever operand wins a comparison, and every
    comparison with NaN is false, so ranks that combine in different orders
    end with different values (``nan`` on one rank, ``1.0`` on another).
    """
    key = (op, dtype.str)
    if key not in _NAN_OPS:
        ufunc = np.maximum if op is ReduceOp.MAX else np.minimum

        def combine(inbuf: Any, inoutbuf: Any, datatype: Any) -> None:
            result = np.frombuffer(inoutbuf, dtype=dtype)
            ufunc(np.frombuffer(inbuf, dtype=dtype), result, out=result)

        _NAN_OPS[key] = G.mpi().Op.Create(combine, commute=True)
    return _NAN_OPS[key]


def _run(group: G._Group, requests: list[Any], finish: Callable[[], None], what: str,
         async_op: bool, *buffers: Any) -> Work | None:
    work = Work(requests, finish, what, buffers)
    if async_op:
        return work
    work.wait()
    return None


def _use_nccl(group: G._Group, *arrays: NDArray) -> bool:
    return group.nccl is not None and any(a.device.name == "cuda" for a in arrays)


def all_reduce(tensor: Any, op: ReduceOp = ReduceOp.SUM, *, async_op: bool = False
               ) -> Work | None:
    """Combines ``tensor`` across all ranks, in place, so every rank holds the result.

    MAX and MIN propagate NaN, as PyTorch's do: where any rank holds NaN,
    every rank gets NaN.

    Args:
        tensor: any shape and dtype; same shape and dtype on every rank.
        op: ``ReduceOp.SUM`` (default), ``AVG`` (floating point only),
            ``PRODUCT``, ``MAX`` or ``MIN``; the same on every rank.
        async_op: return a ``Work`` instead of waiting (the call still
            returns only once every rank has made it: see Raises).

    Raises:
        ShapeError, DTypeError, ValueError: on every rank, when the ranks'
            calls differ (another collective, shape, dtype or op);
            nothing is sent then.
    """
    return _all_reduce(tensor, op, async_op)


def _all_reduce(tensor: Any, op: ReduceOp, async_op: bool, check: bool = True
                ) -> Work | None:
    group = G.current("all_reduce")
    a = _array(tensor, "all_reduce")
    mpi_op = _mpi_op(op, a.dtype, "all_reduce")
    if check:
        verify(group, Call("all_reduce", a.shape, a.dtype.name, op=op.value))
    if _use_nccl(group, a):
        return _run(group, [], group.nccl.all_reduce(a, op, group.size), "all_reduce", async_op)
    buf = HostBuffer.of(a)
    requests = [group.comm.Iallreduce(G.mpi().IN_PLACE, buf.array, op=mpi_op)] if a.size else []

    def finish() -> None:
        if op is ReduceOp.AVG:
            buf.array /= group.size
        buf.write_back()

    return _run(group, requests, finish, "all_reduce", async_op, buf.array)


def broadcast(tensor: Any, src: int, *, async_op: bool = False) -> Work | None:
    """Copies ``tensor`` from rank ``src`` into ``tensor`` on every other rank.

    Args:
        tensor: same shape and dtype on every rank; read on ``src``, written elsewhere.
        src: the rank that sends; the same on every rank.
        async_op: return a ``Work`` instead of waiting.

    Raises:
        ShapeError, DTypeError, ValueError: on every rank, when the ranks'
            calls differ (another collective, shape, dtype or src); nothing
            is sent then.
    """
    group = G.current("broadcast")
    a = _array(tensor, "broadcast")
    _check_rank(src, group, "broadcast", "src")
    verify(group, Call("broadcast", a.shape, a.dtype.name, src=src))
    if _use_nccl(group, a):
        return _run(group, [], group.nccl.broadcast(a, src), "broadcast", async_op)
    buf = HostBuffer.of(a)
    requests = [group.comm.Ibcast(buf.array, root=src)] if a.size else []
    finish = buf.write_back if group.rank != src else _nothing
    return _run(group, requests, finish, "broadcast", async_op, buf.array)


def all_gather(tensor_list: Sequence[Any], tensor: Any, *, async_op: bool = False
               ) -> Work | None:
    """Fills ``tensor_list[r]`` with rank r's ``tensor`` on every rank.

    Args:
        tensor_list: ``world_size`` tensors shaped and typed like ``tensor``.
        tensor: this rank's contribution, shape ``S``.
        async_op: return a ``Work`` instead of waiting.

    Raises:
        ShapeError, DTypeError, ValueError: on every rank, when the ranks'
            calls differ (another collective, shape or dtype);
            nothing is sent then.
    """
    group = G.current("all_gather")
    a = _array(tensor, "all_gather")
    outs = _output_list(tensor_list, a, group, "all_gather", "tensor_list")
    verify(group, Call("all_gather", a.shape, a.dtype.name))
    if _use_nccl(group, a, *outs):
        return _run(group, [], group.nccl.all_gather(outs, a), "all_gather", async_op)
    send = HostBuffer.of(a).array
    recv = np.empty((group.size,) + a.shape, dtype=a.dtype.np)
    requests = [group.comm.Iallgather(send, recv)] if a.size else []

    def finish() -> None:
        for out, values in zip(outs, recv):
            if out.size:
                write(out, values)

    return _run(group, requests, finish, "all_gather", async_op, send, recv)


def reduce_scatter(output: Any, input_list: Sequence[Any], op: ReduceOp = ReduceOp.SUM, *,
                   async_op: bool = False) -> Work | None:
    """Reduces ``input_list[r]`` over all ranks into ``output`` on rank r.

    Args:
        output: this rank's share of the result, shape ``S``.
        input_list: ``world_size`` tensors of shape ``S``; entry r goes to rank r.
        op: as for ``all_reduce``.
        async_op: return a ``Work`` instead of waiting.

    Raises:
        ShapeError, DTypeError, ValueError: on every rank, when the ranks'
            calls differ (another collective, shape, dtype or op);
            nothing is sent then.
    """
    group = G.current("reduce_scatter")
    out = _array(output, "reduce_scatter", "output")
    ins = _output_list(input_list, out, group, "reduce_scatter", "input_list")
    mpi_op = _mpi_op(op, out.dtype, "reduce_scatter")
    verify(group, Call("reduce_scatter", out.shape, out.dtype.name, op=op.value))
    if _use_nccl(group, out, *ins):
        return _run(group, [], group.nccl.reduce_scatter(out, ins, op, group.size),
                    "reduce_scatter", async_op)
    send = np.stack([x.numpy() for x in ins]) if out.size else np.empty(0, out.dtype.np)
    buf = HostBuffer.of(out)
    requests = [group.comm.Ireduce_scatter_block(send, buf.array, op=mpi_op)] if out.size else []

    def finish() -> None:
        if op is ReduceOp.AVG:
            buf.array /= group.size
        buf.write_back()

    return _run(group, requests, finish, "reduce_scatter", async_op, send, buf.array)


def barrier(*, async_op: bool = False) -> Work | None:
    """Returns once every rank has called ``barrier``."""
    group = G.current("barrier")
    verify(group, Call("barrier"))
    return _run(group, [group.comm.Ibarrier()], _nothing, "barrier", async_op)


def _nothing() -> None:
    pass


def _check_rank(r: Any, group: G._Group, op: str, name: str) -> None:
    if not isinstance(r, int) or not 0 <= r < group.size:
        raise ValueError(f"{op}: {name}={r!r} is not a rank of this group "
                         f"(world size {group.size})")


def _output_list(items: Sequence[Any], like: NDArray, group: G._Group, op: str,
                 name: str) -> list[NDArray]:
    if len(items) != group.size:
        raise ValueError(f"{op}: {name} has {len(items)} tensors but the world size is "
                         f"{group.size}; pass one per rank")
    arrays = [_array(x, op, name) for x in items]
    for i, x in enumerate(arrays):
        if x.shape != like.shape or x.dtype != like.dtype:
            raise ShapeError(f"{op}: {name}[{i}] has shape {x.shape} and dtype {x.dtype}, "
                             f"expected shape {like.shape} and dtype {like.dtype} like the "
                             "tensor argument")
    return arrays
