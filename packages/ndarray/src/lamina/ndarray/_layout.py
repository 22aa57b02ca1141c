"""Pure shape arithmetic: strides, broadcasting, axes, reshape-as-view.

Nothing here touches a buffer; every function maps shapes and strides (in
elements) to shapes and strides, and raises ShapeError naming the op.
"""

from __future__ import annotations

from functools import lru_cache
from math import prod
from typing import Any

import numpy as np

from ._errors import ShapeError

Shape = tuple[int, ...]


@lru_cache(maxsize=4096)
def compact_strides(shape: Shape) -> Shape:
    """Row-major strides, in elements, of a compact array of ``shape``.

    Cached: every new array asks, and a training loop repeats a few shapes.
    """
    strides = [1] * len(shape)
    step = 1
    for i in range(len(shape) - 1, -1, -1):
        strides[i] = step
        step *= shape[i]
    return tuple(strides)


@lru_cache(maxsize=4096)
def is_compact(shape: Shape, strides: Shape, offset: int) -> bool:
    """Whether element i of the view is element i of its buffer (cached, like
    ``compact_strides``: most ops ask it of every operand)."""
    if offset != 0:
        return False
    step = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != step:
            return False
        step *= n
    return True


MAX_BYTES = 2**63 - 1  # what a 64-bit size_t/ptrdiff_t can address: no buffer is larger


@lru_cache(maxsize=4096)
def new_layout(shape: Shape, itemsize: int) -> tuple[int, Shape] | None:
    """``(size, compact strides)`` of a new array of ``shape``, or None when no buffer
    can hold it (a negative dim, or more bytes than 64 bits address; :func:`checked_size`
    says which). Cached like ``compact_strides``: every allocation asks."""
    size = prod(shape)
    if size * itemsize > MAX_BYTES or (shape and min(shape) < 0):
        return None
    return size, compact_strides(shape)


def normalize_shape(shape: Any, op: str) -> Shape:
    """Accept ``(2, 3)``, ``[2, 3]`` or ``((2, 3),)`` and return a tuple of ints.

    Every entry must be an integer (a Python or numpy int, not a float or a
    bool): ``(2.5, 3)`` raises instead of truncating. Signs are not checked
    here (reshape takes -1, permute negative axes); see :func:`checked_size`.
    """
    if type(shape) is tuple:  # the common case, a tuple of Python ints: itself
        if len(shape) == 1 and type(shape[0]) is tuple:  # f((2, 3)) for f(*shape)
            shape = shape[0]
        for n in shape:
            if type(n) is not int:
                break
        else:
            return shape
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
        shape = shape[0]
    try:
        items = tuple(shape)
    except TypeError:
        raise ShapeError(f"{op}: shape must be a sequence of ints, got {shape!r}") from None
    bad = [n for n in items if isinstance(n, (bool, np.bool_))
           or not isinstance(n, (int, np.integer))]
    if bad:
        raise ShapeError(f"{op}: shape must be a sequence of ints, got {shape!r} "
                         f"({bad[0]!r} is a {type(bad[0]).__name__})")
    return tuple(map(int, items))


def checked_size(shape: Shape, itemsize: int, op: str) -> int:
    """The element count of a new array of ``shape``, once it is known to be possible.

    Raises ShapeError for a negative dimension and for a shape whose bytes
    exceed what any 64-bit buffer can hold (where a C++ ``int64_t`` product
    would wrap), naming the op, the shape and the size.
    """
    if shape and min(shape) < 0:
        raise ShapeError(f"{op}: negative dimension in shape {shape}")
    size = prod(shape)
    if size * itemsize > MAX_BYTES:
        raise ShapeError(f"{op}: shape {shape} has {size} elements ({size * itemsize} "
                         f"bytes), more than a buffer can hold (at most 2**63 - 1 bytes)")
    return size


def broadcast_shapes(*shapes: Shape, op: str = "broadcast") -> Shape:
    """NumPy's broadcasting rule for any number of shapes."""
    ndim = max(map(len, shapes))
    out = []
    for i in range(-ndim, 0):
        n = 1
        for s in shapes:
            m = s[i] if -i <= len(s) else 1
            if m != 1:
                if n not in (1, m):
                    shown = " and ".join(str(tuple(s)) for s in shapes)
                    raise ShapeError(f"{op}: shapes {shown} cannot be broadcast together "
                                     f"(dim {i}: {n} vs {m})")
                n = m
        out.append(n)
    return tuple(out)


@lru_cache(maxsize=4096)
def broadcast_pair(a: Shape, b: Shape, op: str) -> Shape:
    """``broadcast_shapes(a, b, op=op)`` for two tuples, cached like ``compact_strides``:
    every broadcasting binary op asks, and a model repeats a few pairs."""
    return broadcast_shapes(a, b, op=op)


@lru_cache(maxsize=4096)
def broadcast_strides(shape: Shape, strides: Shape, target: Shape, op: str) -> Shape:
    """Strides of ``shape`` broadcast to ``target``: new and stretched dims get stride 0.

    Cached (the arguments are tuples and the op's name): each broadcast operand asks.
    """
    lead = len(target) - len(shape)
    if lead < 0:
        raise ShapeError(f"{op}: cannot broadcast shape {shape} to {target} with fewer dims")
    out = [0] * lead
    for n, s, t in zip(shape, strides, target[lead:]):
        if n == t:
            out.append(s)
        elif n == 1:
            out.append(0)
        else:
            raise ShapeError(f"{op}: cannot broadcast shape {shape} to {target}")
    return tuple(out)


def infer_reshape(size: int, shape: Shape, old: Shape, op: str = "reshape") -> Shape:
    """Resolve one ``-1`` and check the element count."""
    if -1 not in shape and prod(shape) == size and (not shape or min(shape) >= 0):
        return shape
    if shape.count(-1) > 1:
        raise ShapeError(f"{op}: only one dimension can be -1, got {shape}")
    if shape and min(shape) < -1:
        raise ShapeError(f"{op}: invalid dimension in {shape}")
    if -1 in shape:
        i = shape.index(-1)
        known = prod(shape[:i]) * prod(shape[i + 1:])
        if known == 0 or size % known:
            raise ShapeError(f"{op}: cannot reshape array of shape {old} (size {size}) "
                             f"into {shape}")
        shape = shape[:i] + (size // known,) + shape[i + 1:]
    if prod(shape) != size:
        raise ShapeError(f"{op}: cannot reshape array of shape {old} (size {size}) into "
                         f"{shape} (size {prod(shape)})")
    return shape


def reshape_strides(old: Shape, strides: Shape, new: Shape) -> Shape | None:
    """Strides that view ``old`` as ``new`` without copying, or None if impossible.

    Walks both shapes in groups of equal element count; a group of old dims
    can merge only if it is contiguous among itself (NumPy's rule).
    """
    if prod(old) == 0:
        return compact_strides(new)
    o = [(n, s) for n, s in zip(old, strides) if n != 1]
    out: list[int] = []
    i = 0
    j = 0
    nonone_new = [k for k, n in enumerate(new) if n != 1]
    result = [0] * len(new)
    while i < len(o) or j < len(nonone_new):
        if i >= len(o) or j >= len(nonone_new):
            return None
        count_old, count_new = o[i][0], new[nonone_new[j]]
        gi, gj = [i], [j]
        while count_old != count_new:
            if count_old < count_new:
                i += 1
                if i >= len(o):
                    return None
                count_old *= o[i][0]
                gi.append(i)
            else:
                j += 1
                if j >= len(nonone_new):
                    return None
                count_new *= new[nonone_new[j]]
                gj.append(j)
        for a, b in zip(gi, gi[1:]):  # merged old dims must be contiguous in order
            if o[a][1] != o[b][1] * o[b][0]:
                return None
        step = o[gi[-1]][1]
        for k in reversed(gj):
            result[nonone_new[k]] = step
            step *= new[nonone_new[k]]
        i += 1
        j += 1
    out = result
    # size-1 dims get the stride a compact array would give them (any value is valid)
    comp = compact_strides(new)
    return tuple([comp[k] if n == 1 else out[k] for k, n in enumerate(new)])
