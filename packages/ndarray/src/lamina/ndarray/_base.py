"""ArrayBase: shape, strides and offset over a backend's flat buffer.

A view is ``(buffer, shape, strides, offset, dtype, device)``. Reshape (when
the strides allow), permute, transpose, broadcast, slicing, flip and
expand/squeeze build a new view of the same buffer and never copy. This
module is the root of the array modules: ``_select`` and ``_compute`` build
on it, and ``_ndarray`` adds the operators (:class:`NDArray`).
"""

from __future__ import annotations

from math import prod
from typing import Any, TypeVar

import numpy as np

from . import _dlpack
from . import _host as H
from . import _layout as L
from ._checks import check_device_dtype, normalize_axes, normalize_axis, normalize_permutation
from ._dtypes import DType, as_dtype, float32, int64
from ._errors import DeviceError, ShapeError
from ._host import device_for
from ._narrow import kernels_for
from ._registry import Device, get_device

Shape = tuple[int, ...]
A = TypeVar("A", bound="ArrayBase")


def _bytes(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} bytes"


def _from_pickle(cls: type[A], values: np.ndarray, dtype: DType, device: Device) -> A:
    """Rebuilds a pickled array: its values copied onto ``device``."""
    return cls._from_host(values, dtype, device)


class ArrayBase:
    """Layout, views, host transfer and indexing of :class:`NDArray` (its only subclass).

    Compute ops take and return arrays of the caller's class: they allocate
    with ``a._empty(...)``, so this module and ``_compute`` need not import
    ``NDArray``, which adds the operators on top of both.
    """

    # _compact caches is_compact() (None until asked): views never change their
    # layout, and every op asks it of every operand.
    __slots__ = ("_buf", "_shape", "_strides", "_offset", "_dtype", "_device", "_compact",
                 "__weakref__")
    __array_priority__ = 100.0  # numpy scalars on the left defer to our reflected ops
    __hash__ = None  # type: ignore[assignment]  # == is elementwise

    _buf: Any
    _shape: Shape
    _strides: Shape
    _offset: int
    _dtype: DType
    _device: Device
    _compact: bool | None

    def __init__(self, data: Any, dtype: Any = None, device: Any = None) -> None:
        other = self._from_host(data, dtype, device)
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
        self._compact = None

    @classmethod
    def _view(cls: type[A], buf: Any, shape: Shape, strides: Shape, offset: int, dtype: DType,
              device: Device) -> A:
        """A view of an existing buffer; no checks (callers build valid layouts)."""
        a = object.__new__(cls)
        a._buf = buf
        a._shape = shape
        a._strides = strides
        a._offset = offset
        a._dtype = dtype
        a._device = device
        a._compact = None
        return a

    @classmethod
    def _empty(cls: type[A], shape: Shape, dtype: DType, device: Device, op: str = "empty") -> A:
        """A new compact array with an uninitialised buffer.

        Every allocation goes through here: the shape is validated once (a
        cached test, :func:`_layout.new_layout`; :func:`_layout.checked_size`
        builds the error when it fails) and a backend that cannot allocate
        raises MemoryError naming ``op``, the shape and the device.
        """
        layout = L.new_layout(shape, dtype.itemsize)
        if layout is None:  # checked_size raises, with the message
            layout = (L.checked_size(shape, dtype.itemsize, op), L.compact_strides(shape))
        size, strides = layout
        arg = device._alloc_arg.get(dtype.name)
        try:
            # a dtype the device does not list goes to Array, which raises naming it
            buf = device._alloc(size, arg) if arg is not None else \
                device.kernels.Array(size, dtype.name)
        except MemoryError as exc:
            raise MemoryError(f"{op}: cannot allocate shape {shape} of {dtype.name} "
                              f"({_bytes(size * dtype.itemsize)}) on device {device}: "
                              f"{exc}") from exc
        out = object.__new__(cls)  # _view inlined: every new array comes through here
        out._buf = buf
        out._shape = shape
        out._strides = strides
        out._offset = 0
        out._dtype = dtype
        out._device = device
        out._compact = True
        return out

    def _like(self: A) -> A:
        """A new compact array of this one's shape, dtype and device.

        The shape is that of an existing array, so it needs none of
        ``_empty``'s checks: the fast allocation of elementwise results
        (``_view`` is inlined: this runs once per op).
        """
        shape = self._shape
        device = self._device
        dtype = self._dtype
        try:
            buf = device._alloc(prod(shape), device._alloc_arg[dtype.name])
        except MemoryError:
            return self._empty(shape, dtype, device)  # raises, naming the shape
        out = object.__new__(self.__class__)
        out._buf = buf
        out._shape = shape
        # A compact array's strides fit a new compact buffer of its shape.
        out._strides = self._strides if self._compact else L.compact_strides(shape)
        out._offset = 0
        out._dtype = dtype
        out._device = device
        out._compact = True
        return out

    def _as_strided(self: A, shape: Shape, strides: Shape, offset: int) -> A:
        return self._view(self._buf, shape, strides, offset, self._dtype, self._device)

    @classmethod
    def _from_host(cls: type[A], obj: Any, dtype: Any = None, device: Any = None) -> A:
        """What :func:`lamina.ndarray.array` returns (see its docstring)."""
        if isinstance(obj, ArrayBase):
            out = obj.astype(dtype) if dtype is not None else obj
            return out.to(device) if device is not None else out  # type: ignore[return-value]
        from_numpy = isinstance(obj, (np.ndarray, np.generic))
        raw = np.asarray(obj)
        if raw.dtype.kind == "O" and dtype in (None, int64, "int64"):
            raw = H.big_ints(raw)
        dt = as_dtype(dtype, "array") if dtype is not None else H.infer_dtype(raw, from_numpy)
        dev = device_for(device, dt, "array")
        if dt is int64:
            H.check_int64_range(raw)
        host = np.asarray(raw, dtype=dt.np, order="C")
        out = cls._empty(host.shape, dt, dev)
        if host.size:
            kernels = dev.kernels if not dt.is_narrow else \
                kernels_for(dev, "from_numpy", dt, "array")
            kernels.from_numpy(host.reshape(-1), out._buf)
        return out

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
        """A new numpy array with this array's values (always a copy); float32 for a
        bfloat16 array (numpy has no bfloat16; float32 holds every value exactly)."""
        dtype = self._dtype
        if dtype.is_narrow:
            host = kernels_for(self._device, "to_numpy", dtype, "numpy").to_numpy(
                self._buf, self._shape, self._strides, self._offset)
            return host.astype(dtype.np, copy=False)
        return self._device.kernels.to_numpy(self._buf, self._shape, self._strides,
                                             self._offset)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if copy is False:  # numpy 2's np.asarray(a, copy=False): share or refuse
            view = _dlpack.host_view(self) if self._dtype.name != "bfloat16" else None
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

    def to(self: A, device: Any) -> A:
        """This array on ``device`` (itself when already there)."""
        dev = get_device(device)
        if dev is self._device:
            return self
        return self._from_host(self.numpy(), self._dtype, dev)

    # ------------------------------------------------------------------ compaction
    def is_compact(self) -> bool:
        """Whether element i of this view is element i of its buffer."""
        compact = self._compact
        if compact is None:
            compact = self._compact = L.is_compact(self._shape, self._strides, self._offset)
        return compact

    def compact(self: A) -> A:
        """This array if compact, else a compact copy."""
        if self._compact or self.is_compact():
            return self
        return self.copy()

    def copy(self: A) -> A:
        """A compact copy in a new buffer."""
        out = self._like()
        if out._buf.size:
            self._device.kernels.compact(self._buf, out._buf, self._shape, self._strides,
                                         self._offset)
        return out

    # Pickling goes through the host: a compiled backend's buffer is an opaque handle.
    # The device is pickled by name and resolved again on load (see Device.__reduce__).
    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return _from_pickle, (type(self), self.numpy(), self._dtype, self._device)

    def __deepcopy__(self: A, memo: dict[int, Any]) -> A:
        return self.copy()  # on the device, without a round trip through the host

    def astype(self: A, dtype: Any) -> A:
        """This array converted to ``dtype`` (itself when it already has it)."""
        dt = as_dtype(dtype, "astype")
        if dt is self._dtype:
            return self
        check_device_dtype(self._device, dt, "astype")
        if (dt.is_narrow or self._dtype.is_narrow) and float32 not in (dt, self._dtype):
            # a backend converts narrow floats to and from float32 only (interface v2.2);
            # through it, as PyTorch's conversions go
            return self.astype(float32).astype(dt)
        src = self.compact()
        out = self._empty(self._shape, dt, self._device)
        if out.size:
            self._device.kernels.ewise_cast(src._buf, out._buf)
        return out

    # ------------------------------------------------------------------ views
    def reshape(self: A, *shape: Any) -> A:
        """A view with a new shape when the strides allow it, else a copy."""
        new = L.infer_reshape(prod(self._shape), L.normalize_shape(shape, "reshape"),
                              self._shape)
        if new == self._shape:
            return self
        if self._compact or self.is_compact():
            return self._as_strided(new, L.compact_strides(new), 0)
        strides = L.reshape_strides(self._shape, self._strides, new)
        if strides is None:
            src = self.copy()
            return src._as_strided(new, L.compact_strides(new), 0)
        return self._as_strided(new, strides, self._offset)

    def permute(self: A, *axes: Any) -> A:
        """A view with the axes reordered: ``result.shape[i] == shape[axes[i]]``."""
        ax = normalize_permutation(L.normalize_shape(axes, "permute"), len(self._shape),
                                   "permute", self._shape)
        return self._permuted(ax)

    def _permuted(self: A, axes: tuple[int, ...]) -> A:
        """The view for axes already checked to be a permutation."""
        # map over the axes, not comprehensions: no Python frame (every attention permutes)
        return self._view(self._buf, tuple(map(self._shape.__getitem__, axes)),
                          tuple(map(self._strides.__getitem__, axes)), self._offset,
                          self._dtype, self._device)

    def transpose(self: A, dim0: int = -2, dim1: int = -1) -> A:
        """A view with two axes swapped (the last two by default)."""
        nd = self.ndim
        if nd < 2 and (dim0, dim1) == (-2, -1):
            return self
        d0 = normalize_axis(dim0, nd, "transpose")
        d1 = normalize_axis(dim1, nd, "transpose")
        axes = list(range(nd))
        axes[d0], axes[d1] = axes[d1], axes[d0]
        return self._permuted(tuple(axes))

    @property
    def T(self: A) -> A:  # noqa: N802
        """All axes reversed, like numpy's ``.T``."""
        shape, strides = self._shape, self._strides
        # a weight's transpose is taken for every linear layer call: one view, no loops
        return self._view(self._buf, shape[::-1], strides[::-1], self._offset, self._dtype,
                          self._device)

    def broadcast_to(self: A, *shape: Any) -> A:
        """A read-only-in-spirit view repeating size-1 and missing leading dims."""
        target = L.normalize_shape(shape, "broadcast_to")
        if target == self._shape:
            return self
        strides = L.broadcast_strides(self._shape, self._strides, target, "broadcast_to")
        return self._as_strided(target, strides, self._offset)

    def expand_dims(self: A, axis: int) -> A:
        """A view with a new size-1 axis inserted at ``axis``."""
        ax = normalize_axis(axis, self.ndim + 1, "expand_dims")
        shape = self._shape[:ax] + (1,) + self._shape[ax:]
        stride = self._strides[ax] * self._shape[ax] if ax < self.ndim else 1
        return self._as_strided(shape, self._strides[:ax] + (stride,) + self._strides[ax:],
                                self._offset)

    def squeeze(self: A, axis: int | tuple[int, ...] | None = None) -> A:
        """A view without the given size-1 axes (all of them by default)."""
        if axis is None:
            axes = tuple(i for i, n in enumerate(self._shape) if n == 1)
        else:
            axes = normalize_axes(axis, self.ndim, "squeeze")
            for a in axes:
                if self._shape[a] != 1:
                    raise ShapeError(f"squeeze: axis {a} has size {self._shape[a]}, not 1 "
                                     f"(shape {self._shape})")
        keep = [i for i in range(self.ndim) if i not in axes]
        return self._as_strided(tuple(self._shape[i] for i in keep),
                                tuple(self._strides[i] for i in keep), self._offset)

    def flip(self: A, axis: int | tuple[int, ...] | None = None) -> A:
        """A view with the order of elements reversed along ``axis``."""
        axes = normalize_axes(axis, self.ndim, "flip")
        strides = list(self._strides)
        offset = self._offset
        for a in axes:
            if self._shape[a] > 0:
                offset += (self._shape[a] - 1) * strides[a]
            strides[a] = -strides[a]
        return self._as_strided(self._shape, tuple(strides), offset)

    # ------------------------------------------------------------------ indexing
    def __getitem__(self: A, key: Any) -> A:
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
        kernels = self._device.kernels
        if isinstance(value, ArrayBase):
            if value._device is not self._device:
                raise DeviceError(f"setitem: value is on {value._device.name}, array on "
                                  f"{self._device.name}; move one with .to(device)")
            src = value.astype(self._dtype).broadcast_to(shape).compact()
            if src._buf is self._buf:  # the source overlaps the target: read it first
                src = src.copy()
            kernels.ewise_setitem(src._buf, self._buf, shape, strides, offset)
        elif isinstance(value, (int, float, bool, np.number)):
            if self._dtype.is_narrow:
                kernels = kernels_for(self._device, "scalar_setitem", self._dtype, "setitem")
            kernels.scalar_setitem(size, value, self._buf, shape, strides, offset)
        else:
            self[key] = self._from_host(value, self._dtype, self._device)


def _index_view(a: ArrayBase, key: Any) -> tuple[Shape, Shape, int]:
    """Shape, strides and offset of ``a[key]`` for ints, slices, None and Ellipsis."""
    if type(key) is int and a._shape:  # a[i], the common case, without the general walk
        n = a._shape[0]
        if not -n <= key < n:
            raise IndexError(f"getitem: index {key} is out of range for axis 0 of size {n}")
        return a._shape[1:], a._strides[1:], a._offset + (key % n) * a._strides[0]
    if not isinstance(key, tuple):
        key = (key,)
    if any(isinstance(k, (ArrayBase, list, np.ndarray)) for k in key):
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
