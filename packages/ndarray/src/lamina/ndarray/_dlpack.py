"""DLPack exchange, the export side: ``NDArray.__dlpack__``/``__dlpack_device__``.

(``from_dlpack``, the import side, builds arrays and so lives with the other
constructors in ``_creation``.)

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

from typing import Any, Protocol

import numpy as np

from ._numpy_backend import NumpyArray, NumpyBackend, _view


class Exportable(Protocol):
    """What the export needs of an array (``_base.ArrayBase`` has it; this module
    sits below it, so it names the attributes instead of importing the class)."""

    @property
    def device(self) -> Any: ...
    @property
    def dtype(self) -> Any: ...
    @property
    def buffer(self) -> Any: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def strides(self) -> tuple[int, ...]: ...
    @property
    def offset(self) -> int: ...
    def numpy(self) -> np.ndarray: ...

# DLDeviceType codes of the DLPack header (dlpack.h).
KDLCPU = 1
KDLCUDA = 2
DEVICE_NAMES = {1: "CPU", 2: "CUDA", 3: "CUDAHost", 4: "OpenCL", 7: "Vulkan", 8: "Metal",
                 10: "ROCm", 13: "CUDAManaged", 14: "OneAPI"}


def dlpack_device(a: Exportable) -> tuple[int, int]:
    """``(device_type, index)`` of ``a``'s memory: ``(2, i)`` on ``cuda:i``, else ``(1, 0)``."""
    if a.device.type == "cuda":
        return KDLCUDA, a.device.index
    return KDLCPU, 0


def host_view(a: Exportable) -> np.ndarray | None:
    """A numpy view of ``a`` sharing its memory, or ``None`` if its device has none
    (or numpy cannot type it: bfloat16)."""
    if a.dtype.name == "bfloat16":
        return None
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


def export(a: Exportable, stream: Any = None, max_version: tuple[int, int] | None = None,
           dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
    """The capsule behind ``NDArray.__dlpack__`` (the array API's signature)."""
    if a.dtype.name == "bfloat16":
        # capsules are made by numpy, which has no bfloat16
        raise BufferError("__dlpack__: a bfloat16 array cannot be exported through DLPack "
                          "(Lamina's capsules come from numpy, which has no bfloat16); "
                          "convert with .astype(float32) first")
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
            f"buffers expose no {DEVICE_NAMES[here[0]]} pointer; pass dl_device=(1, 0) "
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
