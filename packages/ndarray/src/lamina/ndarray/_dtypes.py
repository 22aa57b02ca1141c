"""The dtypes Lamina knows: float32 (default), float64, and int64 for indices."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._errors import DTypeError


class DType:
    """A Lamina dtype; compares equal to its name (``float32 == "float32"``)."""

    __slots__ = ("name", "np", "itemsize", "is_floating")

    def __init__(self, name: str) -> None:
        self.name = name
        self.np = np.dtype(name)
        self.itemsize = self.np.itemsize
        self.is_floating = self.np.kind == "f"

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


float32 = DType("float32")
float64 = DType("float64")
int64 = DType("int64")

_BY_NAME = {d.name: d for d in (float32, float64, int64)}
_ALIASES = {"float": float32, "double": float64, "long": int64}


def as_dtype(dtype: Any, op: str = "dtype") -> DType:
    """Resolve a DType, its name, a numpy dtype or a Python type to a DType."""
    if isinstance(dtype, DType):
        return dtype
    if dtype is float:
        return float32
    if dtype is int:
        return int64
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
        f"{op}: unsupported dtype {dtype!r}; Lamina supports float32, float64 "
        f"and int64 (for indices and labels)")


def result_dtype(a: DType, b: DType, op: str) -> DType:
    """The dtype of a binary op between two arrays; mixing float kinds is an error."""
    if a is b:
        return a
    raise DTypeError(
        f"{op}: dtypes differ, {a.name} (arg 0) and {b.name} (arg 1); "
        f"convert one with .astype()")
