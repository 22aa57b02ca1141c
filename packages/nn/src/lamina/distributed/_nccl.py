"""NCCL for cuda tensors, through ctypes on the library of PyPI's ``nvidia-nccl-cu13``.

Kept to the smallest path behind the same interface as MPI: rank 0 makes
NCCL's unique id, MPI broadcasts it, every rank joins one NCCL communicator,
and each collective is one NCCL call on the default stream (so it is ordered
with the cuda backend's kernels; reading results on the host synchronizes).
Needs three things, and ``unavailable_reason`` names the first one missing:
an available ``cuda`` device, the NCCL library, and a cuda ``Array`` that
exposes its device pointer as ``ptr``. None of this can run on a machine
without a GPU; importing this module never fails.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lamina.ndarray as nd
from lamina.ndarray import NDArray

from ._reduce_op import ReduceOp

_DTYPES = {"int64": 4, "float32": 7, "float64": 8}  # ncclDataType_t
_OPS = {ReduceOp.SUM: 0, ReduceOp.PRODUCT: 1, ReduceOp.MAX: 2, ReduceOp.MIN: 3,
        ReduceOp.AVG: 4}  # ncclRedOp_t


class _UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


def _find_library() -> str | None:
    try:
        import nvidia.nccl
        for root in nvidia.nccl.__path__:
            found = sorted(Path(root).glob("lib/libnccl.so*"))
            if found:
                return str(found[0])
    except ImportError:
        pass
    return ctypes.util.find_library("nccl")


def unavailable_reason() -> str | None:
    """Why NCCL cannot be used here, or None when it can."""
    cuda = [b for b in nd.list_backends() if b.name == "cuda"]
    if not cuda:
        return "no 'cuda' backend is installed (lamina-backend-cuda)"
    if cuda[0].status != "available":
        return f"the cuda backend is {cuda[0].status}: {cuda[0].reason}"
    if _find_library() is None:
        return "the NCCL library was not found (pip install nvidia-nccl-cu13)"
    if not hasattr(nd.get_device("cuda").backend.Array, "ptr"):
        return "the cuda backend's Array does not expose its device pointer ('ptr')"
    return None


def _pointer(a: NDArray) -> int:
    return int(a.buffer.ptr) + a.offset * a.dtype.itemsize


def _check(code: int, what: str) -> None:
    if code != 0:
        raise RuntimeError(f"{what}: NCCL error {code}")


class NcclComm:
    """One NCCL communicator spanning the MPI world."""

    def __init__(self, lib: Any, handle: ctypes.c_void_p) -> None:
        self._lib = lib
        self._handle = handle

    @classmethod
    def create(cls, comm: Any) -> NcclComm:
        reason = unavailable_reason()
        if reason is not None:
            raise RuntimeError(f"init_process_group(backend='nccl'): NCCL is unavailable: "
                               f"{reason}; use backend='mpi'")
        lib = ctypes.CDLL(_find_library())
        uid = _UniqueId()
        if comm.Get_rank() == 0:
            _check(lib.ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
        uid.internal = comm.bcast(bytes(uid.internal), root=0)
        handle = ctypes.c_void_p()
        _check(lib.ncclCommInitRank(ctypes.byref(handle), comm.Get_size(), uid,
                                    comm.Get_rank()), "ncclCommInitRank")
        return cls(lib, handle)

    def destroy(self) -> None:
        _check(self._lib.ncclCommDestroy(self._handle), "ncclCommDestroy")

    def _compact(self, a: NDArray) -> tuple[NDArray, Callable[[], None]]:
        """``a`` itself when compact, else a compact copy and how to copy it back."""
        if a.is_compact():
            return a, _nothing
        tmp = a.copy()
        return tmp, lambda: a.__setitem__((slice(None),) * a.ndim, tmp)

    def all_reduce(self, a: NDArray, op: ReduceOp, size: int) -> Callable[[], None]:
        buf, back = self._compact(a)
        p = ctypes.c_void_p(_pointer(buf))
        _check(self._lib.ncclAllReduce(p, p, ctypes.c_size_t(buf.size), _DTYPES[a.dtype.name],
                                       _OPS[op], self._handle, None), "ncclAllReduce")
        back()
        return _nothing

    def broadcast(self, a: NDArray, src: int) -> Callable[[], None]:
        buf, back = self._compact(a)
        p = ctypes.c_void_p(_pointer(buf))
        _check(self._lib.ncclBroadcast(p, p, ctypes.c_size_t(buf.size), _DTYPES[a.dtype.name],
                                       src, self._handle, None), "ncclBroadcast")
        back()
        return _nothing

    def all_gather(self, outs: list[NDArray], a: NDArray) -> Callable[[], None]:
        send = a.compact()
        recv = nd.empty((len(outs),) + a.shape, dtype=a.dtype, device=a.device)
        _check(self._lib.ncclAllGather(ctypes.c_void_p(_pointer(send)),
                                       ctypes.c_void_p(_pointer(recv)),
                                       ctypes.c_size_t(a.size), _DTYPES[a.dtype.name],
                                       self._handle, None), "ncclAllGather")
        for i, out in enumerate(outs):
            out[(slice(None),) * out.ndim] = recv[i]
        return _nothing

    def reduce_scatter(self, out: NDArray, ins: list[NDArray], op: ReduceOp,
                       size: int) -> Callable[[], None]:
        send = nd.stack(ins)
        buf, back = self._compact(out)
        _check(self._lib.ncclReduceScatter(ctypes.c_void_p(_pointer(send)),
                                           ctypes.c_void_p(_pointer(buf)),
                                           ctypes.c_size_t(out.size), _DTYPES[out.dtype.name],
                                           _OPS[op], self._handle, None), "ncclReduceScatter")
        back()
        return _nothing


def _nothing() -> None:
    pass
