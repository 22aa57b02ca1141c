"""Parameter, and the one place where lamina.nn writes Tensor storage.

``load_state_dict``, ``init`` and the optimizers overwrite a parameter's or
buffer's values with :func:`assign_array`: in place and without recording,
like PyTorch's ``with no_grad(): p.copy_(value)``. The Tensor object (which
optimizers and the module tree hold) and its storage stay the same, so views
of it see the new values, and its version counter goes up, so a graph that
saved the old values refuses to backward instead of using the new ones.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
from lamina import ndarray as nd
from lamina.autograd import Tensor, no_grad
from lamina.autograd._inplace import bump

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
            data = data._data
        elif not isinstance(data, nd.NDArray):
            data = nd.array(data)
        super().__init__(data, requires_grad=requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict[int, Any]) -> Parameter:
        # PyTorch's Parameter copies values and requires_grad, not .grad (a Tensor keeps it).
        return cast(Parameter, self._deepcopy(memo, keep_grad=False))


def new_tensor(data: nd.NDArray, requires_grad: bool = False) -> Tensor:
    """A Tensor wrapping ``data`` (no copy)."""
    return Tensor(data, requires_grad=requires_grad)


def as_array(value: Any, like: Tensor) -> nd.NDArray:
    """``value`` (Tensor, NDArray, numpy array) as an NDArray with ``like``'s dtype and device."""
    if isinstance(value, Tensor):
        value = value._data
    if isinstance(value, nd.NDArray):
        if value.dtype != like.dtype:
            value = value.astype(like.dtype)
        return value.to(like.device) if value.device != like.device else value
    if isinstance(value, (np.ndarray, list, float, int, np.generic)):
        return nd.array(np.asarray(value), dtype=like.dtype, device=like.device)
    raise TypeError(f"expected a Tensor, NDArray or numpy array, got {type(value).__name__}")


def assign_array(tensor: Tensor, value: nd.NDArray) -> None:
    """Writes ``value`` (``tensor``'s shape, or broadcastable to it) into ``tensor``'s
    storage, recording no graph, and bumps its version counter.

    ``value`` is copied: the tensor never shares storage with it. ``value`` may
    also be the tensor's own array, already updated in place: then only the
    version counter changes.
    """
    data = tensor._data
    if value is data:  # written in place already (SGD's p -= lr * g)
        bump(tensor)
        return
    if isinstance(value, nd.NDArray) and value.shape == data.shape \
            and value.dtype == data.dtype and value.device == data.device:
        # An optimizer's new value: one copy kernel, none of copy_'s conversions
        # (about a fifth of a small model's optimizer step went to them).
        data[...] = value
        bump(tensor)
        return
    with no_grad():
        tensor.copy_(Tensor(value))
