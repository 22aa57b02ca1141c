"""NDArray: shape, strides and offset over a backend's flat buffer.

A view is ``(buffer, shape, strides, offset, dtype, device)``. Reshape (when
the strides allow), permute, transpose, broadcast, slicing, flip and
expand/squeeze build a new view of the same buffer and never copy. Compute
ops live in ``_compute`` and compact their operands only when a kernel needs
it.

Example:
    >>> from lamina.ndarray import array
    >>> a = array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device="numpy")
    >>> a.T.shape, a.T.strides
    ((3, 2), (1, 3))
    >>> (a.T + 1).tolist()
    [[2.0, 5.0], [3.0, 6.0], [4.0, 7.0]]
"""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from . import _dlpack
from . import _layout as L
from ._dtypes import DType, as_dtype
from ._errors import DeviceError, ShapeError
from ._registry import Device, get_device

Shape = tuple[int, ...]
Axes = int | tuple[int, ...] | None


def _bytes(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} bytes"


class NDArray:
    """A strided N-dimensional array on one device (see the module docstring)."""

    __slots__ = ("_buf", "_shape", "_strides", "_offset", "_dtype", "_device", "__weakref__")
    __array_priority__ = 100.0  # numpy scalars on the left defer to our reflected ops
    __hash__ = None  # type: ignore[assignment]  # == is elementwise

    _buf: Any
    _shape: Shape
    _strides: Shape
    _offset: int
    _dtype: DType
    _device: Device

    def __init__(self, data: Any, dtype: Any = None, device: Any = None) -> None:
        from ._creation import array
        other = array(data, dtype=dtype, device=device)
        self._set(other._buf, other._shape, other._strides, other._offset, other._dtype,
                  other._device)

    # ------------------------------------------------------------------ construction
    def _set(self, buf: Any, shape: Shape, strides: Shape, offset: int, dtype: DType,
             device: Device) -> None:
        self._buf = buf
        self._shape = shape
        self._strides = strides
        self._offset = offset
        self._dtype = dtype
        self._device = device

    @classmethod
    def _view(cls, buf: Any, shape: Shape, strides: Shape, offset: int, dtype: DType,
              device: Device) -> NDArray:
        """A view of an existing buffer; no checks (callers build valid layouts)."""
        a = object.__new__(cls)
        a._buf = buf
        a._shape = shape
        a._strides = strides
        a._offset = offset
        a._dtype = dtype
        a._device = device
        return a

    @classmethod
    def _empty(cls, shape: Shape, dtype: DType, device: Device, op: str = "empty") -> NDArray:
        """A new compact array with an uninitialised buffer.

        Every allocation goes through here: the shape is validated once
        (:func:`_layout.checked_size`) and a backend that cannot allocate
        raises MemoryError naming ``op``, the shape and the device.
        """
        size = L.checked_size(shape, dtype.itemsize, op)
        try:
            buf = device.backend.Array(size, dtype.name)
        except MemoryError as exc:
            raise MemoryError(f"{op}: cannot allocate shape {shape} of {dtype.name} "
                              f"({_bytes(size * dtype.itemsize)}) on device {device}: "
                              f"{exc}") from exc
        return cls._view(buf, shape, L.compact_strides(shape), 0, dtype, device)

    def _as_strided(self, shape: Shape, strides: Shape, offset: int) -> NDArray:
        return NDArray._view(self._buf, shape, strides, offset, self._dtype, self._device)

    # ------------------------------------------------------------------ metadata
    @property
    def shape(self) -> Shape:
        return self._shape

    @property
    def strides(self) -> Shape:
        """Strides in elements (not bytes)."""
        return self._strides

    @property
    def offset(self) -> int:
        return self._offset

    @property
    def dtype(self) -> DType:
        return self._dtype

    @property
    def device(self) -> Device:
        return self._device

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        return prod(self._shape)

    @property
    def buffer(self) -> Any:
        """The backend buffer this view reads (shared by every view of it)."""
        return self._buf

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d array")
        return self._shape[0]

    # ------------------------------------------------------------------ host transfer
    def numpy(self) -> np.ndarray:
        """A new numpy array with this array's values (always a copy)."""
        return self._device.backend.to_numpy(self._buf, self._shape, self._strides,
                                             self._offset)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if copy is False:  # numpy 2's np.asarray(a, copy=False): share or refuse
            view = _dlpack.host_view(self)
            if view is None or (dtype is not None and np.dtype(dtype) != view.dtype):
                raise ValueError(f"__array__: an array on {self._device} cannot be seen "
                                 f"by numpy without a copy; allow one (copy=None)")
            return view
        out = self.numpy()
        return out if dtype is None else out.astype(dtype, copy=False)

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        """A DLPack capsule of this array (``np.from_dlpack(a)``, ``torch.from_dlpack(a)``).

        Shares memory on the host devices ``numpy`` and ``cpu``, strides
        included (the consumer's view keeps the buffer alive); on ``cuda`` only
        a host copy can be asked for with ``dl_device=(1, 0)``.
        """
        return _dlpack.export(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        """``(1, 0)`` (kDLCPU) for host devices, ``(2, index)`` (kDLCUDA) on ``cuda``."""
        return _dlpack.dlpack_device(self)

    def item(self) -> float | int:
        """The single value of a one-element array as a Python number."""
        if self.size != 1:
            raise ShapeError(f"item: only one-element arrays can be converted to a Python "
                             f"scalar, got shape {self._shape}")
        return self.numpy().reshape(()).item()

    def tolist(self) -> Any:
        return self.numpy().tolist()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __bool__(self) -> bool:
        return bool(self.item())

    def __repr__(self) -> str:
        body = np.array2string(self.numpy(), separator=", ", prefix="NDArray(")
        return f"NDArray({body}, dtype={self._dtype.name}, device={self._device.name})"

    __str__ = __repr__

    def to(self, device: Any) -> NDArray:
        """This array on ``device`` (itself when already there)."""
        dev = get_device(device)
        if dev is self._device:
            return self
        from ._creation import array
        return array(self.numpy(), dtype=self._dtype, device=dev)

    # ------------------------------------------------------------------ compaction
    def is_compact(self) -> bool:
        """Whether element i of this view is element i of its buffer."""
        return L.is_compact(self._shape, self._strides, self._offset)

    def compact(self) -> NDArray:
        """This array if compact, else a compact copy."""
        if L.is_compact(self._shape, self._strides, self._offset):
            return self
        return self.copy()

    def copy(self) -> NDArray:
        """A compact copy in a new buffer."""
        out = NDArray._empty(self._shape, self._dtype, self._device)
        if out.size:
            self._device.backend.compact(self._buf, out._buf, self._shape, self._strides,
                                         self._offset)
        return out

    def astype(self, dtype: Any) -> NDArray:
        """This array converted to ``dtype`` (itself when it already has it)."""
        dt = as_dtype(dtype, "astype")
        if dt is self._dtype:
            return self
        if dt.name not in self._device.dtypes:
            from ._errors import DTypeError
            raise DTypeError(f"astype: device {self._device.name} does not support "
                             f"{dt.name} (it lists {', '.join(self._device.dtypes)})")
        src = self.compact()
        out = NDArray._empty(self._shape, dt, self._device)
        if out.size:
            self._device.backend.ewise_cast(src._buf, out._buf)
        return out

    # ------------------------------------------------------------------ views
    def reshape(self, *shape: Any) -> NDArray:
        """A view with a new shape when the strides allow it, else a copy."""
        new = L.infer_reshape(self.size, L.normalize_shape(shape, "reshape"), self._shape)
        if new == self._shape:
            return self
        if self.is_compact():
            return self._as_strided(new, L.compact_strides(new), 0)
        strides = L.reshape_strides(self._shape, self._strides, new)
        if strides is None:
            src = self.copy()
            return src._as_strided(new, L.compact_strides(new), 0)
        return self._as_strided(new, strides, self._offset)

    def permute(self, *axes: Any) -> NDArray:
        """A view with the axes reordered: ``result.shape[i] == shape[axes[i]]``."""
        ax = L.normalize_shape(axes, "permute")
        nd = self.ndim
        if sorted(a % nd if nd else a for a in ax) != list(range(nd)) or len(ax) != nd:
            raise ShapeError(f"permute: axes {ax} are not a permutation of {nd} dims "
                             f"of an array of shape {self._shape}")
        ax = tuple(a % nd for a in ax)
        return self._as_strided(tuple(self._shape[a] for a in ax),
                                tuple(self._strides[a] for a in ax), self._offset)

    def transpose(self, dim0: int = -2, dim1: int = -1) -> NDArray:
        """A view with two axes swapped (the last two by default)."""
        nd = self.ndim
        if nd < 2 and (dim0, dim1) == (-2, -1):
            return self
        d0 = L.normalize_axis(dim0, nd, "transpose")
        d1 = L.normalize_axis(dim1, nd, "transpose")
        axes = list(range(nd))
        axes[d0], axes[d1] = axes[d1], axes[d0]
        return self.permute(tuple(axes))

    @property
    def T(self) -> NDArray:  # noqa: N802
        """All axes reversed, like numpy's ``.T``."""
        return self.permute(tuple(range(self.ndim - 1, -1, -1)))

    def broadcast_to(self, *shape: Any) -> NDArray:
        """A read-only-in-spirit view repeating size-1 and missing leading dims."""
        target = L.normalize_shape(shape, "broadcast_to")
        if target == self._shape:
            return self
        strides = L.broadcast_strides(self._shape, self._strides, target, "broadcast_to")
        return self._as_strided(target, strides, self._offset)

    def expand_dims(self, axis: int) -> NDArray:
        """A view with a new size-1 axis inserted at ``axis``."""
        ax = L.normalize_axis(axis, self.ndim + 1, "expand_dims")
        shape = self._shape[:ax] + (1,) + self._shape[ax:]
        stride = self._strides[ax] * self._shape[ax] if ax < self.ndim else 1
        return self._as_strided(shape, self._strides[:ax] + (stride,) + self._strides[ax:],
                                self._offset)

    def squeeze(self, axis: int | tuple[int, ...] | None = None) -> NDArray:
        """A view without the given size-1 axes (all of them by default)."""
        if axis is None:
            axes = tuple(i for i, n in enumerate(self._shape) if n == 1)
        else:
            axes = L.normalize_axes(axis, self.ndim, "squeeze")
            for a in axes:
                if self._shape[a] != 1:
                    raise ShapeError(f"squeeze: axis {a} has size {self._shape[a]}, not 1 "
                                     f"(shape {self._shape})")
        keep = [i for i in range(self.ndim) if i not in axes]
        return self._as_strided(tuple(self._shape[i] for i in keep),
                                tuple(self._strides[i] for i in keep), self._offset)

    def flip(self, axis: int | tuple[int, ...] | None = None) -> NDArray:
        """A view with the order of elements reversed along ``axis``."""
        axes = L.normalize_axes(axis, self.ndim, "flip")
        strides = list(self._strides)
        offset = self._offset
        for a in axes:
            if self._shape[a] > 0:
                offset += (self._shape[a] - 1) * strides[a]
            strides[a] = -strides[a]
        return self._as_strided(self._shape, tuple(strides), offset)

    # ------------------------------------------------------------------ indexing
    def __getitem__(self, key: Any) -> NDArray:
        shape, strides, offset = _index_view(self, key)
        return self._as_strided(shape, strides, offset)

    def __setitem__(self, key: Any, value: Any) -> None:
        shape, strides, offset = _index_view(self, key)
        size = prod(shape)
        if size == 0:
            return
        if any(s == 0 and n > 1 for n, s in zip(shape, strides)):
            raise ShapeError(f"setitem: cannot write through a broadcast view (shape {shape}, "
                             f"strides {strides}); make a copy first")
        backend = self._device.backend
        if isinstance(value, NDArray):
            if value._device is not self._device:
                raise DeviceError(f"setitem: value is on {value._device.name}, array on "
                                  f"{self._device.name}; move one with .to(device)")
            src = value.astype(self._dtype).broadcast_to(shape).compact()
            if src._buf is self._buf:  # the source overlaps the target: read it first
                src = src.copy()
            backend.ewise_setitem(src._buf, self._buf, shape, strides, offset)
        elif isinstance(value, (int, float, bool, np.number)):
            backend.scalar_setitem(size, value, self._buf, shape, strides, offset)
        else:
            from ._creation import array
            self[key] = array(value, dtype=self._dtype, device=self._device)


    # ------------------------------------------------------------------ compute
    # Operators and methods delegate to _compute, which holds the broadcasting,
    # dtype and device rules once for all of them.
    def __add__(self, other: Any) -> NDArray:
        return _compute.binary(self, other, "add")

    __radd__ = __add__

    def __sub__(self, other: Any) -> NDArray:
        return _compute.binary(self, other, "sub")

    def __rsub__(self, other: Any) -> NDArray:
        return _compute.reversed_scalar(self, other, "sub")

    def __mul__(self, other: Any) -> NDArray:
        return _compute.binary(self, other, "mul")

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> NDArray:
        return _compute.binary(self, other, "div")

    def __rtruediv__(self, other: Any) -> NDArray:
        return _compute.reversed_scalar(self, other, "div")

    def __pow__(self, other: Any) -> NDArray:
        return _compute.binary(self, other, "power")

    def __rpow__(self, other: Any) -> NDArray:
        return _compute.reversed_scalar(self, other, "power")

    def __matmul__(self, other: Any) -> NDArray:
        return _compute.matmul(self, other)

    def __rmatmul__(self, other: Any) -> NDArray:
        return _compute.matmul(other, self)

    def __neg__(self) -> NDArray:
        return _compute.unary(self, "neg")

    def __abs__(self) -> NDArray:
        return _compute.unary(self, "abs")

    # comparisons return 1/0 in this array's dtype
    def __eq__(self, other: Any) -> NDArray:  # type: ignore[override]
        return _compute.binary(self, other, "eq")

    def __ne__(self, other: Any) -> NDArray:  # type: ignore[override]
        return _compute.binary(self, other, "ne")

    def __lt__(self, other: Any) -> NDArray:
        return _compute.binary(self, other, "lt")

    def __le__(self, other: Any) -> NDArray:
        return _compute.binary(self, other, "le")

    def __gt__(self, other: Any) -> NDArray:
        return _compute.binary(self, other, "gt")

    def __ge__(self, other: Any) -> NDArray:
        return _compute.binary(self, other, "ge")

    def maximum(self, other: Any) -> NDArray:
        return _compute.binary(self, other, "maximum")

    def minimum(self, other: Any) -> NDArray:
        return _compute.binary(self, other, "minimum")

    def abs(self) -> NDArray:
        return _compute.unary(self, "abs")

    def exp(self) -> NDArray:
        return _compute.unary(self, "exp")

    def log(self) -> NDArray:
        return _compute.unary(self, "log")

    def sqrt(self) -> NDArray:
        return _compute.unary(self, "sqrt")

    def tanh(self) -> NDArray:
        return _compute.unary(self, "tanh")

    def sin(self) -> NDArray:
        return _compute.unary(self, "sin")

    def cos(self) -> NDArray:
        return _compute.unary(self, "cos")

    def sign(self) -> NDArray:
        return _compute.unary(self, "sign")

    def erf(self) -> NDArray:
        return _compute.erf(self)

    def sum(self, axis: Axes = None, keepdims: bool = False) -> NDArray:
        return _compute.reduce(self, axis, keepdims, "sum")

    def max(self, axis: Axes = None, keepdims: bool = False) -> NDArray:
        return _compute.reduce(self, axis, keepdims, "max")

    def min(self, axis: Axes = None, keepdims: bool = False) -> NDArray:
        return _compute.reduce(self, axis, keepdims, "min")

    def mean(self, axis: Axes = None, keepdims: bool = False) -> NDArray:
        return _compute.mean(self, axis, keepdims)

    def argmax(self, axis: int | None = None, keepdims: bool = False) -> NDArray:
        return _compute.argmax(self, axis, keepdims)

    def take(self, indices: Any, axis: int = 0) -> NDArray:
        return _compute.take(self, indices, axis)

    def softmax(self, axis: int = -1) -> NDArray:
        return _compute.softmax(self, axis)

    def logsumexp(self, axis: Axes = -1, keepdims: bool = False) -> NDArray:
        return _compute.logsumexp(self, axis, keepdims)

    def pad(self, pad_width: Any, value: float = 0.0) -> NDArray:
        return _compute.pad(self, pad_width, value)


def _index_view(a: NDArray, key: Any) -> tuple[Shape, Shape, int]:
    """Shape, strides and offset of ``a[key]`` for ints, slices, None and Ellipsis."""
    if type(key) is int and a._shape:  # a[i], the common case, without the general walk
        n = a._shape[0]
        if not -n <= key < n:
            raise IndexError(f"getitem: index {key} is out of range for axis 0 of size {n}")
        return a._shape[1:], a._strides[1:], a._offset + (key % n) * a._strides[0]
    if not isinstance(key, tuple):
        key = (key,)
    if any(isinstance(k, (NDArray, list, np.ndarray)) for k in key):
        raise TypeError("getitem: array indices are not views; use .take(indices, axis)")
    n_ell = sum(k is Ellipsis for k in key)
    if n_ell > 1:
        raise IndexError("getitem: an index can only have a single ellipsis ('...')")
    n_real = sum(k is not None and k is not Ellipsis for k in key)
    if n_real > a.ndim:
        raise IndexError(f"getitem: too many indices for an array of shape {a.shape}: "
                         f"{n_real} were given")
    if n_ell:
        at = key.index(Ellipsis)
        key = key[:at] + (slice(None),) * (a.ndim - n_real) + key[at + 1:]
    else:
        key = key + (slice(None),) * (a.ndim - n_real)
    shape: list[int] = []
    strides: list[int] = []
    offset = a.offset
    dim = 0
    for k in key:
        if k is None:
            shape.append(1)
            strides.append(0)
            continue
        n, s = a.shape[dim], a.strides[dim]
        if isinstance(k, slice):
            start, stop, step = k.indices(n)
            length = len(range(start, stop, step))
            if length:
                offset += start * s
            shape.append(length)
            strides.append(s * step)
        elif isinstance(k, (int, np.integer)):
            i = int(k)
            if not -n <= i < n:
                raise IndexError(f"getitem: index {i} is out of range for axis {dim} of "
                                 f"size {n}")
            offset += (i % n) * s
        else:
            raise TypeError(f"getitem: unsupported index {k!r} of type {type(k).__name__}")
        dim += 1
    return tuple(shape), tuple(strides), offset


from . import _compute  # noqa: E402  (cycle: _compute builds NDArrays)
