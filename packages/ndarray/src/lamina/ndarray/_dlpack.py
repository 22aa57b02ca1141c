"""DLPack exchange, the export side: ``NDArray.__dlpack__``/``__dlpack_device__``.

(``from_dlpack``, the import side, builds arrays and so lives with the other
constructors in ``_creation``.)

Capsules are made and read by numpy (``ndarray.__dlpack__``, ``np.from_dlpack``).
numpy has no bfloat16, so a bfloat16 array travels as its uint16 bits and the
capsule's dtype code is rewritten in place (``retag``: kDLUInt <-> kDLBfloat,
the one field of the DLPack struct Lamina touches) on the way out and in.
What decides between sharing and copying is where a device keeps its values:

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

import ctypes
from typing import Any, Protocol

import numpy as np

from ._numpy_backend import NumpyArray, _view


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
    """A numpy view of ``a`` sharing its memory (a bfloat16 array: its uint16 bits), or
    ``None`` if its device keeps no host memory."""
    buf = a.buffer
    if isinstance(buf, NumpyArray):
        flat = buf.data
    else:
        try:  # a host backend's Array exports the buffer protocol
            memory = memoryview(buf)
        except (TypeError, BufferError):
            return None
        # The numpy array holds the memoryview, which holds the Array; the buffer's
        # format gives the dtype (bfloat16: numpy's one-field record of uint16 bits).
        flat = np.asarray(memory)
    view = object.__new__(NumpyArray)  # the constructor allocates; this shares flat
    view.data = flat.view(np.uint16) if a.dtype.name == "bfloat16" else flat
    return _view(view, a.shape, a.strides, a.offset, "__dlpack__")


# DLDataTypeCode values, and where DLTensor.dtype.code sits in a capsule's struct:
# DLManagedTensor starts with the DLTensor, DLManagedTensorVersioned (DLPack 1.0)
# with a version, manager_ctx, deleter and flags (32 bytes); in DLTensor the code
# follows data (8 bytes), device (8) and ndim (4). bits and lanes follow the code.
KDLUINT = 1
KDLBFLOAT = 4
_CODE_AT = {b"dltensor": 20, b"dltensor_versioned": 52}


def retag(capsule: Any, old: int, new: int) -> bool:
    """Rewrite a 16-bit, 1-lane dtype code ``old`` as ``new`` in an unconsumed DLPack
    capsule; whether it had code ``old`` (else it is left as it was)."""
    api = ctypes.pythonapi
    api.PyCapsule_GetName.restype = ctypes.c_char_p
    api.PyCapsule_GetName.argtypes = [ctypes.py_object]
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    name = api.PyCapsule_GetName(capsule)
    if name not in _CODE_AT:
        return False  # used ("used_dltensor") or not a DLPack capsule: nothing to read
    at = api.PyCapsule_GetPointer(capsule, name) + _CODE_AT[name]
    code = ctypes.c_uint8.from_address(at)
    bits = ctypes.c_uint8.from_address(at + 1).value
    lanes = ctypes.c_uint16.from_address(at + 2).value
    if code.value != old or bits != 16 or lanes != 1:
        return False
    code.value = new
    return True


class BFloat16Bits:
    """A DLPack producer seen through numpy: a bfloat16 capsule of ``producer`` is
    handed on as uint16 bits (``found`` says whether one was)."""

    def __init__(self, producer: Any) -> None:
        self.producer = producer
        self.found = False

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        capsule = self.producer.__dlpack__(*args, **kwargs)
        self.found = retag(capsule, KDLBFLOAT, KDLUINT)
        return capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.producer.__dlpack_device__()


def export(a: Exportable, stream: Any = None, max_version: tuple[int, int] | None = None,
           dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
    """The capsule behind ``NDArray.__dlpack__`` (the array API's signature)."""
    capsule = _export(a, stream, max_version, dl_device, copy)
    if a.dtype.name == "bfloat16":  # numpy made it of the uint16 bits
        retag(capsule, KDLUINT, KDLBFLOAT)
    return capsule


def _export(a: Exportable, stream: Any, max_version: tuple[int, int] | None,
            dl_device: tuple[int, int] | None, copy: bool | None) -> Any:
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
    host = a.numpy()
    if a.dtype.name == "bfloat16":  # float32 holds the values exactly: keep the top halves
        host = (host.view(np.uint32) >> 16).astype(np.uint16)
    return host.__dlpack__(stream=stream, max_version=max_version)
