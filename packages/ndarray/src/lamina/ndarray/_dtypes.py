"""The dtypes Lamina knows, and PyTorch's type promotion between them.

``bool``, ``int64``, ``float16``, ``bfloat16``, ``float32`` (the default float
dtype) and ``float64``. The two 16-bit floats are *narrow*: a backend stores
them and converts them to and from float32 (rounding to nearest, ties to
even), and every kernel that does not take them natively runs in float32 on
widened copies, rounding its result back, as PyTorch's CPU kernels do
(``_narrow.py``). numpy has ``float16`` but no ``bfloat16``: a bfloat16
array's host values (``.numpy()``) are float32, which holds each exactly.
Promotion follows ``torch.result_type``: operands are ranked by category
(bool < integer < floating) and, within a category, by size; Python scalars
and 0-d arrays never raise the dtype of an array with dims within its
category (``int64 array * 2.5`` is float32, ``float32 array * 2.0`` stays
float32).
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Number
from typing import Any

import numpy as np

from ._errors import DTypeError


class DType:
    """A Lamina dtype; compares equal to its name (``float32 == "float32"``).

    Attributes:
        category: 0 for bool, 1 for integers, 2 for floating point (the order
            type promotion climbs).
        np: the numpy dtype of its host values (float32 for bfloat16, which
            numpy lacks).
        itemsize: bytes per element in a buffer.
        is_narrow: a 16-bit float (float16, bfloat16), computed in float32 by
            kernels that do not take it natively.
        is_wide_float: float32 or float64, the float dtypes every backend's
            arithmetic kernels take (what the operators' fast paths test).
    """

    __slots__ = ("name", "np", "itemsize", "is_floating", "category", "is_narrow",
                 "is_wide_float")

    def __init__(self, name: str, itemsize: int | None = None, host: str | None = None) -> None:
        self.name = name
        self.np = np.dtype(host or name)
        self.itemsize = itemsize or self.np.itemsize
        self.is_floating = self.np.kind == "f"
        self.category = {"b": 0, "i": 1, "f": 2}[self.np.kind]
        self.is_narrow = self.is_floating and self.itemsize == 2
        self.is_wide_float = self.is_floating and not self.is_narrow

    def __repr__(self) -> str:
        return f"lamina.{self.name}"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DType):
            return self is other
        if isinstance(other, str):
            return other == self.name
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.name)

    def __reduce__(self) -> tuple[Any, ...]:
        return (as_dtype, (self.name,))


bool_ = DType("bool")
int64 = DType("int64")
float16 = DType("float16")
bfloat16 = DType("bfloat16", itemsize=2, host="float32")
float32 = DType("float32")
float64 = DType("float64")

DTYPES = (bool_, int64, float16, bfloat16, float32, float64)
"""Every dtype, in promotion order (float16 and bfloat16 promote to float32)."""

NARROW = (float16, bfloat16)
"""The 16-bit floats (see the module docstring)."""

DEFAULT_FLOAT = float32
"""What Python floats, int true division and float ops on ints give."""

_BY_NAME = {d.name: d for d in DTYPES}
_ALIASES = {"float": float32, "double": float64, "long": int64, "bool_": bool_,
            "half": float16}


def as_dtype(dtype: Any, op: str = "dtype") -> DType:
    """Resolve a DType, its name, a numpy dtype or a Python type to a DType."""
    if isinstance(dtype, DType):
        return dtype
    if dtype is float:
        return float32
    if dtype is int:
        return int64
    if dtype is bool:
        return bool_
    if isinstance(dtype, str):
        key: str | None = dtype
    else:
        try:
            key = np.dtype(dtype).name
        except TypeError:
            key = None
    if key in _BY_NAME:
        return _BY_NAME[key]
    if key in _ALIASES:
        return _ALIASES[key]
    raise DTypeError(
        f"{op}: unsupported dtype {dtype!r}; Lamina supports bool, int64, float16, bfloat16, "
        "float32 and float64")


@dataclass(frozen=True)
class FInfo:
    """The limits of a float dtype, as ``torch.finfo``: ``bits``, ``eps`` (the gap
    above 1), ``max``, ``min`` (``-max``), ``tiny`` (the smallest normal, also
    ``smallest_normal``) and ``resolution`` (10 ** -digits)."""

    dtype: str
    bits: int
    eps: float
    max: float
    min: float
    tiny: float
    resolution: float

    @property
    def smallest_normal(self) -> float:
        return self.tiny


_BFLOAT16_MAX = float.fromhex("0x1.fep127")


def finfo(dtype: Any = None) -> FInfo:
    """The limits of a float dtype (float32 when none is given), as ``torch.finfo``.

    Example:
        >>> finfo("bfloat16").eps, finfo("float16").max
        (0.0078125, 65504.0)

    Raises:
        DTypeError: ``dtype`` is not a float dtype.
    """
    dt = as_dtype(float32 if dtype is None else dtype, "finfo")
    if not dt.is_floating:
        raise DTypeError(f"finfo: {dt.name} is not a floating point dtype; use numpy.iinfo "
                         f"for integers")
    if dt is bfloat16:  # numpy has no bfloat16: 8 exponent bits as float32, 8 significant
        return FInfo("bfloat16", 16, 2.0**-7, _BFLOAT16_MAX, -_BFLOAT16_MAX, 2.0**-126, 0.01)
    info = np.finfo(dt.np)
    return FInfo(dt.name, int(info.bits), float(info.eps), float(info.max), float(info.min),
                 float(info.smallest_normal), 10.0 ** -int(info.precision))


def promote_types(a: Any, b: Any) -> DType:
    """The smallest dtype both ``a`` and ``b`` convert to without losing their category
    (``torch.promote_types``).

    Example:
        >>> promote_types("bool", "int64"), promote_types("float16", "bfloat16")
        (lamina.int64, lamina.float32)
    """
    x, y = as_dtype(a, "promote_types"), as_dtype(b, "promote_types")
    if x.category != y.category:
        return x if x.category > y.category else y
    if x.itemsize == y.itemsize and x is not y:  # float16 and bfloat16: neither holds the other
        return float32
    return x if x.itemsize >= y.itemsize else y


def can_cast(from_: Any, to: Any) -> bool:
    """Whether ``from_`` converts to ``to`` under PyTorch's casting rule: never to a
    lower category (float to int, int to bool), any size within one.

    Example:
        >>> can_cast("int64", "float32"), can_cast("float32", "int64")
        (True, False)
    """
    return as_dtype(from_, "can_cast").category <= as_dtype(to, "can_cast").category


def scalar_dtype(value: Any) -> DType | None:
    """The dtype a Python (or numpy) scalar counts as in promotion; None if not a number."""
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, (int, np.integer)):
        return int64
    if isinstance(value, (float, np.floating)):
        return DEFAULT_FLOAT
    return None


def _combine(higher: DType | None, lower: DType | None) -> DType | None:
    """A higher-priority result, raised to a lower-priority one's category only when
    that one's category is higher (c10's ``combine_categories``)."""
    if higher is None:
        return lower
    if lower is None or higher.is_floating:
        return higher
    if higher is bool_ or lower.is_floating:
        return promote_types(higher, lower)
    return higher


def result_type(*operands: Any) -> DType:
    """The dtype of an op over ``operands`` (``torch.result_type`` for any number of them).

    Operands are arrays (anything with ``dtype`` and ``ndim``), Python or numpy
    scalars, or dtypes (which count as arrays with dims). Arrays with dims
    rank first, then 0-d arrays, then scalars; a lower rank changes the
    result only when its category is higher, and then to its own dtype, or to
    the default float dtype for a Python float.

    Raises:
        TypeError: an operand is none of these.

    Example:
        >>> from lamina.ndarray import array
        >>> x = array([1, 2], device="numpy")
        >>> result_type(x, 2), result_type(x, 2.5), result_type(x, array([1.0], dtype="float64"))
        (lamina.int64, lamina.float32, lamina.float64)
    """
    tiers: list[DType | None] = [None, None, None]
    for x in operands:
        if isinstance(x, (DType, str, np.dtype)) or (isinstance(x, type)
                                                      and x in (bool, int, float)):
            dt, tier = as_dtype(x, "result_type"), 0
        elif hasattr(x, "dtype") and hasattr(x, "ndim") and not isinstance(x, np.generic):
            dt, tier = as_dtype(x.dtype, "result_type"), 0 if x.ndim else 1
        elif isinstance(x, Number) or isinstance(x, np.generic):
            found = scalar_dtype(x)
            if found is None:
                raise TypeError(f"result_type: unsupported scalar {x!r} of type "
                                f"{type(x).__name__}")
            dt, tier = found, 2
        else:
            raise TypeError(f"result_type: expected arrays, scalars or dtypes, got "
                            f"{type(x).__name__}")
        tiers[tier] = dt if tiers[tier] is None else promote_types(tiers[tier], dt)
    out = _combine(tiers[0], _combine(tiers[1], tiers[2]))
    if out is None:
        raise TypeError("result_type: expected at least one operand")
    return out
