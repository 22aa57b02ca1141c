"""Advanced indexing: integer-array and mask keys, item assignment, gather and scatter.

Every op here reduces its key to *positions*: an int64 array of flat indices
into the indexed array's logical (row-major) layout, shaped like the result.
Reading is then one ``take`` of the flattened array, and writing one
``put``: the optional ``index_copy`` kernel at the written positions, or
where a backend lacks it, required kernels (scatter-add and where) over the
whole array. Positions are computed on the host, like the mask indices of
``_compute``: keys are small next to the data, and int64 arithmetic on the
host costs nothing on a device that lacks it.

The key's semantics are PyTorch's: ints (and 0-d integer arrays) select
first, as views; the remaining integer arrays broadcast together, and bool
masks stand for the integer arrays of their ``nonzero()``. Their dims replace
the indexed dims in place when those are adjacent, else they come first.
Negative entries of an integer array count from the end. A bool scalar
(``True``, ``False`` or a 0-d bool array) is a 0-d mask: it indexes no dim
and adds one of size 1 (``True``) or 0 (``False``), so ``a[True]`` is
``a[None]`` as a copy and ``a[False]`` selects nothing.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar, cast

import numpy as np

from . import _layout as L
from ._base import ArrayBase, _index_view
from ._checks import normalize_axis
from ._compute import index_read, take
from ._dtypes import int64
from ._errors import DeviceError, DTypeError, ShapeError
from ._narrow import kernels_for, kernels_of
from ._select import where

A = TypeVar("A", bound=ArrayBase)
Shape = tuple[int, ...]

_ARRAY_KEYS = (ArrayBase, list, np.ndarray)
# bool is an int to Python, but an index of its own to PyTorch and numpy (a 0-d mask)
_ADVANCED_KEYS = (*_ARRAY_KEYS, bool, np.bool_)


def is_advanced(key: Any) -> bool:
    """Whether ``key`` holds an integer array, a mask or a bool (not a view's key)."""
    if isinstance(key, tuple):
        return any(isinstance(k, _ADVANCED_KEYS) for k in key)
    return isinstance(key, _ADVANCED_KEYS)


def _host_key(k: Any, like: ArrayBase, op: str) -> np.ndarray:
    if isinstance(k, ArrayBase):
        if k._device is not like._device:
            raise DeviceError(f"{op}: an index is on {k._device.name}, the array on "
                              f"{like._device.name}; move one with .to(device)")
        host = k.numpy()
    else:
        host = np.asarray(k)
        if host.size == 0 and host.dtype.kind == "f":  # x[[]] is an empty integer index
            host = host.astype(np.int64)
    if host.dtype.kind not in "biu":
        raise DTypeError(f"{op}: index arrays must be integer (int64) or bool masks, "
                         f"got {host.dtype}")
    return host


def index_positions(a: ArrayBase, key: Any, op: str = "getitem") -> np.ndarray:
    """The flat positions in ``a``'s row-major layout that ``a[key]`` reads, as an
    int64 host array of the result's shape (any key: views and advanced)."""
    parts = [_host_key(k, a, op) if isinstance(k, _ARRAY_KEYS)
             else np.array(k) if isinstance(k, (bool, np.bool_)) else k
             for k in (key if isinstance(key, tuple) else (key,))]
    basic: list[Any] = []
    arrays: list[tuple[int, np.ndarray]] = []  # (position in the basic key, index)
    used = sum(k.ndim if isinstance(k, np.ndarray) and k.dtype == np.bool_
               else k is not None and k is not Ellipsis for k in parts)
    if sum(k is Ellipsis for k in parts) > 1:
        raise IndexError(f"{op}: an index can only have a single ellipsis ('...')")
    if used > a.ndim:
        raise IndexError(f"{op}: too many indices for an array of shape {a.shape}: "
                         f"{used} were given")
    dim = 0  # the dim of ``a`` the next part indexes
    for k in parts:
        if k is Ellipsis:
            fill = max(a.ndim - used, 0)
            basic += [slice(None)] * fill
            dim += fill
        elif not isinstance(k, np.ndarray):
            basic.append(k)
            dim += k is not None
        elif k.dtype == np.bool_ and k.ndim == 0:
            # a 0-d mask: a new dim of size 1 (as None) that it indexes at 0, or not at all
            arrays.append((len(basic), np.zeros(int(k), dtype=np.int64)))
            basic.append(None)
        elif k.dtype == np.bool_:
            covered = a.shape[dim:dim + k.ndim]
            if covered != k.shape:
                raise IndexError(f"{op}: the shape of the mask {k.shape} does not match "
                                 f"the shape {covered} of the indexed dims {dim}.. of an "
                                 f"array of shape {a.shape}")
            for idx in np.nonzero(k):
                arrays.append((len(basic), idx.astype(np.int64)))
                basic.append(slice(None))
            dim += k.ndim
        elif k.ndim == 0:  # a 0-d integer array selects like an int, as PyTorch
            basic.append(int(k))
            dim += 1
        else:
            arrays.append((len(basic), k.astype(np.int64)))
            basic.append(slice(None))
            dim += 1
    # The view of the basic key, laid over a's row-major layout: its strides and
    # offset count positions in that layout.
    logical = ArrayBase._view(None, a.shape, L.compact_strides(a.shape), 0, a.dtype, a.device)
    shape, strides, offset = _index_view(logical, tuple(basic))
    if not arrays:
        return _grid(shape, strides, offset)
    return _advanced(basic, arrays, shape, strides, offset, op)


def buffer_positions(a: ArrayBase) -> np.ndarray:
    """The buffer index of each element of the view ``a`` (host int64, ``a``'s shape)."""
    return _grid(a.shape, a.strides, a.offset)


def _grid(shape: Shape, strides: Shape, offset: int) -> np.ndarray:
    out = np.full(shape, offset, dtype=np.int64)
    for d, (n, s) in enumerate(zip(shape, strides)):
        out += (np.arange(n, dtype=np.int64) * s).reshape((n,) + (1,) * (len(shape) - d - 1))
    return out


def _advanced(basic: list[Any], arrays: list[tuple[int, np.ndarray]], shape: Shape,
              strides: Shape, offset: int, op: str) -> np.ndarray:
    """Positions for the index arrays of ``arrays`` laid over the view (shape, strides)."""
    # the view's dim of each basic-key entry (ints drop their dim, None adds one)
    view_dim, d = [], 0
    for k in basic:
        view_dim.append(d)
        d += not isinstance(k, (int, np.integer))
    dims = [view_dim[p] for p, _ in arrays]
    try:
        bshape = np.broadcast_shapes(*(idx.shape for _, idx in arrays))
    except ValueError:
        raise IndexError(f"{op}: shape mismatch: index arrays of shapes "
                         f"{[idx.shape for _, idx in arrays]} cannot be broadcast "
                         f"together") from None
    adv = np.zeros(bshape, dtype=np.int64)
    for (_, idx), d in zip(arrays, dims):
        n = shape[d]
        bad = (idx < -n) | (idx >= n)
        if bad.any():
            raise IndexError(f"{op}: index {int(idx[bad].flat[0])} is out of bounds for "
                             f"dim {d} with size {n}")
        adv = adv + np.where(idx < 0, idx + n, idx) * strides[d]
    rest = [d for d in range(len(shape)) if d not in dims]
    together = dims == list(range(dims[0], dims[0] + len(dims)))
    before = [d for d in rest if d < dims[0]] if together else []
    after = [d for d in rest if d not in before]
    out_shape = tuple(shape[d] for d in before) + bshape + tuple(shape[d] for d in after)
    nd_ = len(out_shape)
    at = len(before)
    out = offset + adv.reshape((1,) * at + bshape + (1,) * len(after))
    axes = list(range(at)) + list(range(at + len(bshape), nd_))
    for ax, d in zip(axes, before + after):
        out = out + (np.arange(shape[d], dtype=np.int64) * strides[d]).reshape(
            tuple(shape[d] if i == ax else 1 for i in range(nd_)))
    return np.ascontiguousarray(np.broadcast_to(out, out_shape))


def _device_index(host: Any, like: A) -> A:
    """Positions as an int64 array on ``like``'s device (device positions pass)."""
    if isinstance(host, ArrayBase):
        return cast(A, host)
    return like._from_host(host, int64, like._device)


def read(a: A, pos: np.ndarray) -> A:
    """The elements of ``a`` at row-major ``positions`` (shaped like them)."""
    return take(a.compact().reshape(-1), _device_index(pos, a), 0)


def wrap_index(index: Any, size: int, like: A, op: str = "getitem", dim: int = 0) -> A:
    """An integer ``index`` (array, list or numpy array) into a dim of ``size``, as an
    int64 array on ``like``'s device with each negative entry ``i`` replaced by
    ``i + size``: what ``take`` reads for PyTorch's ``x[[-1, 0]]``.

    A host index is checked here; entries of a device index outside
    ``[-size, size)`` are left as they are, so the gather kernel reports them
    as given.

    Raises:
        DTypeError: the index is not integer.
        IndexError: an entry is outside ``[-size, size)``.
        DeviceError: the index is on another device than ``like``.

    Example:
        >>> import lamina.ndarray as nd
        >>> nd.wrap_index([-1, 0, 2], 3, nd.zeros(3)).tolist()
        [2, 0, 2]
    """
    if not isinstance(index, ArrayBase):
        host = _host_key(index, like, op)
        bad = (host < -size) | (host >= size)
        if bad.any():
            raise IndexError(f"{op}: index {int(host[bad].flat[0])} is out of bounds for "
                             f"dim {dim} with size {size}")
        return _device_index(np.where(host < 0, host + size, host), like)
    if index._device is not like._device:
        raise DeviceError(f"{op}: an index is on {index._device.name}, the array on "
                          f"{like._device.name}; move one with .to(device)")
    if index._dtype is not int64:
        raise DTypeError(f"{op}: index arrays must be integer (int64) or bool masks, got "
                         f"{index._dtype.name}; convert with .astype(int64)")
    idx: Any = index  # an NDArray, with its comparison operators
    # three small kernels on the index instead of a copy to the host
    out: A = where(idx < 0, where(idx < -size, idx, idx + size), idx)
    return out


def read_array(a: A, key: Any) -> A:
    """``a[key]`` for one array key, as PyTorch: an integer array gathers along dim
    0 (negative entries count from the end), a bool mask selects."""
    if not isinstance(key, ArrayBase):
        key = np.asarray(key)
        if key.size == 0 and key.dtype.kind == "f":  # [] is an empty integer index
            key = key.astype(np.int64)
    kind = key._dtype.np.kind if isinstance(key, ArrayBase) else key.dtype.kind
    if kind in "iu" and a.ndim:
        return take(a, wrap_index(key, a.shape[0], a), 0)
    if kind == "b" and not key.ndim:  # a 0-d mask, as a[True]
        return getitem(a, (key,))
    return index_read(a, key)  # masks, and the errors


def getitem(a: A, key: Any) -> A:
    """``a[key]`` for a key with integer arrays or masks (see the module docstring).

    Shapes: ``a (3, 4)``, ``a[[0, 2], 1:]`` -> ``(2, 3)``; ``a[:, [0, 1]]`` ->
    ``(3, 2)``; ``a[mask]`` for a ``(3, 4)`` mask -> ``(count,)``.
    """
    return read(a, index_positions(a, key))


def _values(a: A, value: Any, shape: Shape, op: str) -> A:
    """``value`` as an array of ``a``'s dtype and device broadcast to ``shape``."""
    if isinstance(value, ArrayBase):
        if value._device is not a._device:
            raise DeviceError(f"{op}: the value is on {value._device.name}, the array on "
                              f"{a._device.name}; move one with .to(device)")
        v = cast("A", value).astype(a._dtype)  # an array is an A here
    else:
        v = a._from_host(np.asarray(value), a._dtype, a._device)
    while v.ndim > len(shape) and v.shape[0] == 1:  # PyTorch drops leading ones
        v = v.reshape(v.shape[1:])
    try:
        L.broadcast_shapes(v.shape, shape, op=op)
        return v.broadcast_to(shape)
    except ValueError:
        raise ShapeError(f"{op}: a value of shape {v.shape} cannot be broadcast to the "
                         f"indexing result's shape {shape}") from None


def put(a: A, pos: np.ndarray, value: Any, accumulate: bool = False,
        op: str = "index_put") -> None:
    """Writes ``value`` (broadcast to ``pos``'s shape) into ``a`` at row-major
    positions, in place: the last of repeated positions wins, or with
    ``accumulate`` every value is added. Uses the backend's optional
    ``index_copy`` (or ``index_scatter_add``) over the written positions only;
    without ``index_copy``, a composition of required kernels over the whole
    array, so every backend has it."""
    vals = _values(a, value, pos.shape, op).compact().reshape(-1)
    flat = pos.reshape(-1)
    size = a.size
    if not flat.size:
        return
    device = a._device
    if vals._buf is a._buf:  # the value reads the array it is written into
        vals = vals.copy()
    # A compact array is written in place; any other view through a compact copy.
    target = a if a.is_compact() else a.copy()
    base = target.reshape(-1)
    if accumulate:
        kernels_for(device, "index_scatter_add", a._dtype, op).index_scatter_add(
            vals._buf, _device_index(flat, a)._buf, base._buf, 1, size, 1)
    else:
        # Each written position takes its last value (positions made unique on the
        # host, O(written)).
        unique, first = np.unique(flat[::-1], return_index=True)
        order = flat.size - 1 - first  # the value each unique (sorted) position takes
        if unique.size != flat.size or (order[1:] < order[:-1]).any():
            vals = take(vals, _device_index(order, a), 0)
        index = _device_index(unique, a)
        copy = device.kernels.index_copy
        if copy is not None and a._dtype.name in device.kernel_dtypes["index_copy"]:
            copy(vals._buf, index._buf, base._buf, 1, size, 1)  # O(written)
        else:
            # Without index_copy: the values and a written-mask scattered into zeros
            # (exact: each position is added once) select with where, O(size).
            scattered = _scatter_into_zeros(vals, index, size, op)
            written = _scatter_into_zeros(_ones_like(vals), index, size, op)
            base[...] = where(written, scattered, base)
    if target is not a:
        a[...] = target


def _scatter_into_zeros(vals: A, index: A, size: int, op: str) -> A:
    """A new (size,) array of zeros plus ``vals`` at ``index``; a float zero is -0.0,
    so that ``-0.0 + v`` is ``v`` for every ``v``, -0.0 included."""
    kernels = kernels_for(vals._device, "index_scatter_add", vals._dtype, op)
    out = vals._empty((size,), vals._dtype, vals._device)
    kernels.fill(out._buf, -0.0 if vals._dtype.is_floating else 0)
    kernels.index_scatter_add(vals._buf, index._buf, out._buf, 1, size, 1)
    return out


def _ones_like(a: A) -> A:
    out = a._like()
    kernels_of(a, "fill", "setitem").fill(out._buf, 1)
    return out


def setitem(a: A, key: Any, value: Any) -> None:
    """``a[key] = value`` for a key with integer arrays or masks, as PyTorch (and
    NumPy, but for ints mixed with arrays: they select first, as in PyTorch)."""
    put(a, index_positions(a, key, "setitem"), value, False, "setitem")


def index_put(a: A, indices: Any, values: Any, accumulate: bool = False) -> A:
    """``a`` with ``a[indices] = values`` (or ``+=`` with ``accumulate``), out of place,
    as ``torch.index_put``: ``indices`` is a tuple of int64 or bool arrays.

    Example:
        >>> import lamina.ndarray as nd
        >>> a = nd.zeros(4)
        >>> nd.index_put(a, (nd.array([0, 2, 0]),), nd.array([1.0, 2.0, 3.0]), True).tolist()
        [4.0, 0.0, 2.0, 0.0]
    """
    out = a.copy()
    key = tuple(indices) if isinstance(indices, (tuple, list)) else (indices,)
    put(out, index_positions(out, key, "index_put"), values, accumulate, "index_put")
    return out


# ---------------------------------------------------------------------- gather, scatter
def along_positions(a: ArrayBase, dim: int, index: Any, op: str, src: Any = None
                    ) -> Any:
    """The positions of ``torch.gather``/``scatter``'s index along ``dim``: element
    ``i`` of ``index`` addresses ``a`` at ``i`` with coordinate ``dim`` replaced by
    ``index[i]``. Checks PyTorch's shape rules (``src`` only for scatter).

    An index on the device gives positions on the device (an int64 array),
    computed there and checked there by the gather kernel, so that gathering
    reads no index to the host; ``scatter``, which orders its writes on the
    host, and a host index give a host array.
    """
    ax = normalize_axis(dim, max(a.ndim, 1), op, "dim")
    if isinstance(index, ArrayBase) and index._dtype is not int64:
        raise DTypeError(f"{op}: the index must be int64, got {index._dtype.name}")
    on_device = isinstance(index, ArrayBase) and op != "scatter"
    host = None if on_device else _host_key(index, a, op)
    if host is not None and host.dtype.kind not in "iu":
        raise DTypeError(f"{op}: the index must be int64, got {host.dtype}")
    given = index.shape if host is None else host.shape
    shape = a.shape or (1,)
    if len(given) != len(shape) and not (len(given) == 0 and a.ndim == 0):
        raise ShapeError(f"{op}: the index must have as many dims as the array: index of "
                         f"shape {given}, array of shape {a.shape}")
    ishape = given or (1,)
    if any(i > n for d, (i, n) in enumerate(zip(ishape, shape)) if d != ax):
        raise ShapeError(f"{op}: index of shape {given} must be no larger than the "
                         f"array's shape {a.shape} outside dim {ax}")
    if src is not None and any(i > n for i, n in zip(ishape, src.shape or (1,))):
        raise ShapeError(f"{op}: index of shape {given} must be no larger than the "
                         f"source's shape {src.shape}")
    n = shape[ax]
    strides = L.compact_strides(shape)
    # each element's position with its coordinate along dim set to 0
    base = _grid(ishape, strides[:ax] + (0,) + strides[ax + 1:], 0)
    if host is None:
        if index._device is not a._device:
            raise DeviceError(f"{op}: the index is on {index._device.name}, the array on "
                              f"{a._device.name}; move one with .to(device)")
        idx = index.reshape(ishape)
        _check_along(idx, n, op, ax)
        pos = _device_index(base, a) + idx * strides[ax] if idx.size else \
            _device_index(base, a)
        return pos.reshape(given)
    idx = host.reshape(ishape).astype(np.int64)
    bad = (idx < 0) | (idx >= n)
    if bad.any():
        raise IndexError(f"{op}: index {int(idx[bad].flat[0])} is out of bounds for dim "
                         f"{ax} with size {n}")
    return (base + idx * strides[ax]).reshape(host.shape)


def _check_along(idx: ArrayBase, n: int, op: str, ax: int) -> None:
    """IndexError, in ``along_positions``' words, for an entry of the device index
    ``idx`` outside ``[0, n)``: the gather kernel's own check, run on a dummy axis
    of ``n`` elements (so nothing is read to the host)."""
    if not idx.size:
        return
    flat = idx.compact().reshape(-1)
    dummy = flat._empty((n,), int64, flat._device) if n else None
    scratch = flat._like()
    try:
        if dummy is None:
            raise IndexError("index 0 is out of range for an axis of size 0")
        flat._device.kernels.index_gather(dummy._buf, flat._buf, scratch._buf, 1, n, 1)
    except IndexError as e:
        found = re.search(r"index (-?\d+)", str(e))
        value = found.group(1) if found else "?"
        raise IndexError(f"{op}: index {value} is out of bounds for dim {ax} with size "
                         f"{n}") from None


def gather(a: A, dim: int, index: Any) -> A:
    """``torch.gather``: ``out[i][j] = a[index[i][j]][j]`` for ``dim=0`` (any rank).

    Shapes: ``index`` has ``a``'s number of dims and is no larger than ``a``
    outside ``dim``; the result has ``index``'s shape.
    """
    return read(a, along_positions(a, dim, index, "gather"))


def scatter(a: A, dim: int, index: Any, src: Any, accumulate: bool = False) -> A:
    """``torch.scatter`` (``scatter_add`` with ``accumulate``), out of place:
    ``out[index[i][j]][j] = src[i][j]`` for ``dim=0``; ``src`` is an array of at
    least ``index``'s shape (its leading block is used) or a scalar."""
    op = "scatter_add" if accumulate else "scatter"
    if isinstance(src, ArrayBase):
        if src._dtype is not a._dtype:
            raise DTypeError(f"{op}: the source's dtype {src._dtype.name} differs from "
                             f"the array's {a._dtype.name}")
        pos = along_positions(a, dim, index, op, src)
        src = src[tuple(slice(0, n) for n in pos.shape)] if pos.ndim else src
    else:
        pos = along_positions(a, dim, index, op)
    out = a.copy()
    put(out, pos, src, accumulate, op)
    return out

