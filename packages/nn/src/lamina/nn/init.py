"""Parameter initialisation, in place and without recording a graph.

Random values come from ``lamina.ndarray``'s generator, so
``lamina.autograd.manual_seed`` makes initialisation reproducible. Fans
follow PyTorch: for a weight of shape (out, in, *k), fan_in = in * prod(k)
and fan_out = out * prod(k).

Example:
    >>> from lamina import autograd
    >>> w = autograd.empty(256, 128)
    >>> _ = kaiming_uniform_(w, nonlinearity="relu")
    >>> bool(abs(w.numpy()).max() <= (6 / 128) ** 0.5)
    True
"""

from __future__ import annotations

import math

from lamina import ndarray as nd
from lamina.autograd import Tensor

from ._errors import ShapeError
from ._parameter import assign_array

__all__ = [
    "calculate_gain", "constant_", "kaiming_normal_", "kaiming_uniform_", "normal_", "ones_",
    "uniform_", "xavier_normal_", "xavier_uniform_", "zeros_",
]

_LINEAR_GAINS = ("linear", "identity", "sigmoid", "conv1d", "conv2d", "conv3d")


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table).

    Args:
        nonlinearity: ``linear``, ``sigmoid``, ``tanh``, ``relu``, ``leaky_relu``
            or ``selu`` (and the conv names, which are linear).
        param: the negative slope of ``leaky_relu`` (default 0.01).
    """
    if nonlinearity in _LINEAR_GAINS:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _fans(tensor: Tensor, op: str) -> tuple[int, int]:
    shape = tuple(tensor.shape)
    if len(shape) < 2:
        raise ShapeError(f"{op}: fan in and fan out need a tensor with at least 2 dims, "
                         f"got shape {shape}")
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def _fill_random(tensor: Tensor, kind: str, scale: float, shift: float) -> Tensor:
    maker = nd.rand if kind == "uniform" else nd.randn
    sample = maker(*tensor.shape, dtype=tensor.dtype, device=tensor.device)
    assign_array(tensor, sample * scale + shift)
    return tensor


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    """Fill with U(a, b)."""
    if b < a:
        raise ValueError(f"uniform_: expected a <= b, got a={a}, b={b}")
    return _fill_random(tensor, "uniform", b - a, a)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    """Fill with N(mean, std^2)."""
    if std < 0:
        raise ValueError(f"normal_: std must be >= 0, got {std}")
    return _fill_random(tensor, "normal", std, mean)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    assign_array(tensor, nd.full(tuple(tensor.shape), val, dtype=tensor.dtype,
                                 device=tensor.device))
    return tensor


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with 0."""
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    """Fill with 1."""
    return constant_(tensor, 1.0)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio, 2010)."""
    fan_in, fan_out = _fans(tensor, "xavier_uniform_")
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound)


def xavier_normal_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _fans(tensor, "xavier_normal_")
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str, op: str) -> float:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"{op}: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = _fans(tensor, op)
    fan = fan_in if mode == "fan_in" else fan_out
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu") -> Tensor:
    """U(-b, b) with b = gain * sqrt(3 / fan) (He et al., 2015).

    Args:
        tensor: weight of shape (out, in, *k).
        a: negative slope for ``leaky_relu``.
        mode: ``"fan_in"`` keeps forward variance, ``"fan_out"`` backward.
        nonlinearity: the activation that follows, for :func:`calculate_gain`.
    """
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity, "kaiming_uniform_")
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu") -> Tensor:
    """N(0, std^2) with std = gain / sqrt(fan) (He et al., 2015)."""
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity, "kaiming_normal_"))
