"""In-place random fills: ``uniform_``, ``normal_``, ``bernoulli_``, ``random_``.

Each draws its samples from the generator that ``manual_seed`` seeds
(:mod:`lamina.ndarray`'s samplers) and writes them with the in-place machinery
of ``_inplace``, as ``fill_`` does: the same leaf checks (a leaf that requires
grad is filled under ``no_grad``, as ``nn.init`` does), a version bump, and,
when recorded on a tensor that requires grad, a zero gradient to the old
value (PyTorch's rule: the new values do not depend on the old ones).
"""

from __future__ import annotations

from typing import Any

import lamina.ndarray as nd
from lamina.ndarray import DTypeError, NDArray

from . import _grad_mode as grad_mode
from . import _inplace
from ._tensor_base import Tensor, TensorBase, make

# The widest range random_() draws from when no bound is given: every integer in
# [0, 2**mantissa] is exact in the float dtype (PyTorch's choice).
_FULL_RANGE = {"float32": 2**24 + 1, "float64": 2**53 + 1, "int64": 2**63 - 1, "bool": 2}


def _fill(t: Tensor, draw: Any, op: str) -> Tensor:
    """Writes ``draw()`` (an NDArray of ``t``'s shape, dtype and device) into ``t``."""
    _inplace._check_leaf(t, op)
    sample: NDArray = draw()
    if t._requires_grad and grad_mode.is_grad_enabled():
        return _inplace._write(t, _inplace._replaced(t, make(sample)), op)
    t._data[...] = sample
    _inplace.bump(t)
    return t


def _check_floating(t: Tensor, op: str) -> None:
    if not t.dtype.is_floating:
        raise DTypeError(f"{op}: expects a floating point tensor, got {t.dtype.name}; "
                         f"convert with .float() or use random_")


def uniform_(t: Tensor, low: float = 0.0, high: float = 1.0) -> Tensor:
    """Fills ``t`` with samples drawn uniformly from ``[low, high)``."""
    _check_floating(t, "uniform_")
    return _fill(t, lambda: nd.uniform(t.shape, low, high, t.dtype, t.device), "uniform_")


def normal_(t: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    """Fills ``t`` with normal samples of the given ``mean`` and ``std`` (>= 0)."""
    _check_floating(t, "normal_")
    return _fill(t, lambda: nd.normal(float(mean), float(std), t.shape, t.dtype, t.device),
                 "normal_")


def bernoulli_(t: Tensor, p: Any = 0.5) -> Tensor:
    """Fills ``t`` (any dtype) with 1 with probability ``p``, else 0; ``p`` is a number
    or a tensor of probabilities that broadcasts to ``t``'s shape."""
    if isinstance(p, TensorBase):
        probs = p._data
        if probs.device is not t.device:
            probs = probs.to(t.device)
        probs = probs.broadcast_to(t.shape)
        return _fill(t, lambda: nd.bernoulli(probs, dtype=t.dtype), "bernoulli_")
    return _fill(t, lambda: nd.bernoulli(p, t.shape, t.dtype, t.device), "bernoulli_")


def random_(t: Tensor, low: int | None = None, high: int | None = None) -> Tensor:
    """Fills ``t`` with integers drawn uniformly from ``[low, high)``, as PyTorch.

    ``random_(high)`` draws from ``[0, high)``; ``random_()`` from
    ``[0, 2**24]`` for float32, ``[0, 2**53]`` for float64, ``[0, 2**63 - 2]``
    for int64, and ``{0, 1}`` for bool.
    """
    if high is None:
        low, high = (0, _FULL_RANGE[t.dtype.name]) if low is None else (0, low)
    elif low is None:
        low = 0
    return _fill(t, lambda: nd.randint(low, high, t.shape, t.dtype, t.device), "random_")
