"""lamina-backend-tiny: the whole backend interface v2 on one screen.

A Lamina backend is a flat buffer type and kernels over it. NDArray above it
owns every shape, stride and broadcasting rule, so a backend only ever sees:

* flat buffers (``Array``), here a 1-D numpy array in ``.data``;
* layouts as plain ints, in elements: a view ``(shape, strides, offset)``
  puts the element at multi-index ``idx`` at ``offset + sum(idx * strides)``;
* arguments in the order *inputs, output, layout*; kernels write into
  ``out`` and return nothing.

Device ``tiny`` lists float32 (required) and int64 (for indices, labels and
comparisons); it leaves float64 and bool out, which the interface allows, and
says in ``kernel_dtypes`` which kernels take float32 only. It is registered
by the ``lamina.backends`` entry point in this package's pyproject.toml.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

name = "tiny"
api_version = 2
api_minor_version = 0
dtypes = ("float32", "int64")


def is_available() -> bool:
    return True  # nothing to probe: no hardware, no driver


def unavailable_reason() -> str:
    return ""


class Array:
    """A flat buffer of ``size`` elements of one dtype."""

    def __init__(self, size: int, dtype: str) -> None:
        if dtype not in dtypes:
            raise TypeError(f"Array: tiny supports {dtypes}, not {dtype!r}")
        if size < 0:
            raise ValueError(f"Array: size must be >= 0, got {size}")
        self.data = np.empty(size, dtype)

    size = property(lambda self: self.data.size)
    dtype = property(lambda self: self.data.dtype.name)


# ------------------------------------------------------------------ buffers
def from_numpy(src: np.ndarray, out: Array) -> None:
    if src.size != out.size:
        raise ValueError(f"from_numpy: source has {src.size} elements, out has {out.size}")
    out.data[:] = src.reshape(-1)


def to_numpy(a: Array, shape: tuple, strides: tuple, offset: int) -> np.ndarray:
    return a.data[positions(a, shape, strides, offset, "to_numpy")].reshape(shape)


def fill(out: Array, value: float) -> None:
    out.data[:] = value


# ------------------------------------------------------------------ strided access
def positions(buf: Array, shape: tuple, strides: tuple, offset: int, op: str) -> np.ndarray:
    """Buffer index of every element of a view, in row-major (logical) order.

    This is the one formula of the whole design: element ``idx`` of the view
    is ``buf[offset + sum(idx[k] * strides[k])]``. Built one axis at a time,
    ``pos`` ends as an array of ``shape`` holding those indices.
    """
    if len(shape) != len(strides):
        raise ValueError(f"{op}: shape {shape} and strides {strides} differ in length")
    if any(n < 0 for n in shape):
        raise ValueError(f"{op}: negative dimension in shape {shape}")
    # The first and last element reached, in Python ints: int64 arithmetic
    # (numpy's included) would wrap for strides near 2**63.
    lo = offset + sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    hi = offset + sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
    if 0 not in shape and (lo < 0 or hi >= buf.size):
        raise ValueError(f"{op}: view (shape {shape}, strides {strides}, offset {offset}) "
                         f"reaches outside a buffer of {buf.size} elements")
    pos = np.array(offset, dtype=np.int64)
    for n, s in zip(shape, strides):
        pos = pos[..., None] + np.arange(n, dtype=np.int64) * s
    return pos.reshape(-1)


def count(op: str, shape: tuple, have: int, what: str) -> int:
    """The number of elements of ``shape``, checked against the ``have`` of ``what``."""
    n = math.prod(shape)
    if n > have:
        raise ValueError(f"{op}: a view of shape {shape} has {n} elements, {what} has {have}")
    return n


def compact(a: Array, out: Array, shape: tuple, strides: tuple, offset: int) -> None:
    n = count("compact", shape, out.size, "out")
    out.data[:n] = a.data[positions(a, shape, strides, offset, "compact")]


def ewise_setitem(a: Array, out: Array, shape: tuple, strides: tuple, offset: int) -> None:
    n = count("ewise_setitem", shape, a.size, "the source")
    out.data[positions(out, shape, strides, offset, "ewise_setitem")] = a.data[:n]


def scalar_setitem(size: int, value: float, out: Array, shape: tuple, strides: tuple,
                   offset: int) -> None:
    if math.prod(shape) != size:
        raise ValueError(f"scalar_setitem: size {size} != prod(shape {shape})")
    out.data[positions(out, shape, strides, offset, "scalar_setitem")] = value


# ------------------------------------------------------------------ elementwise
def first(op: str, n: int, *bufs: Array) -> list[np.ndarray]:
    """The first ``n`` elements of each operand (a buffer may be longer)."""
    for i, b in enumerate(bufs):
        if b.size < n:
            raise ValueError(f"{op}: operand {i} has {b.size} elements, needs {n}")
    return [b.data[:n] for b in bufs]


BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
          "power": np.power, "maximum": np.maximum, "minimum": np.minimum,
          "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
          "gt": np.greater, "ge": np.greater_equal}
UNARY = {"neg": np.negative, "abs": np.abs, "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
         "tanh": np.tanh, "sin": np.sin, "cos": np.cos, "sign": np.sign}
REVERSED = {"rsub": np.subtract, "rdiv": np.divide, "rpower": np.power}


def _kernels(op: str, f: Any) -> dict[str, Any]:
    """The kernels of one numpy function: ``ewise_OP`` and ``scalar_OP`` (or ``scalar_rOP``).

    Assigning into ``out.data`` converts the result to out's dtype, so a
    comparison writes 1 and 0 in the operands' dtype, as the interface says.
    Out-of-domain inputs give inf/nan silently, like the reference backend.
    """
    def ewise(a: Array, b: Array, out: Array) -> None:
        x, y = first(f"ewise_{op}", out.size, a, b)
        with np.errstate(all="ignore"):
            out.data[:] = f(x, y)

    def scalar(a: Array, value: float, out: Array) -> None:
        (x,) = first(f"scalar_{op}", out.size, a)
        with np.errstate(all="ignore"):
            out.data[:] = f(value, x) if op in REVERSED else f(x, value)

    def unary(a: Array, out: Array) -> None:
        (x,) = first(f"ewise_{op}", out.size, a)
        with np.errstate(all="ignore"):
            out.data[:] = f(x)

    def strided(a: Array, b: Array, out: Array, shape: tuple, a_strides: tuple, a_offset: int,
                b_strides: tuple, b_offset: int) -> None:
        n = count(f"ewise_strided_{op}", shape, out.size, "out")  # before any allocation
        x = a.data[positions(a, shape, a_strides, a_offset, f"ewise_strided_{op}")]
        y = b.data[positions(b, shape, b_strides, b_offset, f"ewise_strided_{op}")]
        with np.errstate(all="ignore"):
            out.data[:n] = f(x, y).reshape(-1)

    if op in UNARY:
        return {f"ewise_{op}": unary}
    if op in REVERSED:
        return {f"scalar_{op}": scalar}
    return {f"ewise_{op}": ewise, f"scalar_{op}": scalar, f"ewise_strided_{op}": strided}


# One kernel per (op, family) with one spelling: ewise_add, scalar_add,
# ewise_strided_add (the optional kernel that reads broadcast or transposed
# operands where they lie), ...
for _op, _f in {**BINARY, **UNARY, **REVERSED}.items():
    vars(sys.modules[__name__]).update(_kernels(_op, _f))

# Arithmetic, the float functions, sums and matmul take float32 only; every
# other kernel takes both listed dtypes (int64 compares, copies and indexes).
_COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")
kernel_dtypes = {
    **{f"{family}_{op}": ("float32",) for op in BINARY if op not in _COMPARE
       for family in ("ewise", "scalar", "ewise_strided")},
    **{f"ewise_{op}": ("float32",) for op in UNARY},
    **{f"scalar_{op}": ("float32",) for op in REVERSED},
    **{k: ("float32",) for k in ("reduce_sum", "reduce_max", "reduce_min", "reduce_argmax",
                                 "matmul", "matmul_batched")},
}


def ewise_where(cond: Array, a: Array, b: Array, out: Array) -> None:
    c, x, y = first("ewise_where", out.size, cond, a, b)
    out.data[:] = np.where(c != 0, x, y)


def ewise_cast(a: Array, out: Array) -> None:
    (x,) = first("ewise_cast", out.size, a)
    out.data[:] = x  # float -> int64 truncates toward zero, like astype


# ------------------------------------------------------------------ reductions
def rows(op: str, a: Array, out: Array, size: int, nonempty: bool = True) -> np.ndarray:
    """``a`` viewed as compact ``(out.size, size)``: reduce along axis 1."""
    if nonempty and size == 0:
        raise ValueError(f"{op}: cannot reduce over an empty axis")
    (x,) = first(op, out.size * size, a)
    return x.reshape(out.size, size)


def reduce_sum(a: Array, out: Array, size: int) -> None:
    out.data[:] = rows("reduce_sum", a, out, size, nonempty=False).sum(axis=1)


def reduce_max(a: Array, out: Array, size: int) -> None:
    out.data[:] = rows("reduce_max", a, out, size).max(axis=1)


def reduce_min(a: Array, out: Array, size: int) -> None:
    out.data[:] = rows("reduce_min", a, out, size).min(axis=1)


def reduce_argmax(a: Array, out: Array, size: int) -> None:
    out.data[:] = rows("reduce_argmax", a, out, size).argmax(axis=1)


# ------------------------------------------------------------------ indexing
def checked_indices(op: str, idx: Array, axis_size: int) -> np.ndarray:
    if idx.dtype != "int64":
        raise TypeError(f"{op}: indices must be int64, got {idx.dtype}")
    bad = idx.data[(idx.data < 0) | (idx.data >= axis_size)]
    if bad.size:
        raise IndexError(f"{op}: index {bad[0]} is out of range for an axis of size "
                         f"{axis_size}")
    return idx.data


def index_gather(a: Array, idx: Array, out: Array, outer: int, axis_size: int,
                 inner: int) -> None:
    """``out[o, j, i] = a[o, idx[j], i]``: embedding rows, class picks."""
    i = checked_indices("index_gather", idx, axis_size)
    (src,) = first("index_gather", outer * axis_size * inner, a)
    (dst,) = first("index_gather", outer * i.size * inner, out)
    dst[:] = src.reshape(outer, axis_size, inner)[:, i, :].reshape(-1)


def index_scatter_add(a: Array, idx: Array, out: Array, outer: int, axis_size: int,
                      inner: int) -> None:
    """``out[o, idx[j], i] += a[o, j, i]``; repeated indices accumulate."""
    i = checked_indices("index_scatter_add", idx, axis_size)
    (src,) = first("index_scatter_add", outer * i.size * inner, a)
    (dst,) = first("index_scatter_add", outer * axis_size * inner, out)
    np.add.at(dst.reshape(outer, axis_size, inner), (slice(None), i),
              src.reshape(outer, i.size, inner))


# ------------------------------------------------------------------ matmul
def matmul(a: Array, b: Array, out: Array, m: int, n: int, p: int) -> None:
    """``out (m, p) = a (m, n) @ b (n, p)``, all compact row-major."""
    matmul_batched(a, b, out, 1, m, n, p)


def matmul_batched(a: Array, b: Array, out: Array, batch: int, m: int, n: int,
                   p: int) -> None:
    """``out (batch, m, p) = a (batch, m, n) @ b (batch, n, p)``."""
    (x,) = first("matmul", batch * m * n, a)
    (y,) = first("matmul", batch * n * p, b)
    (z,) = first("matmul", batch * m * p, out)
    np.matmul(x.reshape(batch, m, n), y.reshape(batch, n, p), out=z.reshape(batch, m, p))


# The entry point names an object; this module is that object.
backend = sys.modules[__name__]
