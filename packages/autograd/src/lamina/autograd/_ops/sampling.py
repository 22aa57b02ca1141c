"""Sampling from tensors of parameters: multinomial, bernoulli, normal.

The samples come from :mod:`lamina.ndarray`'s samplers, which draw from the
generator that ``manual_seed`` seeds. As in PyTorch, the samples are not
reparameterised: a parameter tensor that requires grad gets a zero gradient
(the output records a node, so ``backward`` runs, but nothing flows).
"""

from __future__ import annotations

from typing import Any

import lamina.ndarray as nd
from lamina.ndarray import NDArray

from .._function import Function
from .._tensor_base import Tensor, TensorBase, make, new


class Sampled(Function):
    """Samples drawn from a distribution with the input tensors as parameters; the
    gradient to each parameter is zero (PyTorch's rule for normal and bernoulli)."""

    name = "sampled"

    def forward(self, *params: NDArray, **given: Any) -> NDArray:
        return given["values"]  # drawn by the caller; params only carry the graph edges

    def backward(self, g: TensorBase) -> tuple[TensorBase, ...]:
        return tuple(make(nd.zeros(shape, dtype=dtype, device=g._data.device))
                     for shape, dtype in zip(self.shapes, self.dtypes))


def _float_params(*params: Tensor) -> tuple[Tensor, ...]:
    """The tensor parameters that can carry a (zero) gradient."""
    return tuple(p for p in params if isinstance(p, TensorBase) and p.dtype.is_floating)


def multinomial(input: Tensor, num_samples: int, replacement: bool = False) -> Tensor:  # noqa: A002
    """Category indices drawn from each row of ``input``'s weights, as ``torch.multinomial``.

    The weights need not sum to one. Shapes: ``(C,)`` -> ``(num_samples,)``,
    ``(N, C)`` -> ``(N, num_samples)``; int64. Without replacement the draws
    of a row are distinct (``num_samples <= C``).

    Raises:
        ValueError: a weight is negative, infinite or NaN, a row sums to 0,
            or ``num_samples`` is not positive or (without replacement)
            exceeds ``C``.
        ShapeError: ``input`` is not 1-D or 2-D.

    Example:
        >>> import lamina.autograd as ag
        >>> ag.multinomial(ag.tensor([0.0, 1.0, 0.0]), 1).tolist()
        [1]
    """
    return make(nd.multinomial(input._data, num_samples, replacement))


def bernoulli(input: Tensor, p: float | None = None) -> Tensor:  # noqa: A002
    """1 with probability ``input`` (or the number ``p``), else 0, as ``torch.bernoulli``.

    The result has ``input``'s shape, dtype and device. Raises ``ValueError``
    for a probability outside ``[0, 1]`` (NaN included).

    Example:
        >>> import lamina.autograd as ag
        >>> ag.bernoulli(ag.tensor([0.0, 1.0])).tolist()
        [0.0, 1.0]
    """
    if p is None:
        values = nd.bernoulli(input._data)
    else:
        values = nd.bernoulli(p, input.shape, input.dtype, input.device)
    return Sampled.apply(*_float_params(input), values=values)


def normal(mean: Any, std: Any = 1.0, size: Any = None, *, dtype: Any = None,
           device: Any = None, requires_grad: bool = False) -> Any:
    """Normal samples, as ``torch.normal``'s four forms.

    - ``normal(mean_tensor, std_tensor)``: shapes broadcast together.
    - ``normal(mean_tensor, std=1.0)`` and ``normal(mean, std_tensor)``.
    - ``normal(mean, std, size)`` with two numbers (``dtype``, ``device`` and
      ``requires_grad`` apply to this form).

    Tensor parameters give their dtype and device; they get a zero gradient.

    Raises:
        ValueError: a standard deviation is negative or NaN.
        TypeError: two numbers without ``size``, or ``size`` with a tensor.

    Example:
        >>> import lamina.autograd as ag
        >>> ag.normal(0.0, 1.0, (2, 3)).shape
        (2, 3)
    """
    tensors = [t for t in (mean, std) if isinstance(t, TensorBase)]
    if not tensors:
        if size is None:
            raise TypeError("normal: with a number mean and std, pass size= (the shape)")
        values = nd.normal(float(mean), float(std), size, dtype=dtype, device=device)
        return new(values, requires_grad=requires_grad)
    if size is not None:
        raise TypeError("normal: size= applies to a number mean and std only; the tensor "
                        "arguments give the shape")
    m, s = (t._data if isinstance(t, TensorBase) else t for t in (mean, std))
    values = nd.normal(m, s)
    return Sampled.apply(*_float_params(mean, std), values=values)
