"""Training utilities: gradient clipping.

Example:
    >>> from lamina import autograd, nn
    >>> net = nn.Linear(3, 1)
    >>> net(autograd.ones(4, 3)).sum().backward()
    >>> float(clip_grad_norm_(net.parameters(), 0.5)) > 0
    True
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from lamina import autograd
from lamina.autograd import Tensor
from lamina.ndarray import NDArray

__all__ = ["clip_grad_norm_"]


def clip_grad_norm_(parameters: Iterable[Tensor] | Tensor, max_norm: float,
                    norm_type: float = 2.0, error_if_nonfinite: bool = False) -> Tensor:
    """Scale gradients in place so that their joint norm is at most ``max_norm``.

    The norm is taken over all gradients together, as if concatenated; when
    it exceeds ``max_norm`` every gradient is multiplied by
    ``max_norm / (norm + 1e-6)``. A NaN or infinite norm (a NaN or inf
    gradient) propagates into every gradient, as in PyTorch, unless
    ``error_if_nonfinite`` asks for an error instead.

    Args:
        parameters: tensors whose ``.grad`` to clip (those without one are skipped).
        max_norm: the largest allowed norm.
        norm_type: p of the p-norm; ``math.inf`` for the max-abs norm, ``-math.inf``
            for the min-abs one, 0 to count (as ``torch.linalg.vector_norm``).
        error_if_nonfinite: raise when the norm is nan or inf.

    Returns:
        The total norm before clipping, a scalar Tensor.
    """
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    grads = [p.grad._data for p in params if p.grad is not None]
    if not max_norm >= 0:  # NaN too
        raise ValueError(f"clip_grad_norm_: max_norm must be >= 0, got {max_norm}")
    if not grads:
        return autograd.tensor(0.0)
    # As PyTorch: the norm of the per-gradient norms, which is the joint norm for
    # p > 0 and, for p = 0, the number of gradients with a nonzero element.
    total = _vector_norm([_grad_norm(g, norm_type) for g in grads], norm_type)
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(f"clip_grad_norm_: the total norm of order {norm_type} of the "
                           f"gradients is {total}; pass error_if_nonfinite=False to allow it")
    coef = max_norm / (total + 1e-6)
    # A NaN norm scales every gradient by NaN, as PyTorch does: a NaN gradient
    # must not pass through unscaled as if it were small.
    if coef < 1.0 or math.isnan(coef):
        with autograd.no_grad():  # in place, as PyTorch's: views of a gradient see it
            for p in params:
                if p.grad is not None:
                    p.grad.mul_(coef)
    return autograd.tensor(total)


def _grad_norm(g: NDArray, p: float) -> float:
    """The p-norm of one gradient, as ``torch.linalg.vector_norm``; a NaN propagates."""
    if p == 0:
        return float((g != 0).sum())  # NaN != 0: counted, as PyTorch does
    if p == 2.0:  # g * g: the power kernel is ~10x slower on large gradients
        return math.sqrt(float((g * g).sum()))
    magnitude = abs(g)
    if p == math.inf:
        return float(magnitude.max())  # every backend's max propagates NaN
    if p == -math.inf:
        return float(magnitude.min())
    return _root(float((magnitude ** p).sum()), p)


def _vector_norm(norms: list[float], p: float) -> float:
    """The p-norm of non-negative floats, as ``torch.linalg.vector_norm``.

    In numpy's float64: a NaN propagates (Python's ``max()`` would drop one
    that comes late), ``0 ** -1`` is inf and an overflow inf, not an error.
    """
    v = np.asarray(norms, dtype=np.float64)
    if p == 0:
        return float(np.count_nonzero(v))  # NaN counts as nonzero, as in PyTorch
    if p == math.inf:
        return float(v.max())
    if p == -math.inf:
        return float(v.min())
    with np.errstate(all="ignore"):
        return _root(float(np.sum(v ** p)), p)


def _root(x: float, p: float) -> float:
    """``x ** (1 / p)`` with IEEE's limits (``inf ** -1`` is 0, ``0 ** -1`` inf)."""
    with np.errstate(all="ignore"):
        return float(np.float64(x) ** (1.0 / p))
