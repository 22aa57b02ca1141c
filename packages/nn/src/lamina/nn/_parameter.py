"""Parameter, and the few places where lamina.nn touches Tensor storage.

Modules, init and optimizers replace a tensor's values by assigning a new
NDArray to ``tensor.data``: no graph is recorded and the Tensor object (which
optimizers and the module tree hold) stays the same.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from lamina import ndarray as nd
from lamina.autograd import Tensor

__all__ = ["Parameter", "as_array", "assign_array", "new_tensor"]


class Parameter(Tensor):
    """A Tensor that a Module registers as trainable (``requires_grad=True``).

    Args:
        data: a Tensor, NDArray, numpy array or nested list.
        requires_grad: whether the optimizer should train it.

    Example:
        >>> from lamina import autograd
        >>> p = Parameter(autograd.zeros(2, 3))
        >>> p.shape, p.requires_grad, p.is_leaf
        ((2, 3), True, True)
    """

    def __init__(self, data: Any, requires_grad: bool = True) -> None:
        if isinstance(data, Tensor):
            data = data.data
        elif not isinstance(data, nd.NDArray):
            data = nd.array(data)
        super().__init__(data, requires_grad=requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


def new_tensor(data: nd.NDArray, requires_grad: bool = False) -> Tensor:
    """A Tensor wrapping ``data`` (no copy)."""
    return Tensor(data, requires_grad=requires_grad)


def as_array(value: Any, like: Tensor) -> nd.NDArray:
    """``value`` (Tensor, NDArray, numpy array) as an NDArray with ``like``'s dtype and device."""
    if isinstance(value, Tensor):
        value = value.data
    if isinstance(value, nd.NDArray):
        if value.dtype != like.dtype:
            value = value.astype(like.dtype)
        return value.to(like.device) if value.device != like.device else value
    if isinstance(value, (np.ndarray, list, float, int, np.generic)):
        return nd.array(np.asarray(value), dtype=like.dtype, device=like.device)
    raise TypeError(f"expected a Tensor, NDArray or numpy array, got {type(value).__name__}")


def assign_array(tensor: Tensor, value: nd.NDArray) -> None:
    """Replace ``tensor``'s values by a copy of ``value`` (same shape), recording no graph.

    The copy keeps the module from sharing storage with the state dict it was
    loaded from.
    """
    tensor.data = value.copy()
