"""Activation functions and their modules, as in ``torch.nn`` / ``torch.nn.functional``.

Each function is a composition of lamina.autograd ops with no backward code of
its own. Where PyTorch's gradient at a kink differs from what the plain
composition gives (hardtanh is flat at its bounds), the branch that must not
carry a gradient is detached. Branches that ``where`` discards are clamped
before ``exp``, so that an overflow there cannot turn a zero gradient into NaN.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from lamina import autograd as ag
from lamina import ndarray as nd
from lamina.autograd import Tensor
from lamina.autograd._inplace import apply_

from ._errors import ShapeError
from ._module import Module
from ._parameter import Parameter

__all__ = [
    "CELU", "ELU", "GLU", "RReLU", "SELU", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh",
    "LeakyReLU", "LogSigmoid", "Mish", "PReLU", "ReLU6", "SiLU", "Softmax2d", "Softmin",
    "Softplus", "Softshrink", "Softsign", "Tanhshrink", "Threshold",
    "celu", "celu_", "elu", "elu_", "glu", "hardshrink", "hardsigmoid", "hardswish", "hardtanh",
    "hardtanh_", "leaky_relu", "leaky_relu_", "logsigmoid", "mish", "prelu", "relu6", "rrelu",
    "rrelu_", "selu", "selu_", "silu", "softmin", "softplus", "softshrink", "softsign",
    "tanhshrink", "threshold", "threshold_",
]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


# ----- functions ---------------------------------------------------------------------------
# ``inplace=True`` writes the result into x's storage and returns x, recorded as an in-place
# op (lamina.autograd's one mechanism, as ``x.relu_()``): x's version counter bumps, its
# grad_fn becomes the activation's, and a leaf that requires grad refuses it.

def _activate(x: Tensor, fn: Callable[[Tensor], Tensor], inplace: bool, op: str) -> Tensor:
    """``fn(x)``, or with ``inplace`` the same values written into ``x`` (returned)."""
    return apply_(x, op, fn) if inplace else fn(x)


def leaky_relu(x: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x where x > 0, else ``negative_slope * x``."""
    return _activate(x, lambda t: ag.where(t > 0, t, t * negative_slope), inplace,
                     "leaky_relu_")


def leaky_relu_(x: Tensor, negative_slope: float = 0.01) -> Tensor:
    """:func:`leaky_relu` in place; returns ``x``."""
    return leaky_relu(x, negative_slope, inplace=True)


def elu(x: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x where x > 0, else ``alpha * (exp(x) - 1)``."""
    return _activate(x, lambda t: ag.where(t > 0, t, (t.clamp(max=0.0).exp() - 1.0) * alpha),
                     inplace, "elu_")


def elu_(x: Tensor, alpha: float = 1.0) -> Tensor:
    """:func:`elu` in place; returns ``x``."""
    return elu(x, alpha, inplace=True)


def selu(x: Tensor, inplace: bool = False) -> Tensor:
    """``scale * elu(x, alpha)`` with the self-normalising constants."""
    return _activate(x, lambda t: elu(t, _SELU_ALPHA) * _SELU_SCALE, inplace, "selu_")


def selu_(x: Tensor) -> Tensor:
    """:func:`selu` in place; returns ``x``."""
    return selu(x, inplace=True)


def celu(x: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x where x > 0, else ``alpha * (exp(x / alpha) - 1)``; alpha must not be 0."""
    _check_alpha("celu", alpha)
    return _activate(
        x, lambda t: ag.where(t > 0, t, ((t / alpha).clamp(max=0.0).exp() - 1.0) * alpha),
        inplace, "celu_")


def celu_(x: Tensor, alpha: float = 1.0) -> Tensor:
    """:func:`celu` in place; returns ``x``."""
    return celu(x, alpha, inplace=True)


def silu(x: Tensor, inplace: bool = False) -> Tensor:
    """``x * sigmoid(x)`` (also called swish)."""
    return _activate(x, lambda t: t * t.sigmoid(), inplace, "silu_")


def softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta * x)) / beta``; x itself where ``beta * x > threshold``."""
    scaled = x * beta
    smooth = (scaled.clamp(max=threshold).exp() + 1.0).log() / beta
    return ag.where(scaled > threshold, x, smooth)


def mish(x: Tensor, inplace: bool = False) -> Tensor:
    """``x * tanh(softplus(x))``."""
    return _activate(x, lambda t: t * softplus(t).tanh(), inplace, "mish_")


def hardtanh(x: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """x clamped to [min_val, max_val]; the gradient is 0 at and beyond the bounds."""
    _check_range("hardtanh", min_val, max_val)

    def fn(t: Tensor) -> Tensor:
        inside = (t > min_val).logical_and(t < max_val)
        return ag.where(inside, t, t.detach().clamp(min_val, max_val))

    return _activate(x, fn, inplace, "hardtanh_")


def hardtanh_(x: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """:func:`hardtanh` in place; returns ``x``."""
    return hardtanh(x, min_val, max_val, inplace=True)


def relu6(x: Tensor, inplace: bool = False) -> Tensor:
    """``min(max(x, 0), 6)``."""
    return hardtanh(x, 0.0, 6.0, inplace)


def hardsigmoid(x: Tensor, inplace: bool = False) -> Tensor:
    """``relu6(x + 3) / 6``: a piecewise-linear sigmoid."""
    return _activate(x, lambda t: relu6(t + 3.0) / 6.0, inplace, "hardsigmoid_")


def hardswish(x: Tensor, inplace: bool = False) -> Tensor:
    """``x * relu6(x + 3) / 6``."""
    return _activate(x, lambda t: t * hardsigmoid(t), inplace, "hardswish_")


def softsign(x: Tensor) -> Tensor:
    """``x / (1 + |x|)``."""
    return x / (x.abs() + 1.0)


def logsigmoid(x: Tensor) -> Tensor:
    """``log(sigmoid(x))``: ``x - log(1 + exp(x))`` below 0, ``-log(1 + exp(-x))`` above."""
    below = x - (x.clamp(max=0.0).exp() + 1.0).log()
    above = -((-x.clamp(min=0.0)).exp() + 1.0).log()
    return ag.where(x < 0, below, above)


def softmin(x: Tensor, dim: int | None = None) -> Tensor:
    """``softmax(-x)`` along ``dim`` (PyTorch's implicit choice of dim when None)."""
    return (-x).softmax(_softmax_dim(x, dim))


def prelu(x: Tensor, weight: Tensor) -> Tensor:
    """x where x > 0, else ``weight * x``; a weight of C values applies per channel (dim 1).

    Args:
        x: (N, C, *) or any shape when ``weight`` has one value.
        weight: (1,) or (C,).
    """
    count = weight.numel()
    if weight.ndim > 1:
        raise ShapeError(f"prelu: weight must be 0-D or 1-D, got shape {tuple(weight.shape)}")
    if count != 1:
        channels = x.shape[1] if x.ndim >= 2 else 1
        if channels != count:
            raise ShapeError(f"prelu: weight has {count} values but the input "
                             f"{tuple(x.shape)} has {channels} channels in dim 1; pass "
                             f"num_parameters=1 or one value per channel")
        weight = weight.reshape((count,) + (1,) * (x.ndim - 2))
    return ag.where(x > 0, x, x * weight)


def threshold(x: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where ``x > threshold``, else ``value`` (a NaN stays NaN, as in PyTorch)."""
    return _activate(x, lambda t: ag.where(t <= threshold, value, t), inplace, "threshold_")


def threshold_(x: Tensor, threshold: float, value: float) -> Tensor:
    """:func:`threshold` in place; returns ``x``."""
    return _activate(x, lambda t: ag.where(t <= threshold, value, t), True, "threshold_")


def glu(x: Tensor, dim: int = -1) -> Tensor:
    """Gated linear unit: ``a * sigmoid(b)`` where a, b are the halves of x along ``dim``.

    Args:
        x: (*, 2M, *) with the even size 2M at ``dim``.

    Returns:
        (*, M, *).
    """
    shape = tuple(x.shape)
    if not shape:
        raise ShapeError("glu: got a 0-D input; it halves a dim of even size, so pass a "
                         "tensor with at least one dim")
    axis = dim + len(shape) if dim < 0 else dim
    if not 0 <= axis < len(shape):  # IndexError, as PyTorch's dim checks raise
        raise IndexError(f"glu: dim {dim} is out of range for input of shape {shape} "
                         f"(expected a dim in [{-len(shape)}, {len(shape)}))")
    if shape[axis] % 2:
        raise ShapeError(f"glu: dim {dim} of input {shape} has odd size {shape[axis]}; the "
                         f"halving dim must have an even size")
    half = shape[axis] // 2
    return x.narrow(axis, 0, half) * x.narrow(axis, half, half).sigmoid()


def hardshrink(x: Tensor, lambd: float = 0.5) -> Tensor:
    """0 where ``-lambd <= x <= lambd``, else x."""
    inside = (x >= -lambd).logical_and(x <= lambd)
    return ag.where(inside, 0.0, x)


def softshrink(x: Tensor, lambd: float = 0.5) -> Tensor:
    """``x - lambd`` above lambd, ``x + lambd`` below -lambd, else 0; lambd must be >= 0."""
    if not lambd >= 0:
        raise ValueError(f"softshrink: lambd must be >= 0, got {lambd}; pass a "
                         f"non-negative lambd")
    return ag.where(x > lambd, x - lambd, ag.where(x < -lambd, x + lambd, 0.0))


def tanhshrink(x: Tensor) -> Tensor:
    """``x - tanh(x)``."""
    return x - x.tanh()


def rrelu(x: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU: x where x > 0, else ``slope * x``.

    In training each element draws its own slope from U(lower, upper) (from
    ``lamina.ndarray``'s generator); otherwise the slope is ``(lower + upper) / 2``.
    """
    if not lower <= upper:
        raise ValueError(f"rrelu: lower ({lower}) must be less than or equal to upper "
                         f"({upper})")
    if not training:
        return leaky_relu(x, (lower + upper) / 2, inplace)

    def fn(t: Tensor) -> Tensor:
        slope = Tensor(nd.uniform(tuple(t.shape), lower, upper, dtype=t.dtype,
                                  device=t.device))
        return ag.where(t > 0, t, t * slope)

    return _activate(x, fn, inplace, "rrelu_")


def rrelu_(x: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False) -> Tensor:
    """:func:`rrelu` in place; returns ``x``."""
    return rrelu(x, lower, upper, training, inplace=True)


def _softmax_dim(x: Tensor, dim: int | None) -> int:
    # torch.nn.functional._get_softmax_dim: dim 0 for 0-, 1- and 3-D input, else dim 1.
    if dim is not None:
        return dim
    return 0 if x.ndim in (0, 1, 3) else 1


def _check_alpha(owner: str, alpha: float) -> None:
    if alpha == 0:
        raise ValueError(f"{owner}: alpha must not be 0 (it divides the input)")


def _check_range(owner: str, min_val: float, max_val: float) -> None:
    if not min_val < max_val:
        raise ValueError(f"{owner}: min_val ({min_val}) must be less than max_val ({max_val})")


# ----- modules -----------------------------------------------------------------------------

def _with_inplace(options: str, inplace: bool) -> str:
    """An extra_repr as PyTorch's activations write it: ``inplace=True`` only when set."""
    return ", ".join(part for part in (options, "inplace=True" if inplace else "") if part)


class _InPlaceActivation(Module):
    """Base of the activations whose one option is PyTorch's ``inplace``.

    Args:
        inplace: write the result into the input's storage and return the input.
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return _with_inplace("", self.inplace)


class LeakyReLU(Module):
    """x where x > 0, else ``negative_slope * x`` (any shape); ``inplace`` as PyTorch's."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return leaky_relu(x, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return _with_inplace(f"negative_slope={self.negative_slope}", self.inplace)


class ELU(Module):
    """x where x > 0, else ``alpha * (exp(x) - 1)`` (any shape); ``inplace`` as PyTorch's."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return elu(x, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return _with_inplace(f"alpha={self.alpha}", self.inplace)


class CELU(ELU):
    """x where x > 0, else ``alpha * (exp(x / alpha) - 1)`` (any shape)."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        _check_alpha("CELU", alpha)
        super().__init__(alpha, inplace)

    def forward(self, x: Tensor) -> Tensor:
        return celu(x, self.alpha, self.inplace)


class SELU(_InPlaceActivation):
    """``scale * elu(x, alpha)`` with alpha ~ 1.6733 and scale ~ 1.0507 (any shape)."""

    def forward(self, x: Tensor) -> Tensor:
        return selu(x, self.inplace)


class SiLU(_InPlaceActivation):
    """``x * sigmoid(x)`` (any shape)."""

    def forward(self, x: Tensor) -> Tensor:
        return silu(x, self.inplace)


class Mish(_InPlaceActivation):
    """``x * tanh(softplus(x))`` (any shape)."""

    def forward(self, x: Tensor) -> Tensor:
        return mish(x, self.inplace)


class Softplus(Module):
    """``log(1 + exp(beta * x)) / beta``, linear where ``beta * x > threshold`` (any shape)."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        if beta == 0:
            raise ValueError("Softplus: beta must not be 0 (the output divides by it)")
        self.beta, self.threshold = beta, threshold

    def forward(self, x: Tensor) -> Tensor:
        return softplus(x, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    """x clamped to [min_val, max_val] (any shape); ``inplace`` as PyTorch's."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0,
                 inplace: bool = False) -> None:
        super().__init__()
        _check_range(type(self).__name__, min_val, max_val)
        self.min_val, self.max_val = min_val, max_val
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return hardtanh(x, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return _with_inplace(f"min_val={self.min_val}, max_val={self.max_val}", self.inplace)


class ReLU6(Hardtanh):
    """``min(max(x, 0), 6)`` (any shape)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return _with_inplace("", self.inplace)


class Hardsigmoid(_InPlaceActivation):
    """``relu6(x + 3) / 6`` (any shape)."""

    def forward(self, x: Tensor) -> Tensor:
        return hardsigmoid(x, self.inplace)

    def extra_repr(self) -> str:
        return ""  # PyTorch's repr never shows inplace here


class Hardswish(_InPlaceActivation):
    """``x * relu6(x + 3) / 6`` (any shape)."""

    def forward(self, x: Tensor) -> Tensor:
        return hardswish(x, self.inplace)

    def extra_repr(self) -> str:
        return ""  # PyTorch's repr never shows inplace here


class Softsign(Module):
    """``x / (1 + |x|)`` (any shape)."""

    def forward(self, x: Tensor) -> Tensor:
        return softsign(x)


class LogSigmoid(Module):
    """``log(sigmoid(x))``, computed stably (any shape)."""

    def forward(self, x: Tensor) -> Tensor:
        return logsigmoid(x)


class Softmin(Module):
    """``softmax(-x)`` along ``dim`` (PyTorch's implicit dim when None)."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return softmin(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class PReLU(Module):
    """x where x > 0, else ``weight * x``, with a learnt slope (one, or one per channel).

    Args:
        num_parameters: 1 (one slope for every element) or C (one per channel, dim 1).
        init: the slopes' initial value.

    Shape:
        (N, C, *) -> the same shape (any shape when ``num_parameters == 1``).
    """

    def __init__(self, num_parameters: int = 1, init: float = 0.25,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if isinstance(num_parameters, bool) or not isinstance(num_parameters, int) \
                or num_parameters < 1:
            raise ValueError(f"PReLU: num_parameters must be a positive int, "
                             f"got {num_parameters!r}")
        if not math.isfinite(init):
            raise ValueError(f"PReLU: init must be a finite number, got {init!r}")
        # No num_parameters attribute: Module.num_parameters() already counts the slopes.
        self.init = init
        self.weight = Parameter(nd.full((num_parameters,), init, dtype=dtype or nd.float32,
                                        device=device))

    def reset_parameters(self) -> None:
        """Set every slope back to ``init``."""
        with ag.no_grad():
            self.weight.fill_(self.init)

    def forward(self, x: Tensor) -> Tensor:
        return prelu(x, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.weight.numel()}"


class Threshold(Module):
    """x where ``x > threshold``, else ``value`` (any shape); ``inplace`` as PyTorch's."""

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, x: Tensor) -> Tensor:
        return threshold(x, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return _with_inplace(f"threshold={self.threshold}, value={self.value}", self.inplace)


class GLU(Module):
    """Gated linear unit ``a * sigmoid(b)`` over the two halves of ``dim``.

    Shape:
        (*, 2M, *) -> (*, M, *), the halved dim at ``dim``.
    """

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return glu(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class _Shrink(Module):
    """Base of the shrinks, whose one option is ``lambd`` (shown bare in the repr)."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Hardshrink(_Shrink):
    """0 where ``|x| <= lambd``, else x (any shape)."""

    def forward(self, x: Tensor) -> Tensor:
        return hardshrink(x, self.lambd)


class Softshrink(_Shrink):
    """x moved towards 0 by ``lambd``, and 0 where ``|x| <= lambd`` (any shape)."""

    def forward(self, x: Tensor) -> Tensor:
        return softshrink(x, self.lambd)


class Tanhshrink(Module):
    """``x - tanh(x)`` (any shape)."""

    def forward(self, x: Tensor) -> Tensor:
        return tanhshrink(x)


class Softmax2d(Module):
    """softmax over the channels of each location.

    Shape:
        (N, C, H, W) or (C, H, W) -> the same shape; softmax along C (dim -3).
    """

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim not in (3, 4):
            raise ShapeError(f"Softmax2d: expected input to be 3D or 4D, got {x.ndim}D "
                             f"(shape {tuple(x.shape)}); pass (N, C, H, W) or (C, H, W)")
        return x.softmax(-3)


class RReLU(Module):
    """Randomized leaky ReLU (any shape): a random slope per element in training.

    Args:
        lower, upper: the range the negative slopes are drawn from in training;
            in eval the slope is ``(lower + upper) / 2``.
        inplace: write the result into the input's storage and return the input.
    """

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
                 inplace: bool = False) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, x: Tensor) -> Tensor:
        return rrelu(x, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return _with_inplace(f"lower={self.lower}, upper={self.upper}", self.inplace)
