"""The numpy reference backend: the executable specification of interface v2.

Registered as device ``numpy`` through the ``lamina.backends`` entry point of
lamina-ndarray's own pyproject, exactly like any third-party plugin. Buffers
are 1-D numpy arrays; every kernel writes into ``out`` with numpy's ``out=``
so it allocates nothing beyond numpy's own temporaries.
"""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ._checks import conv_output_size
from ._interface import API_MINOR_VERSION, API_VERSION
from ._numpy_attention import KERNEL_DTYPES as _ATTENTION_KERNEL_DTYPES
from ._numpy_attention import attention, attention_backward
from ._numpy_conv import KERNEL_DTYPES as _CONV_KERNEL_DTYPES
from ._numpy_conv import conv2d, conv2d_backward_input, conv2d_backward_weight
from ._numpy_norm import KERNEL_DTYPES as _NORM_KERNEL_DTYPES
from ._numpy_norm import batch_norm_apply, batch_norm_backward, batch_norm_stats
from ._numpy_pool import KERNEL_DTYPES as _POOL_KERNEL_DTYPES
from ._numpy_pool import max_pool2d, max_pool2d_backward
from ._numpy_program import KERNEL_DTYPES as _PROGRAM_KERNEL_DTYPES
from ._numpy_program import run_program
from ._numpy_rnn import KERNEL_DTYPES as _RNN_KERNEL_DTYPES
from ._numpy_rnn import gru_cell, gru_cell_backward, lstm_cell, lstm_cell_backward
from ._numpy_sort import KERNEL_DTYPES as _SORT_KERNEL_DTYPES
from ._numpy_sort import multinomial_last, sort_last
from ._optable import DTYPE_SETS, OPS, ops

Shape = tuple[int, ...]

_DTYPES = ("float32", "float64", "int64", "bool", "float16", "bfloat16")
# numpy has no bfloat16: its buffers hold the bits in a one-field record, which numpy
# copies and indexes but refuses to compute with (a kernel reached with one raises,
# never computes on the bits as integers); ewise_cast converts it (_bfloat16_bits).
_BF16 = np.dtype([("bfloat16", "<u2")])
_NP_DTYPES = {name: _BF16 if name == "bfloat16" else np.dtype(name) for name in _DTYPES}
_NP_BY_INDEX = tuple(_NP_DTYPES[name] for name in _DTYPES)
_WIDE = _DTYPES[:4]  # what the kernels other than NARROW_KERNELS take (_narrow.py)


class NumpyArray:
    """A flat buffer: ``data`` is a 1-D numpy array that owns its memory."""

    __slots__ = ("data",)

    def __init__(self, size: int, dtype: str) -> None:
        np_dtype = _NP_DTYPES.get(dtype)
        if np_dtype is None:
            raise TypeError(f"Array: unsupported dtype {dtype!r}; numpy lists {_DTYPES}")
        if size < 0:
            raise ValueError(f"Array: size must be >= 0, got {size}")
        self.data = np.empty(size, np_dtype)

    @property
    def size(self) -> int:
        return self.data.size

    @property
    def dtype(self) -> str:
        dt = self.data.dtype
        return "bfloat16" if dt is _BF16 or dt == _BF16 else dt.name

    def __repr__(self) -> str:
        return f"numpy.Array(size={self.size}, dtype={self.dtype})"


def _view(a: NumpyArray, shape: Shape, strides: Shape, offset: int, op: str) -> np.ndarray:
    """The strided numpy view of ``a``, after checking it stays inside the buffer."""
    if len(shape) != len(strides):
        raise ValueError(f"{op}: shape {shape} and strides {strides} differ in length")
    if any(s < 0 for s in shape):
        raise ValueError(f"{op}: negative dimension in shape {shape}")
    if 0 not in shape:
        lo = offset + sum(st * (n - 1) for n, st in zip(shape, strides) if st < 0)
        hi = offset + sum(st * (n - 1) for n, st in zip(shape, strides) if st > 0)
        if lo < 0 or hi >= a.data.size:
            raise ValueError(
                f"{op}: view (shape {shape}, strides {strides}, offset {offset}) reaches "
                f"elements {lo}..{hi} of a buffer of {a.data.size}")
    item = a.data.itemsize
    base = a.data[offset:] if 0 not in shape else a.data[:0]
    return as_strided(base, shape=shape, strides=tuple(s * item for s in strides),
                      writeable=True)


def _bfloat16_bits(x: np.ndarray) -> np.ndarray:
    """The bfloat16 nearest each value (ties to even) as uint16 bits: the rounding
    every backend's bfloat16 conversion must match. Values other than float32
    are first rounded to float32, as PyTorch converts; a NaN stays a quiet NaN."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    with np.errstate(over="ignore"):  # uint32 arithmetic wraps only for NaNs, fixed below
        rounded = (bits + np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1))) >> 16
    nan = (bits & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    if nan.any():
        rounded[nan] = (bits[nan] >> 16) | np.uint32(0x0040)
    return rounded.astype(np.uint16)


def _check_size(op: str, out: NumpyArray, *arrays: NumpyArray) -> int:
    size = out.data.size
    for i, x in enumerate(arrays):
        if x.data.size < size:
            raise ValueError(f"{op}: operand {i} has {x.data.size} elements, out has {size}")
    return size


# Ops whose IEEE results (inf, nan) numpy would announce with a RuntimeWarning
# (the op table's may_warn); only these pay for an errstate context, keeping
# add/mul/compare cheap.
_MAY_WARN = frozenset(ops(may_warn=True))
_COMPARISONS = frozenset(ops(result="bool"))
_DIVIDES = frozenset(ops(domain="divisor"))


def _plain(ufunc: Any, x: Any, y: Any, out: np.ndarray) -> None:
    ufunc(x, y, out=out, casting="unsafe")


def _quiet(ufunc: Any, x: Any, y: Any, out: np.ndarray) -> None:
    with np.errstate(all="ignore"):
        ufunc(x, y, out=out, casting="unsafe")


# The elementwise kernels are one numpy ufunc call each with out=, made by the
# factories below and set on NumpyBackend from the op table. They
# return IEEE results (inf, nan) silently, like PyTorch's kernels, instead of
# numpy's RuntimeWarnings for log(0), x/0 and friends.
def _binary(op: str) -> tuple[Any, Any]:
    """``(ewise_OP, scalar_OP)`` as static methods."""
    ufunc = OPS[op].reference
    quiet = op in _MAY_WARN
    # Only int64 / int64 (a float64 result into an int64 out) needs casting="unsafe";
    # the keyword costs a tenth of a small op, so the other ops go without it.
    casting = "unsafe" if OPS[op].result == "float" else "same_kind"
    # Integer // and % by zero raise, as PyTorch's (numpy would quietly give 0).
    divides = op in _DIVIDES and OPS[op].result == "same"

    # Operands may be longer than out (a compact prefix view): only then slice,
    # since a slice costs as much as the ufunc call on a few elements.
    def ewise(a: NumpyArray, b: NumpyArray, out: NumpyArray) -> None:
        o = out.data
        x, y = a.data, b.data
        n = o.size
        if x.size != n or y.size != n:
            _check_size(f"ewise_{op}", out, a, b)
            x, y = x[:n], y[:n]
        if divides and o.dtype.kind == "i" and not y.all():
            raise ZeroDivisionError(f"ewise_{op}: integer division by zero; PyTorch raises "
                                    f"too, use float operands to get inf or nan")
        if quiet:
            with np.errstate(all="ignore"):
                ufunc(x, y, out=o, casting=casting)
        else:
            ufunc(x, y, out=o)

    def scalar(a: NumpyArray, value: float, out: NumpyArray) -> None:
        o = out.data
        x = a.data
        n = o.size
        if x.size != n:
            _check_size(f"scalar_{op}", out, a)
            x = x[:n]
        if quiet:
            with np.errstate(all="ignore"):
                ufunc(x, x.dtype.type(value), out=o, casting=casting)
        else:
            ufunc(x, x.dtype.type(value), out=o)

    ewise.__name__ = ewise.__qualname__ = f"ewise_{op}"
    scalar.__name__ = scalar.__qualname__ = f"scalar_{op}"
    return staticmethod(ewise), staticmethod(scalar)


def _reversed(op: str) -> Any:
    """``scalar_rOP``: ``out = value OP a``."""
    ufunc = OPS[op].reference

    def scalar(a: NumpyArray, value: float, out: NumpyArray) -> None:
        n = _check_size(f"scalar_r{op}", out, a)
        _quiet(ufunc, a.data.dtype.type(value), a.data[:n], out.data)

    scalar.__name__ = scalar.__qualname__ = f"scalar_r{op}"
    return staticmethod(scalar)


def _unary(op: str, ufunc: Any) -> Any:
    """``ewise_OP`` for a unary op."""
    quiet = op in _MAY_WARN

    def ewise(a: NumpyArray, out: NumpyArray) -> None:
        o = out.data
        x = a.data
        n = o.size
        if x.size != n:
            _check_size(f"ewise_{op}", out, a)
            x = x[:n]
        if quiet:
            with np.errstate(all="ignore"):
                ufunc(x, out=o)
        else:
            ufunc(x, out=o)

    ewise.__name__ = ewise.__qualname__ = f"ewise_{op}"
    return staticmethod(ewise)


_FLOATS = ("float32", "float64")
_NUMBERS = ("float32", "float64", "int64")

def _elementwise_dtypes() -> dict[str, tuple[str, ...]]:
    """The op table's dtype sets, for each elementwise kernel this backend has."""
    out: dict[str, tuple[str, ...]] = {}
    for op in OPS.values():
        if op.reference is None or op.dtypes == "all":
            continue
        names = [f"ewise_{op.name}"] + [f"scalar_{op.name}"] * op.scalar \
            + [f"scalar_r{op.name}"] * op.reversed + [f"ewise_strided_{op.name}"] * (op.arity == 2)
        out.update(dict.fromkeys(names, DTYPE_SETS[op.dtypes]))
    return out


KERNEL_DTYPES: dict[str, tuple[str, ...]] = {
    **{name: _FLOATS for name in (
        "matmul", "matmul_batched", "matmul_strided", "matmul_batched_strided", "matmul_bias",
        "softmax_last",
        "logsumexp_last", "layer_norm_last", "layer_norm_backward_last",
        "log_softmax_backward_last", "im2col", "col2im",
        "adam_step", "relu_backward")},
    # numpy has no bool loop for these (the ndarray layer casts bool sums to int64)
    **{name: _NUMBERS for name in (
        "reduce_sum", "reduce_sum_axis", "reduce_argmax", "reduce_prod", "cumsum_last")},
    **_elementwise_dtypes(),
    **_SORT_KERNEL_DTYPES,  # v2.1: sort_last, multinomial_last
    **_PROGRAM_KERNEL_DTYPES,  # v2.1: ewise_program
    **_RNN_KERNEL_DTYPES,  # v2.1: lstm_cell, gru_cell and their backwards
    **_POOL_KERNEL_DTYPES,  # v2.1: max_pool2d, max_pool2d_backward
    **_CONV_KERNEL_DTYPES,  # v2.2: conv2d and its two gradients
    **_NORM_KERNEL_DTYPES,  # v2.1: batch_norm_stats, batch_norm_apply, batch_norm_backward
    **_ATTENTION_KERNEL_DTYPES,  # v2.2: attention, attention_backward
}
"""The kernels that accept fewer dtypes than ``dtypes`` lists."""


class NumpyBackend:
    """Interface v2 implemented with numpy (see docs/backend-interface.md)."""

    name = "numpy"
    api_version = API_VERSION
    api_minor_version = API_MINOR_VERSION
    dtypes = _DTYPES
    kernel_dtypes = KERNEL_DTYPES
    Array = NumpyArray

    @staticmethod
    def is_available() -> bool:
        return True

    @staticmethod
    def unavailable_reason() -> str:
        return ""

    # ----------------------------------------------------------- buffers
    @staticmethod
    def empty(size: int, dtype: int) -> NumpyArray:
        if not 0 <= dtype < len(_DTYPES):
            raise IndexError(f"empty: dtype index {dtype} is out of range for the "
                             f"{len(_DTYPES)} dtypes {_DTYPES}")
        if size < 0:
            raise ValueError(f"empty: size must be >= 0, got {size}")
        buf = object.__new__(NumpyArray)  # Array without its name lookup
        buf.data = np.empty(size, _NP_BY_INDEX[dtype])
        return buf

    @staticmethod
    def from_numpy(src: np.ndarray, out: NumpyArray) -> None:
        if src.size != out.data.size:
            raise ValueError(f"from_numpy: source has {src.size} elements, out has "
                             f"{out.data.size}")
        np.copyto(out.data, src.reshape(-1), casting="same_kind")

    @staticmethod
    def wrap_numpy(src: np.ndarray) -> NumpyArray:
        if not isinstance(src, np.ndarray):
            raise TypeError(f"wrap_numpy: expected a numpy.ndarray, got {type(src).__name__}")
        if src.dtype.name not in _WIDE or not src.dtype.isnative:
            raise TypeError(f"wrap_numpy: unsupported dtype {src.dtype}; it takes {_WIDE} "
                            f"in native byte order")
        if src.ndim != 1 or not src.flags.c_contiguous:
            raise ValueError(f"wrap_numpy: expected a 1-D contiguous array, got shape "
                             f"{src.shape}; pass np.ascontiguousarray(x).ravel()")
        if not (src.flags.writeable and src.flags.aligned):
            raise ValueError("wrap_numpy: the array is read-only or misaligned; copy it with "
                             "from_numpy instead")
        buf = object.__new__(NumpyArray)  # the constructor allocates; this shares src
        buf.data = src
        return buf

    @staticmethod
    def to_numpy(a: NumpyArray, shape: Shape, strides: Shape, offset: int) -> np.ndarray:
        return np.array(_view(a, shape, strides, offset, "to_numpy"), copy=True, order="C")

    @staticmethod
    def fill(out: NumpyArray, value: float) -> None:
        out.data.fill(value)

    # ----------------------------------------------------------- strided access
    @staticmethod
    def compact(a: NumpyArray, out: NumpyArray, shape: Shape, strides: Shape, offset: int) -> None:
        view = _view(a, shape, strides, offset, "compact")
        size = view.size
        if out.data.size < size:
            raise ValueError(f"compact: out has {out.data.size} elements, view has {size}")
        np.copyto(out.data[:size].reshape(shape), view)

    @staticmethod
    def ewise_setitem(a: NumpyArray, out: NumpyArray, shape: Shape, strides: Shape,
                      offset: int) -> None:
        view = _view(out, shape, strides, offset, "ewise_setitem")
        if a.data.size < view.size:
            raise ValueError(f"ewise_setitem: source has {a.data.size} elements, view "
                             f"has {view.size}")
        np.copyto(view, a.data[:view.size].reshape(shape))

    @staticmethod
    def scalar_setitem(size: int, value: float, out: NumpyArray, shape: Shape, strides: Shape,
                       offset: int) -> None:
        view = _view(out, shape, strides, offset, "scalar_setitem")
        if view.size != size:
            raise ValueError(f"scalar_setitem: size {size} != prod(shape {shape})")
        view[...] = value

    # The elementwise kernels (ewise_OP, scalar_OP, scalar_rOP, ewise_strided_OP)
    # are set from the op table below the class.

    # ----------------------------------------------------------- where and cast
    @staticmethod
    def ewise_where(cond: NumpyArray, a: NumpyArray, b: NumpyArray, out: NumpyArray) -> None:
        n = _check_size("ewise_where", out, cond, a, b)
        np.copyto(out.data, np.where(cond.data[:n] != 0, a.data[:n], b.data[:n]))

    @staticmethod
    def relu_backward(x: NumpyArray, g: NumpyArray, out: NumpyArray) -> None:
        n = _check_size("relu_backward", out, x, g)
        if not x.data.dtype == g.data.dtype == out.data.dtype:
            raise TypeError(f"relu_backward: dtypes {x.data.dtype}, {g.data.dtype} and "
                            f"{out.data.dtype} differ")
        np.copyto(out.data, np.where(x.data[:n] <= 0, 0, g.data[:n]))

    @staticmethod
    def ewise_cast(a: NumpyArray, out: NumpyArray) -> None:
        n = _check_size("ewise_cast", out, a)
        src, dst = a.data[:n], out.data
        if src.dtype == _BF16:
            src = (src.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
        if dst.dtype == _BF16:
            dst.view(np.uint16)[...] = _bfloat16_bits(src)
        elif dst.dtype == np.float16:
            # through float32, as PyTorch converts (float64 -> float32 -> float16); a
            # value beyond float16's range becomes inf without numpy's warning
            with np.errstate(over="ignore"):
                np.copyto(dst, src.astype(np.float32, copy=False), casting="unsafe")
        else:
            np.copyto(dst, src, casting="unsafe")

    # ----------------------------------------------------------- reductions
    @staticmethod
    def reduce_sum(a: NumpyArray, out: NumpyArray, size: int) -> None:
        rows = _rows(a, out, size, "reduce_sum")
        np.sum(rows, axis=1, out=out.data)

    @staticmethod
    def reduce_max(a: NumpyArray, out: NumpyArray, size: int) -> None:
        np.max(_rows(a, out, size, "reduce_max", nonempty=True), axis=1, out=out.data)

    @staticmethod
    def reduce_min(a: NumpyArray, out: NumpyArray, size: int) -> None:
        np.min(_rows(a, out, size, "reduce_min", nonempty=True), axis=1, out=out.data)

    @staticmethod
    def reduce_argmax(a: NumpyArray, out: NumpyArray, size: int) -> None:
        rows = _rows(a, out, size, "reduce_argmax", nonempty=True)
        np.copyto(out.data, np.argmax(rows, axis=1))

    @staticmethod
    def reduce_prod(a: NumpyArray, out: NumpyArray, size: int) -> None:
        _check_same_number_dtype("reduce_prod", a, out)
        np.prod(_rows(a, out, size, "reduce_prod"), axis=1, out=out.data)

    @staticmethod
    def cumsum_last(a: NumpyArray, out: NumpyArray, size: int) -> None:
        _check_same_number_dtype("cumsum_last", a, out)
        n = out.data.size
        if size < 0 or (n % size if size else n):
            raise ValueError(f"cumsum_last: out has {n} elements, not a whole number of "
                             f"rows of size {size}")
        if a.data.size < n:
            raise ValueError(f"cumsum_last: input has {a.data.size} elements, out has {n}")
        if n:  # np.cumsum adds left to right in the dtype itself, as the interface asks
            np.cumsum(a.data[:n].reshape(-1, size), axis=1, out=out.data.reshape(-1, size))

    @staticmethod
    def ewise_program(bufs: Any, code: Any, scalars: Any, n: int) -> None:
        """v2.1: a chain of elementwise kernels as one call (_numpy_program.py)."""
        run_program(NumpyBackend, NumpyArray, bufs, code, scalars, n)

    # v2.1: sorting and sampling along the last axis (_numpy_sort.py)
    sort_last = staticmethod(sort_last)
    multinomial_last = staticmethod(multinomial_last)

    # v2.1: recurrent cells, one LSTM or GRU time step (_numpy_rnn.py)
    lstm_cell = staticmethod(lstm_cell)
    lstm_cell_backward = staticmethod(lstm_cell_backward)
    gru_cell = staticmethod(gru_cell)
    gru_cell_backward = staticmethod(gru_cell_backward)

    # v2.1: max pooling with indices and its backward (_numpy_pool.py)
    max_pool2d = staticmethod(max_pool2d)
    max_pool2d_backward = staticmethod(max_pool2d_backward)

    # v2.2: convolution as a GEMM per image, and its gradients (_numpy_conv.py)
    conv2d = staticmethod(conv2d)
    conv2d_backward_input = staticmethod(conv2d_backward_input)
    conv2d_backward_weight = staticmethod(conv2d_backward_weight)

    # v2.1: batch normalisation over (N, C, S), per channel (_numpy_norm.py)
    batch_norm_stats = staticmethod(batch_norm_stats)
    batch_norm_apply = staticmethod(batch_norm_apply)
    batch_norm_backward = staticmethod(batch_norm_backward)

    # v2.2: scaled dot-product attention and its backward (_numpy_attention.py)
    attention = staticmethod(attention)
    attention_backward = staticmethod(attention_backward)

    @staticmethod
    def reduce_sum_axis(a: NumpyArray, out: NumpyArray, outer: int, size: int, inner: int) -> None:
        if a.data.size < outer * size * inner or out.data.size != outer * inner:
            raise ValueError(f"reduce_sum_axis: buffers of {a.data.size} and "
                             f"{out.data.size} do not fit ({outer}, {size}, {inner})")
        src = a.data[:outer * size * inner].reshape(outer, size, inner)
        np.sum(src, axis=1, out=out.data.reshape(outer, inner))

    # ----------------------------------------------------------- fused
    @staticmethod
    def softmax_last(a: NumpyArray, out: NumpyArray, size: int) -> None:
        rows = _rows(a, out, size, "softmax_last", per_row=False)
        shifted = rows - rows.max(axis=1, keepdims=True)
        np.exp(shifted, out=shifted)
        shifted /= shifted.sum(axis=1, keepdims=True)
        np.copyto(out.data.reshape(rows.shape), shifted)

    @staticmethod
    def logsumexp_last(a: NumpyArray, out: NumpyArray, size: int) -> None:
        rows = _rows(a, out, size, "logsumexp_last", nonempty=True)
        peak = rows.max(axis=1)
        finite = np.where(np.isfinite(peak), peak, 0)
        with np.errstate(divide="ignore"):  # an all -inf row is log(0) = -inf, by design
            np.log(np.exp(rows - finite[:, None]).sum(axis=1), out=out.data)
        out.data += finite

    @staticmethod
    def layer_norm_last(a: NumpyArray, weight: NumpyArray, bias: NumpyArray, out: NumpyArray,
                        mean: NumpyArray, rstd: NumpyArray, size: int, eps: float) -> None:
        rows = _rows(a, mean, size, "layer_norm_last", nonempty=True)
        if rstd.data.size != mean.data.size or out.data.size < rows.size:
            raise ValueError(f"layer_norm_last: out, mean and rstd have {out.data.size}, "
                             f"{mean.data.size} and {rstd.data.size} elements for "
                             f"{len(rows)}x{size}")
        if len(rows) and (weight.data.size < size or bias.data.size < size):
            raise ValueError(f"layer_norm_last: weight and bias have {weight.data.size} and "
                             f"{bias.data.size} elements, expected {size}")
        # float64 statistics: float32 sums of rows whose |mean| >> std lose digits.
        wide = rows.astype(np.float64)
        mu = wide.mean(axis=1, keepdims=True)
        centred = wide - mu
        inv = 1 / np.sqrt((centred * centred).mean(axis=1, keepdims=True) + eps)
        np.copyto(out.data[:rows.size].reshape(rows.shape),
                  centred * inv * weight.data[:size] + bias.data[:size], casting="unsafe")
        np.copyto(mean.data, mu[:, 0], casting="unsafe")
        np.copyto(rstd.data, inv[:, 0], casting="unsafe")

    @staticmethod
    def layer_norm_backward_last(g: NumpyArray, a: NumpyArray, weight: NumpyArray,
                                 mean: NumpyArray, rstd: NumpyArray, grad_a: NumpyArray,
                                 grad_weight: NumpyArray, grad_bias: NumpyArray,
                                 size: int) -> None:
        rows = _rows(a, mean, size, "layer_norm_backward_last", nonempty=True)
        n = rows.size
        if rstd.data.size != mean.data.size or g.data.size < n or grad_a.data.size < n:
            raise ValueError(f"layer_norm_backward_last: g, grad_a, mean and rstd have "
                             f"{g.data.size}, {grad_a.data.size}, {mean.data.size} and "
                             f"{rstd.data.size} elements for {len(rows)}x{size}")
        if min(weight.data.size, grad_weight.data.size, grad_bias.data.size) < size:
            raise ValueError(f"layer_norm_backward_last: weight, grad_weight and grad_bias "
                             f"have {weight.data.size}, {grad_weight.data.size} and "
                             f"{grad_bias.data.size} elements, expected {size}")
        # float64 throughout, as the forward's statistics
        wide = g.data[:n].reshape(rows.shape).astype(np.float64)
        inv = rstd.data[:, None].astype(np.float64)
        xhat = (rows.astype(np.float64) - mean.data[:, None]) * inv
        gw = wide * weight.data[:size]
        dx = (gw - gw.mean(axis=1, keepdims=True)
              - xhat * (gw * xhat).mean(axis=1, keepdims=True)) * inv
        np.copyto(grad_a.data[:n].reshape(rows.shape), dx, casting="unsafe")
        np.copyto(grad_weight.data[:size], (wide * xhat).sum(axis=0), casting="unsafe")
        np.copyto(grad_bias.data[:size], wide.sum(axis=0), casting="unsafe")

    @staticmethod
    def log_softmax_backward_last(g: NumpyArray, out: NumpyArray, grad_a: NumpyArray,
                                  size: int) -> None:
        rows = _rows(out, grad_a, size, "log_softmax_backward_last", per_row=False)
        n = rows.size
        if g.data.size < n:
            raise ValueError(f"log_softmax_backward_last: g has {g.data.size} elements, "
                             f"expected {rows.shape[0]}x{size}")
        wide = g.data[:n].reshape(rows.shape).astype(np.float64)  # float64 throughout
        dx = wide - np.exp(rows.astype(np.float64)) * wide.sum(axis=1, keepdims=True)
        np.copyto(grad_a.data[:n].reshape(rows.shape), dx, casting="unsafe")

    # ----------------------------------------------------------- indexing
    @staticmethod
    def index_gather(a: NumpyArray, idx: NumpyArray, out: NumpyArray, outer: int, axis_size: int,
                     inner: int) -> None:
        src = _index_operand(a, idx, outer, axis_size, inner, "index_gather")
        n = idx.data.size
        if out.data.size != outer * n * inner:
            raise ValueError(f"index_gather: out has {out.data.size} elements, expected "
                             f"{outer * n * inner}")
        np.take(src, idx.data, axis=1, out=out.data.reshape(outer, n, inner))

    @staticmethod
    def index_copy(a: NumpyArray, idx: NumpyArray, out: NumpyArray, outer: int,
                   axis_size: int, inner: int) -> None:
        dst = _index_operand(out, idx, outer, axis_size, inner, "index_copy")
        n = idx.data.size
        if a.data.dtype != out.data.dtype:
            raise TypeError(f"index_copy: dtypes differ: {a.data.dtype} and {out.data.dtype}")
        if a.data.size < outer * n * inner:
            raise ValueError(f"index_copy: source has {a.data.size} elements, "
                             f"expected {outer * n * inner}")
        dst[:, idx.data] = a.data[:outer * n * inner].reshape(outer, n, inner)

    @staticmethod
    def index_scatter_add(a: NumpyArray, idx: NumpyArray, out: NumpyArray, outer: int,
                          axis_size: int, inner: int) -> None:
        dst = _index_operand(out, idx, outer, axis_size, inner, "index_scatter_add")
        n = idx.data.size
        if a.data.size < outer * n * inner:
            raise ValueError(f"index_scatter_add: source has {a.data.size} elements, "
                             f"expected {outer * n * inner}")
        src = a.data[:outer * n * inner].reshape(outer, n, inner)
        np.add.at(dst, (slice(None), idx.data), src)  # type: ignore[arg-type]

    # ----------------------------------------------------------- matmul
    @staticmethod
    def matmul(a: NumpyArray, b: NumpyArray, out: NumpyArray, m: int, n: int, p: int) -> None:
        _check_matmul(a, b, out, 1, m, n, p, "matmul")
        np.matmul(a.data[:m * n].reshape(m, n), b.data[:n * p].reshape(n, p),
                  out=out.data[:m * p].reshape(m, p))

    @staticmethod
    def matmul_strided(a: NumpyArray, b: NumpyArray, out: NumpyArray, m: int, n: int, p: int,
                       a_offset: int, a_rs: int, a_cs: int, b_offset: int, b_rs: int,
                       b_cs: int) -> None:
        if out.data.size < m * p:
            raise ValueError(f"matmul_strided: out has {out.data.size} elements, expected "
                             f"{m}x{p}")
        av = _matrix_view(a, m, n, a_offset, a_rs, a_cs, "a")
        bv = _matrix_view(b, n, p, b_offset, b_rs, b_cs, "b")
        np.matmul(av, bv, out=out.data[:m * p].reshape(m, p))

    @staticmethod
    def matmul_bias(a: NumpyArray, b: NumpyArray, bias: NumpyArray, out: NumpyArray, m: int,
                    n: int, p: int, a_offset: int, a_rs: int, a_cs: int, b_offset: int,
                    b_rs: int, b_cs: int) -> None:
        if out.data.size < m * p:
            raise ValueError(f"matmul_bias: out has {out.data.size} elements, expected {m}x{p}")
        if bias.data.size < p:
            raise ValueError(f"matmul_bias: bias has {bias.data.size} elements, expected {p}")
        av = _matrix_view(a, m, n, a_offset, a_rs, a_cs, "a")
        bv = _matrix_view(b, n, p, b_offset, b_rs, b_cs, "b")
        result = out.data[:m * p].reshape(m, p)
        np.matmul(av, bv, out=result)
        result += bias.data[:p]

    @staticmethod
    def matmul_batched(a: NumpyArray, b: NumpyArray, out: NumpyArray, batch: int, m: int, n: int,
                       p: int) -> None:
        _check_matmul(a, b, out, batch, m, n, p, "matmul_batched")
        np.matmul(a.data[:batch * m * n].reshape(batch, m, n),
                  b.data[:batch * n * p].reshape(batch, n, p),
                  out=out.data[:batch * m * p].reshape(batch, m, p))

    @staticmethod
    def matmul_batched_strided(a: NumpyArray, b: NumpyArray, out: NumpyArray, batch: Shape,
                               m: int, n: int, p: int, a_offset: int, a_strides: Shape,
                               b_offset: int, b_strides: Shape) -> None:
        op = "matmul_batched_strided"
        batch = tuple(batch)
        if len(a_strides) != len(batch) + 2 or len(b_strides) != len(batch) + 2:
            raise ValueError(f"{op}: a batch of {len(batch)} dims needs {len(batch) + 2} strides "
                             f"per operand, got {tuple(a_strides)} and {tuple(b_strides)}")
        if min((m, n, p, a_offset, b_offset, *batch, *a_strides, *b_strides), default=0) < 0:
            raise ValueError(f"{op}: sizes, offsets and strides must be >= 0, got batch {batch}, "
                             f"m={m}, n={n}, p={p}, a=({a_offset}; {tuple(a_strides)}), "
                             f"b=({b_offset}; {tuple(b_strides)})")
        count = prod(batch)
        if out.data.size < count * m * p:
            raise ValueError(f"{op}: out has {out.data.size} elements, expected "
                             f"{count}x{m}x{p}")
        if not count or not m or not p:
            return
        dst = out.data[:count * m * p].reshape(*batch, m, p)
        if not n:
            dst[...] = 0
            return
        av = _view(a, batch + (m, n), tuple(a_strides), a_offset, op)
        bv = _view(b, batch + (n, p), tuple(b_strides), b_offset, op)
        np.matmul(av, bv, out=dst)

    @staticmethod
    def adam_step(param: NumpyArray, grad: NumpyArray, exp_avg: NumpyArray,
                  exp_avg_sq: NumpyArray, param_out: NumpyArray, exp_avg_out: NumpyArray,
                  exp_avg_sq_out: NumpyArray, beta1: float, beta2: float, eps: float,
                  weight_decay: float, decay: float, step_size: float,
                  inv_bias2_sqrt: float) -> None:
        op = "adam_step"
        bufs = (param, grad, exp_avg, exp_avg_sq, param_out, exp_avg_out, exp_avg_sq_out)
        dtype = param.data.dtype
        if any(b.data.dtype != dtype for b in bufs) or dtype.kind != "f":
            raise TypeError(f"{op}: every buffer must have one float dtype, got "
                            f"{', '.join(str(b.data.dtype) for b in bufs)}")
        n = param_out.data.size
        if min(b.data.size for b in bufs) < n:
            raise ValueError(f"{op}: every buffer needs {n} elements (param_out's), one has "
                             f"{min(b.data.size for b in bufs)}")
        t = dtype.type  # each scalar in the dtype, each step rounded, as the kernels do
        p, g, m, v = (b.data[:n] for b in (param, grad, exp_avg, exp_avg_sq))
        if weight_decay:
            g = g + p * t(weight_decay)
        m = m * t(beta1) + g * t(1.0 - beta1)
        v = v * t(beta2) + g * g * t(1.0 - beta2)
        denom = np.sqrt(v) * t(inv_bias2_sqrt) + t(eps)
        param_out.data[:n] = p * t(decay) - (m / denom) * t(step_size)
        exp_avg_out.data[:n] = m
        exp_avg_sq_out.data[:n] = v

    @staticmethod
    def im2col(a: NumpyArray, out: NumpyArray, n: int, c: int, h: int, w: int, kh: int, kw: int,
               sh: int, sw: int, ph: int, pw: int, dh: int, dw: int) -> None:
        oh, ow = _conv_out(h, w, kh, kw, sh, sw, ph, pw, dh, dw, "im2col")
        if a.data.size < n * c * h * w or out.data.size < n * oh * ow * c * kh * kw:
            raise ValueError("im2col: buffers are smaller than the layout")
        padded = np.pad(a.data[:n * c * h * w].reshape(n, c, h, w),
                        ((0, 0), (0, 0), (ph, ph), (pw, pw)))
        s = padded.strides
        patches = as_strided(padded, (n, oh, ow, c, kh, kw),
                             (s[0], s[2] * sh, s[3] * sw, s[1], s[2] * dh, s[3] * dw),
                             writeable=False)
        np.copyto(out.data[:patches.size].reshape(patches.shape), patches)

    @staticmethod
    def col2im(a: NumpyArray, out: NumpyArray, n: int, c: int, h: int, w: int, kh: int, kw: int,
               sh: int, sw: int, ph: int, pw: int, dh: int, dw: int) -> None:
        oh, ow = _conv_out(h, w, kh, kw, sh, sw, ph, pw, dh, dw, "col2im")
        if a.data.size < n * oh * ow * c * kh * kw or out.data.size < n * c * h * w:
            raise ValueError("col2im: buffers are smaller than the layout")
        cols = a.data[:n * oh * ow * c * kh * kw].reshape(n, oh, ow, c, kh, kw)
        padded = np.zeros((n, c, h + 2 * ph, w + 2 * pw), dtype=a.data.dtype)
        for i in range(kh):  # kh*kw strided adds, each over the whole batch
            for j in range(kw):
                rows = slice(i * dh, i * dh + sh * (oh - 1) + 1, sh)
                cols_ = slice(j * dw, j * dw + sw * (ow - 1) + 1, sw)
                padded[:, :, rows, cols_] += cols[:, :, :, :, i, j].transpose(0, 3, 1, 2)
        np.copyto(out.data[:n * c * h * w].reshape(n, c, h, w),
                  padded[:, :, ph:ph + h, pw:pw + w])


def _conv_out(h: int, w: int, kh: int, kw: int, sh: int, sw: int, ph: int, pw: int,
              dh: int, dw: int, op: str) -> tuple[int, int]:
    oh = conv_output_size(h, kh, sh, ph, dh)
    ow = conv_output_size(w, kw, sw, pw, dw)
    if oh <= 0 or ow <= 0:
        raise ValueError(f"{op}: kernel ({kh}, {kw}) with dilation ({dh}, {dw}) does not "
                         f"fit the padded input ({h + 2 * ph}, {w + 2 * pw})")
    return oh, ow


def _check_same_number_dtype(op: str, a: NumpyArray, out: NumpyArray) -> None:
    """The v1.1 kernels that take ``_NUMBERS`` refuse another dtype, as a compiled one would."""
    if a.data.dtype != out.data.dtype or a.data.dtype.name not in _NUMBERS:
        raise TypeError(f"{op}: expected input and out of one dtype of {_NUMBERS}, got "
                        f"{a.data.dtype} and {out.data.dtype}")


def _rows(a: NumpyArray, out: NumpyArray, size: int, op: str, nonempty: bool = False,
          per_row: bool = True) -> np.ndarray:
    if size < 0:
        raise ValueError(f"{op}: size must be >= 0, got {size}")
    rows = out.data.size if per_row else (out.data.size // size if size else 0)
    if nonempty and size < 1 and rows:
        raise ValueError(f"{op}: cannot reduce over an empty axis")
    if a.data.size < rows * size:
        raise ValueError(f"{op}: input has {a.data.size} elements, expected {rows}x{size}")
    return a.data[:rows * size].reshape(rows, size)


def _matrix_view(buf: NumpyArray, rows: int, cols: int, offset: int, rs: int, cs: int,
                 name: str) -> np.ndarray:
    """The (rows, cols) view of ``buf`` that matmul_strided reads, bounds-checked."""
    if min(rows, cols, offset, rs, cs) < 0:
        raise ValueError(f"matmul_strided: sizes, offsets and strides must be >= 0, got {name} "
                         f"= ({rows}x{cols}, offset {offset}, strides {rs}, {cs})")
    if rows and cols and offset + (rows - 1) * rs + (cols - 1) * cs >= buf.data.size:
        raise ValueError(f"matmul_strided: {name} view (offset {offset}, strides {rs}, {cs}) of "
                         f"{rows}x{cols} does not fit a buffer of {buf.data.size}")
    item = buf.data.itemsize
    if not rows or not cols:
        return np.zeros((rows, cols), buf.data.dtype)
    return np.lib.stride_tricks.as_strided(buf.data[offset:], (rows, cols),
                                           (rs * item, cs * item), writeable=False)


def _index_operand(buf: NumpyArray, idx: NumpyArray, outer: int, axis_size: int, inner: int,
                   op: str) -> np.ndarray:
    if idx.data.dtype != np.int64:
        raise TypeError(f"{op}: indices must be int64, got {idx.data.dtype}")
    if buf.data.size < outer * axis_size * inner:
        raise ValueError(f"{op}: buffer has {buf.data.size} elements, layout needs "
                         f"{outer * axis_size * inner}")
    if idx.data.size:
        lo, hi = int(idx.data.min()), int(idx.data.max())
        if lo < 0 or hi >= axis_size:
            bad = lo if lo < 0 else hi
            raise IndexError(f"{op}: index {bad} is out of range for an axis of size "
                             f"{axis_size}")
    return buf.data[:outer * axis_size * inner].reshape(outer, axis_size, inner)


def _check_matmul(a: NumpyArray, b: NumpyArray, out: NumpyArray, batch: int, m: int, n: int, p: int,
                  op: str) -> None:
    if (a.data.size < batch * m * n or b.data.size < batch * n * p
            or out.data.size < batch * m * p):
        raise ValueError(f"{op}: buffers of {a.data.size}, {b.data.size} and "
                         f"{out.data.size} elements do not fit batch={batch}, m={m}, "
                         f"n={n}, p={p}")



def _strided(op: str) -> Any:
    """``ewise_strided_OP``: ``out = a OP b`` over two strided views of one shape."""
    name = f"ewise_strided_{op}"
    ufunc = OPS[op].reference
    apply = _quiet if op in _MAY_WARN else _plain
    comparison = op in _COMPARISONS

    def strided(a: NumpyArray, b: NumpyArray, out: NumpyArray, shape: Shape,
                a_strides: Shape, a_offset: int, b_strides: Shape, b_offset: int) -> None:
        # a comparison may write bool; otherwise out has the operands' dtype
        if a.data.dtype != b.data.dtype or not (
                out.data.dtype == a.data.dtype or (comparison and out.data.dtype == np.bool_)):
            raise TypeError(f"{name}: dtypes differ: {a.data.dtype}, {b.data.dtype} "
                            f"-> {out.data.dtype}")
        shape = tuple(shape)
        av = _view(a, shape, tuple(a_strides), a_offset, name)
        bv = _view(b, shape, tuple(b_strides), b_offset, name)
        n = int(np.prod(shape))
        if out.data.size < n:
            raise ValueError(f"{name}: out has {out.data.size} elements, shape {shape} "
                             f"needs {n}")
        apply(ufunc, av, bv, out.data[:n].reshape(shape))

    strided.__name__ = strided.__qualname__ = name
    return staticmethod(strided)


def _install_elementwise(cls: type) -> None:
    """Sets every elementwise kernel of the op table that numpy can run on ``cls``."""
    for op in OPS.values():
        if op.reference is None:  # no numpy ufunc (erf): NDArray composes it
            continue
        if op.arity == 1:
            setattr(cls, f"ewise_{op.name}", _unary(op.name, op.reference))
            continue
        ewise, scalar = _binary(op.name)
        setattr(cls, f"ewise_{op.name}", ewise)
        setattr(cls, f"ewise_strided_{op.name}", _strided(op.name))
        if op.scalar:
            setattr(cls, f"scalar_{op.name}", scalar)
        if op.reversed:
            setattr(cls, f"scalar_r{op.name}", _reversed(op.name))


_install_elementwise(NumpyBackend)
backend = NumpyBackend()
