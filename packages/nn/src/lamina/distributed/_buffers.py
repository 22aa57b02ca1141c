"""Host buffers for MPI: the flat memory of an NDArray, shared when the layout allows.

MPI reads and writes plain host memory. A compact NDArray whose backend buffer
is host memory (the numpy backend's 1-D array, or any backend ``Array`` that
supports Python's buffer protocol) is handed to MPI as a numpy view of that
memory: no copy. Anything else (a non-compact view, a backend without host
access) is staged through a compact numpy copy and written back afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from lamina.ndarray import NDArray


def host_view(a: NDArray) -> np.ndarray | None:
    """A writable numpy array over ``a``'s own memory, shaped like ``a``; None if impossible.

    Args:
        a: any NDArray.

    Returns:
        An array sharing memory with ``a`` when ``a`` is compact and its buffer
        is host memory, else ``None``.
    """
    if not a.is_compact():
        return None
    buf = a.buffer
    flat = getattr(buf, "data", None)
    if not isinstance(flat, np.ndarray):
        try:
            flat = np.frombuffer(memoryview(buf), dtype=a.dtype.np)
        except TypeError:
            return None
    if flat.dtype != a.dtype.np or not flat.flags.writeable or flat.ndim != 1:
        return None
    return flat[a.offset:a.offset + a.size].reshape(a.shape)


@dataclass
class HostBuffer:
    """The numpy memory MPI works on for one NDArray, and how to return it there.

    ``array`` is ``target``'s memory itself (``staged`` False) or a compact
    copy of it (``staged`` True) that ``write_back`` copies into ``target``.
    """

    target: NDArray
    array: np.ndarray
    staged: bool

    @classmethod
    def of(cls, a: NDArray) -> HostBuffer:
        view = host_view(a)
        if view is not None:
            return cls(a, view, False)
        return cls(a, np.ascontiguousarray(a.numpy()), True)

    def write_back(self) -> None:
        if self.staged and self.target.size:
            write(self.target, self.array)


def write(target: NDArray, values: np.ndarray) -> None:
    """Copies ``values`` (shaped like ``target``) into ``target``'s memory in place."""
    view = host_view(target)
    if view is not None:
        np.copyto(view, values.reshape(target.shape), casting="unsafe")
    else:
        target[(slice(None),) * target.ndim] = values.reshape(target.shape)
