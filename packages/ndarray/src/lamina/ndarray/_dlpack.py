"""DLPack exchange: ``NDArray.__dlpack__``/``__dlpack_device__`` and ``from_dlpack``.

Capsules are made and read by numpy (``ndarray.__dlpack__``, ``np.from_dlpack``),
so Lamina carries no DLPack struct code of its own. What decides between
sharing and copying is where a device keeps its values:

- ``numpy`` and ``cpu``: buffers live in host memory, so export and import
  share memory (any strides and offsets, except the negative strides of a
  flipped view: PyTorch aborts the process on those, so such a view is
  exported as a copy). Export views a buffer through numpy (a ``cpu`` Array
  exports the buffer protocol, and the view keeps it alive); import wraps the
  producer's memory with the backend's optional ``wrap_numpy``.
- A backend without those (a third-party plugin) copies both ways;
  ``copy=False`` raises ``BufferError`` instead.
- ``cuda``: reported as ``kDLCUDA`` with its index; the buffers expose no
  device pointer, so only a host copy can be exported (``dl_device=(1, 0)``).

Example:
    >>> import numpy as np
    >>> from lamina.ndarray import arange, from_dlpack
    >>> a = arange(6, device="numpy").reshape(2, 3)
    >>> host = np.from_dlpack(a.T)  # no copy: the transposed view's strides travel
    >>> host.strides, host.flags.c_contiguous
    ((8, 24), False)
    >>> from_dlpack(host, device="numpy").tolist()
    [[0, 3], [1, 4], [2, 5]]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ._dtypes import as_dtype
from ._numpy_backend import NumpyArray, NumpyBackend, _view
from ._registry import get_device

if TYPE_CHECKING:
    from ._ndarray import NDArray

# DLDeviceType codes of the DLPack header (dlpack.h).
KDLCPU = 1
KDLCUDA = 2
_DEVICE_NAMES = {1: "CPU", 2: "CUDA", 3: "CUDAHost", 4: "OpenCL", 7: "Vulkan", 8: "Metal",
                 10: "ROCm", 13: "CUDAManaged", 14: "OneAPI"}


def dlpack_device(a: NDArray) -> tuple[int, int]:
    """``(device_type, index)`` of ``a``'s memory: ``(2, i)`` on ``cuda:i``, else ``(1, 0)``."""
    if a.device.type == "cuda":
        return KDLCUDA, a.device.index
    return KDLCPU, 0


def host_view(a: NDArray) -> np.ndarray | None:
    """A numpy view of ``a`` sharing its memory, or ``None`` if its device has none."""
    buf = a.buffer
    if not isinstance(buf, NumpyArray):
        try:  # a host backend's Array exports the buffer protocol
            memory = memoryview(buf)
        except TypeError:
            return None
        # The numpy array holds the memoryview, which holds the Array.
        flat = np.frombuffer(memory, dtype=buf.dtype) if buf.size else np.empty(0, buf.dtype)
        buf = NumpyBackend.wrap_numpy(flat)
    return _view(buf, a.shape, a.strides, a.offset, "__dlpack__")


def export(a: NDArray, stream: Any = None, max_version: tuple[int, int] | None = None,
           dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
    """The capsule behind ``NDArray.__dlpack__`` (the array API's signature)."""
    view = host_view(a)
    if view is not None and any(s < 0 for s in a.strides):
        # PyTorch aborts the process on a capsule with negative strides; export a copy.
        if copy is False:
            raise BufferError(f"__dlpack__: a view with negative strides {a.strides} "
                              f"(from flip) cannot be shared, and copy=False forbids a "
                              f"copy; call .copy() first")
        view = view.copy()
    if view is not None:
        return view.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device,
                               copy=copy)
    here = dlpack_device(a)
    wants_host = dl_device is not None and tuple(dl_device) == (KDLCPU, 0)
    if here[0] != KDLCPU and not wants_host:
        raise BufferError(
            f"__dlpack__: device {a.device.name} cannot export its memory in place: its "
            f"buffers expose no {_DEVICE_NAMES[here[0]]} pointer; pass dl_device=(1, 0) "
            f"for a host copy, or move the array with .to('numpy')")
    if dl_device is not None and tuple(dl_device) not in (here, (KDLCPU, 0)):
        raise BufferError(f"__dlpack__: cannot export from device {a.device.name} to DLPack "
                          f"device {tuple(dl_device)}; only (1, 0) (host) is possible")
    if copy is False:
        raise BufferError(
            f"__dlpack__: device {a.device.name} cannot share its memory (its buffers expose "
            f"no host pointer), and copy=False forbids a copy; move the array with "
            f".to('numpy') to share memory, or allow a copy")
    return a.numpy().__dlpack__(stream=stream, max_version=max_version)


def from_dlpack(x: Any, *, device: Any = None, copy: bool | None = None) -> NDArray:
    """An NDArray from any object with ``__dlpack__`` (numpy, PyTorch, JAX, ...).

    The memory is shared when ``device`` keeps its buffers in host memory
    (``numpy``, ``cpu``: its backend has ``wrap_numpy``) and the producer's
    data is writable; on any other device, or from read-only memory, the
    values are copied into a new buffer. Strides (non-contiguous views) are
    kept when sharing.

    Args:
        x: an object implementing the DLPack protocol (``__dlpack__`` and
            ``__dlpack_device__``), in host (CPU) memory.
        device: where the result lives; the default device when ``None``.
        copy: ``True`` always copies; ``False`` never copies and raises
            ``BufferError`` when sharing is impossible; ``None`` shares when
            it can and copies otherwise.

    Returns:
        An NDArray of ``x``'s shape and dtype (float32, float64 or int64).

    Raises:
        TypeError: ``x`` does not implement DLPack.
        DTypeError: ``x``'s dtype is not one Lamina supports.
        BufferError: ``x`` is not in host memory, or ``copy=False`` cannot be met.

    Example:
        >>> import numpy as np
        >>> src = np.zeros(3, np.float32)
        >>> a = from_dlpack(src, device="numpy")
        >>> src[0] = 7.0
        >>> a.tolist()
        [7.0, 0.0, 0.0]
    """
    from ._creation import array
    from ._ndarray import NDArray

    dev = get_device(device)
    if isinstance(x, NDArray):
        if copy is False and x.device is not dev:
            raise BufferError(f"from_dlpack: copy=False, but the array is on {x.device} "
                              f"and device {dev} was asked for")
        return x.copy() if copy and x.device is dev else x.to(dev)
    if not (hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__")):
        raise TypeError(f"from_dlpack: expected an object implementing the DLPack protocol "
                        f"(__dlpack__ and __dlpack_device__), got {type(x).__name__}")
    kind, index = x.__dlpack_device__()
    if kind != KDLCPU:
        raise BufferError(
            f"from_dlpack: the {type(x).__name__} lives on DLPack device "
            f"{_DEVICE_NAMES.get(kind, kind)}:{index}; Lamina imports host (CPU) memory "
            f"only: move it to the CPU first (e.g. tensor.cpu())")
    share = hasattr(dev.backend, "wrap_numpy") and copy is not True
    if copy is False and not share:
        raise BufferError(f"from_dlpack: device {dev} cannot share memory with the "
                          f"producer (its backend has no wrap_numpy), and copy=False "
                          f"forbids a copy")
    host = np.from_dlpack(x, copy=False if copy is False else None)  # array() copies
    dtype = as_dtype(host.dtype, "from_dlpack")
    if share and not host.flags.writeable:
        if copy is False:
            raise BufferError("from_dlpack: the producer's memory is read-only and Lamina "
                              "arrays are writable, so copy=False cannot be met")
        share = False
    if not share or host.size == 0 or dtype.name not in dev.dtypes:  # array() says why
        return array(host, dtype=dtype, device=dev)
    return _wrap(host, dev)


def _wrap(host: np.ndarray, dev: Any) -> NDArray:
    """An NDArray on ``dev`` (a host device) viewing ``host``'s memory, strides included."""
    from ._ndarray import NDArray

    item = host.itemsize
    strides = tuple(s // item for s in host.strides)
    lo = sum(st * (n - 1) for n, st in zip(host.shape, strides) if st < 0)
    hi = sum(st * (n - 1) for n, st in zip(host.shape, strides) if st > 0)
    # The lowest-addressed element starts the flat buffer the view walks.
    first = host[tuple(slice(n - 1, n) if st < 0 else slice(0, 1)
                       for n, st in zip(host.shape, strides))] if host.ndim else host[...]
    flat = as_strided(first.reshape(1), shape=(hi - lo + 1,), strides=(item,))
    # The buffer holds flat, whose base chain keeps the producer's memory alive.
    buf = dev.backend.wrap_numpy(flat)
    return NDArray._view(buf, host.shape, strides, -lo, as_dtype(host.dtype), dev)
