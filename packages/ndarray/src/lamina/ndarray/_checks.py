"""Argument checks shared by every op: axes, pairs, conv output sizes, agreement.

One definition of each rule for all layers: lamina.autograd and lamina.nn call
these (they are public in :mod:`lamina.ndarray`) instead of keeping their own.
Each check is cheap when it passes; its message, naming the op and the
offending values, is built only when it fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ._errors import DeviceError, DTypeError, ShapeError

__all__ = ["check_device_dtype", "check_kernel_dtype", "check_same_device_dtype",
           "conv_output_size", "normalize_axes", "normalize_axis", "normalize_permutation", "pair"]

_INTS = (int, np.integer)


def normalize_axis(axis: int, ndim: int, op: str, name: str = "axis") -> int:
    """``axis`` mapped into ``range(ndim)``; negative axes count from the end.

    Args:
        axis: an int (a numpy int too; not a bool).
        ndim: the number of dims of the array the axis indexes.
        op: the op named in the error message.
        name: how the message calls the argument (``"axis"``, ``"dim"``).

    Raises:
        TypeError: ``axis`` is not an int.
        ShapeError: ``axis`` is outside ``[-ndim, ndim)``.

    Example:
        >>> normalize_axis(-1, 3, "sum")
        2
    """
    if not isinstance(axis, _INTS) or isinstance(axis, bool):
        raise TypeError(f"{op}: {name} must be an int, got {type(axis).__name__} {axis!r}")
    if not -ndim <= axis < ndim:
        raise ShapeError(f"{op}: {name} {axis} is out of range for an array of {ndim} "
                         f"dim{'s' if ndim != 1 else ''} (expected {-ndim} <= {name} < {ndim})")
    return int(axis) % ndim


def normalize_axes(axes: int | Sequence[int] | None, ndim: int, op: str,
                   name: str = "axis") -> tuple[int, ...]:
    """Sorted, non-negative, distinct axes; ``None`` means every axis.

    Raises:
        TypeError: an axis is not an int.
        ShapeError: an axis is out of range, or one repeats.

    Example:
        >>> normalize_axes((-1, 0), 3, "sum")
        (0, 2)
    """
    if axes is None:
        return tuple(range(ndim))
    items = (axes,) if isinstance(axes, _INTS) else tuple(axes)
    found = []
    for a in items:  # a loop, not a generator: one call fewer on every reduction
        found.append(normalize_axis(a, ndim, op, name))
    out = tuple(sorted(found))
    if len(set(out)) != len(out):
        raise ShapeError(f"{op}: repeated {name} in {axes}")
    return out


def normalize_permutation(axes: Sequence[int], ndim: int, op: str,
                          shape: tuple[int, ...] | None = None) -> tuple[int, ...]:
    """``axes`` as non-negative ints, checked to be a permutation of ``range(ndim)``.

    Raises:
        TypeError: an axis is not an int.
        ShapeError: ``axes`` is not a permutation of ``ndim`` dims (the message
            shows ``shape`` when given).

    Example:
        >>> normalize_permutation((-1, 0), 2, "permute")
        (1, 0)
    """
    if type(axes) is tuple and len(axes) == ndim:
        for a in axes:  # already non-negative Python ints, the common case
            if type(a) is not int or not 0 <= a < ndim:
                break
        else:
            if len(set(axes)) == ndim:
                return axes
    for a in axes:
        if not isinstance(a, _INTS) or isinstance(a, bool):
            raise TypeError(f"{op}: axes must be ints, got {type(a).__name__} {a!r} in "
                            f"{tuple(axes)}")
    # an axis out of range stays as given, so that the check below reports it
    out = tuple(int(a) % ndim if -ndim <= a < ndim else int(a) for a in axes)
    if len(out) != ndim or sorted(out) != list(range(ndim)):
        of = f" of an array of shape {shape}" if shape is not None else ""
        raise ShapeError(f"{op}: axes {tuple(axes)} are not a permutation of {ndim} dims{of}")
    return out


def pair(value: Any, op: str, name: str = "value", minimum: int | None = None
         ) -> tuple[int, int]:
    """``value`` as ``(int, int)``: an int means the same value twice.

    Raises:
        ValueError: ``value`` is neither an int nor a pair of ints, or is below
            ``minimum``.

    Example:
        >>> pair(3, "conv2d", "stride"), pair((1, 2), "conv2d", "padding", minimum=0)
        ((3, 3), (1, 2))
    """
    if isinstance(value, _INTS):
        items: tuple[Any, ...] = (value, value)
    else:
        try:
            items = tuple(value)
        except TypeError:
            items = ()
    if (len(items) != 2 or not all(isinstance(v, _INTS) and not isinstance(v, bool)
                                   for v in items)
            or (minimum is not None and min(items) < minimum)):
        low = f" >= {minimum}" if minimum is not None else ""
        raise ValueError(f"{op}: {name} must be an int{low} or a pair of them, got {value!r}")
    return int(items[0]), int(items[1])


def conv_output_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """Output length of a convolution or pooling window along one dim (may be <= 0,
    which the caller reports with its shapes).

    Example:
        >>> conv_output_size(32, 3, 1, 1, 1), conv_output_size(7, 2, 2, 0, 1)
        (32, 3)
    """
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def check_same_device_dtype(arrays: Sequence[Any], op: str) -> None:
    """Raise unless every array is on the first one's device with its dtype.

    Raises:
        DeviceError: two arrays are on different devices (the message names both).
        DTypeError: two arrays have different dtypes.
    """
    first = arrays[0]
    device, dtype = first._device, first._dtype
    for i in range(1, len(arrays)):
        other = arrays[i]
        if other._device is not device:
            raise DeviceError(f"{op}: operands are on different devices, {device.name} "
                              f"(arg 0) and {other._device.name} (arg {i}); move one with "
                              ".to(device)")
        if other._dtype is not dtype:
            raise DTypeError(f"{op}: dtypes differ, {dtype.name} (arg 0) and "
                             f"{other._dtype.name} (arg {i}); convert one with .astype()")


def check_device_dtype(device: Any, dtype: Any, op: str) -> None:
    """Raise unless ``device`` (a Device) lists ``dtype`` (a DType).

    Raises:
        DTypeError: the device's backend does not support the dtype (the
            message lists the ones it does).
    """
    if dtype.name not in device.dtypes:
        raise DTypeError(f"{op}: device {device.name} does not support {dtype.name} "
                         f"(it lists {', '.join(device.dtypes)})")


def check_kernel_dtype(device: Any, kernel: str, dtype: Any, op: str) -> None:
    """Raise unless ``device``'s kernel ``kernel`` (``"ewise_add"``) accepts ``dtype``.

    Raises:
        DTypeError: naming the op, the dtype and the device, and the dtypes the
            kernel does accept.
    """
    accepted = device.kernel_dtypes.get(kernel)
    if not accepted:
        raise DTypeError(f"{op}: device {device.name} has no {kernel} kernel for "
                         f"{dtype.name} (its backend does not provide the optional "
                         f"{kernel}); use another device")
    if dtype.name not in accepted:
        have = ", ".join(sorted(accepted))
        raise DTypeError(f"{op}: device {device.name} has no {dtype.name} kernel for {op} "
                         f"(its {kernel} accepts {have}); convert with .astype() or use "
                         f"another device")
