"""The checks and reductions every loss of ``_loss`` shares (one place per check)."""

from __future__ import annotations

import warnings
from typing import Any

from lamina.autograd import Tensor
from lamina.ndarray import DTypeError

from ._errors import ShapeError

_REDUCTIONS = ("mean", "sum", "none")


def _check_reduction(op: str, reduction: str, allowed: tuple[str, ...] = _REDUCTIONS) -> str:
    if reduction not in allowed:
        raise ValueError(f"{op}: reduction must be one of {allowed}, got {reduction!r}")
    return reduction


def _legacy_reduction(op: str, size_average: Any, reduce: Any, reduction: str) -> str:
    """``reduction``, or what the deprecated ``size_average``/``reduce`` ask for.

    PyTorch's rule (``torch.nn._reduction.legacy_get_string``): None counts as
    True; ``reduce=False`` gives "none", else ``size_average`` picks "mean" or
    "sum". As there, either one given overrides ``reduction`` and warns.
    """
    if size_average is None and reduce is None:
        return reduction
    for name, value in (("size_average", size_average), ("reduce", reduce)):
        if isinstance(value, str):  # a reduction passed positionally, where torch has these
            raise TypeError(f"{op}: {name} must be a bool or None, got {value!r}; pass "
                            f"reduction={value!r} by keyword")
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    legacy = ("mean" if size_average else "sum") if reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use "
                  f"reduction='{legacy}' instead.", UserWarning, stacklevel=3)
    return legacy


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def _check_same_shape(op: str, input: Tensor, target: Tensor) -> None:
    if tuple(input.shape) != tuple(target.shape):
        raise ShapeError(f"{op}: input {tuple(input.shape)} and target {tuple(target.shape)} "
                         f"must have the same shape")


def _check_optional_tensor(op: str, name: str, value: Any, input: Tensor | None) -> None:
    """``value`` is None or a floating Tensor of ``input``'s dtype (when input is given)."""
    if value is None:
        return
    if not isinstance(value, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor or None, got {type(value).__name__} "
                        f"{value!r} (pass the other options by keyword)")
    if not value.dtype.is_floating:
        raise DTypeError(f"{op}: {name} must be a floating tensor, got {value.dtype}")
    if input is not None and value.dtype != input.dtype:
        raise DTypeError(f"{op}: {name} has dtype {value.dtype} but input has {input.dtype}; "
                         f"convert one with .to(dtype)")


def _check_broadcasts(op: str, name: str, value: Tensor | None, shape: tuple[int, ...]) -> None:
    if value is None:
        return
    vs = tuple(value.shape)
    if len(vs) > len(shape) or any(v not in (1, s) for v, s in zip(vs[::-1], shape[::-1])):
        raise ShapeError(f"{op}: {name} of shape {vs} does not broadcast to the input's "
                         f"shape {shape}")
