"""Fused ops that chain kernels in place on the one buffer they allocate.

``linear`` (a GEMM and its bias) and ``gelu`` (scale, erf or tanh, shift,
products) are each several elementwise steps. Written with the operators,
every step allocates its result and runs a Python frame; here the first step
allocates and the others update that new buffer in place, which the backend
interface allows for elementwise kernels (``out`` may be an input). Nothing
else holds the buffer, so no caller can see a half-done result.
``adam_step`` (a dozen steps) is one pass of the backend's optional
``adam_step`` kernel where it has one, else the composite.
"""

from __future__ import annotations

import math
from math import prod
from typing import TYPE_CHECKING

from ._compute import erf, matmul
from ._dtypes import DEFAULT_FLOAT
from ._errors import ShapeError
from ._narrow import kernels_of

if TYPE_CHECKING:
    from ._ndarray import NDArray

_SQRT_HALF = 1 / math.sqrt(2)
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_GELU_CUBIC = 0.044715


def linear(x: NDArray, weight: NDArray, bias: NDArray | None = None) -> NDArray:
    """``x @ weight^T + bias``: the affine map of a ``Linear`` layer.

    Shapes: x (*, in), weight (out, in), bias (out,) or None -> (*, out).
    One GEMM reads W^T where it lies (the backend's strided GEMM; no
    transposed copy of W). A single row (decoding one token) gets its bias
    added in place into the GEMM's new output by one elementwise kernel, as
    a fused ``addmm`` would; more rows get it as a broadcast add.

    Raises:
        ShapeError: weight is not 2-D, the last dim of x is not in, or bias
            is not (out,).

    Example:
        >>> import lamina.ndarray as nd
        >>> x, w = nd.ones((1, 3), device="numpy"), nd.ones((2, 3), device="numpy")
        >>> linear(x, w, nd.array([0.5, -0.5], device="numpy")).tolist()
        [[3.5, 2.5]]
    """
    xs, ws = x._shape, weight._shape
    if len(ws) != 2 or not xs or xs[-1] != ws[1] or (
            bias is not None and bias._shape != ws[:1]):
        raise ShapeError(_linear_message(xs, ws, None if bias is None else bias._shape))
    out = matmul(x, weight.T)
    if bias is None:
        return out
    if prod(xs[:-1]) == 1 and bias._dtype is out._dtype and out._dtype.is_wide_float \
            and bias._device is out._device \
            and (out._compact or out.is_compact()) and (bias._compact or bias.is_compact()):
        out._device.kernels.ewise["add"](out._buf, bias._buf, out._buf)  # matmul's new buffer
        return out
    return out + bias


def _linear_message(x: tuple[int, ...], weight: tuple[int, ...],
                    bias: tuple[int, ...] | None) -> str:
    if len(weight) != 2:
        return f"linear: weight must be 2-D (out_features, in_features), got shape {weight}"
    if not x or x[-1] != weight[1]:
        return (f"linear: input of shape {x} does not fit weight {weight}: expected input "
                f"(*, {weight[1]}) (the last dim is in_features)")
    return f"linear: bias must have shape ({weight[0]},) for weight {weight}, got {bias}"


def gelu(a: NDArray, approximate: str = "none") -> NDArray:
    """Gaussian error linear unit ``x * Phi(x)``, elementwise.

    ``approximate="none"``: ``x/2 * (1 + erf(x / sqrt 2))`` (erf as
    :func:`lamina.ndarray.erf`: exact where the backend has ``ewise_erf``);
    ``"tanh"``: ``x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))``.
    Integer input is computed in the default float dtype, as ``erf``.

    Raises:
        ValueError: ``approximate`` is neither ``"none"`` nor ``"tanh"``.

    Example:
        >>> import lamina.ndarray as nd
        >>> [round(v, 4) for v in gelu(nd.array([-1.0, 0.0, 2.0], device="numpy")).tolist()]
        [-0.1587, 0.0, 1.9545]
    """
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    if not a._dtype.is_floating:
        a = a.astype(DEFAULT_FLOAT)
    src = a if a._compact else a.compact()
    kernels = kernels_of(a, "ewise_mul", "gelu")
    ewise, scalar = kernels.ewise, kernels.scalar
    if approximate == "tanh":
        out = src._like()
        ewise["mul"](src._buf, src._buf, out._buf)  # x^2, then in place:
        ewise["mul"](out._buf, src._buf, out._buf)  # x^3
        scalar["mul"](out._buf, _GELU_CUBIC, out._buf)
        ewise["add"](out._buf, src._buf, out._buf)  # x + 0.044715 x^3
        scalar["mul"](out._buf, _SQRT_2_OVER_PI, out._buf)
        ewise["tanh"](out._buf, out._buf)
    elif "erf" in ewise:
        out = src._like()
        scalar["mul"](src._buf, _SQRT_HALF, out._buf)
        ewise["erf"](out._buf, out._buf)
    else:  # erf's composite form allocates its steps; the rest is in place as above
        out = erf(src * _SQRT_HALF)
    scalar["add"](out._buf, 1.0, out._buf)
    scalar["mul"](out._buf, 0.5, out._buf)
    ewise["mul"](out._buf, src._buf, out._buf)
    return out


def adam_step(param: NDArray, grad: NDArray, exp_avg: NDArray, exp_avg_sq: NDArray, *,
              lr: float, beta1: float, beta2: float, eps: float, step: int,
              weight_decay: float = 0.0, decoupled: bool = False,
              max_exp_avg_sq: NDArray | None = None
              ) -> tuple[NDArray, NDArray, NDArray, NDArray | None]:
    """One Adam update (AdamW's with ``decoupled``), as ``torch.optim.Adam``/``AdamW``.

    With ``g = grad`` and ``t = step`` (from 1)::

        decoupled:          p = p * (1 - lr * weight_decay)
        else, weight_decay: g = g + weight_decay * p
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g^2
        amsgrad:            v_max = max(v_max, v);  v_hat = v_max  (else v_hat = v)
        p = p - lr / (1 - beta1^t) * m / (sqrt(v_hat) / sqrt(1 - beta2^t) + eps)

    All arrays have the parameter's shape. The backend's ``adam_step`` kernel
    runs it in one pass where it has one (compact float operands of one
    dtype, no amsgrad); otherwise scalar and elementwise kernels compose it,
    each step rounded alike, so both give identical results.

    Returns:
        New arrays ``(param, exp_avg, exp_avg_sq, max_exp_avg_sq)``; the
        last is None without amsgrad. The inputs are left as they were.
    """
    bias1, inv_bias2_sqrt = 1.0 - beta1**step, 1.0 / math.sqrt(1.0 - beta2**step)
    decay = 1.0 - lr * weight_decay if decoupled else 1.0
    l2 = 0.0 if decoupled else weight_decay
    kernel = param._device.kernels.adam_step
    arrays = (param, grad, exp_avg, exp_avg_sq)
    if kernel is not None and max_exp_avg_sq is None and param._dtype.is_wide_float \
            and all(x._dtype is param._dtype and x._device is param._device
                    and x._shape == param._shape and (x._compact or x.is_compact())
                    for x in arrays):
        p, m, v = param._like(), param._like(), param._like()
        kernel(param._buf, grad._buf, exp_avg._buf, exp_avg_sq._buf, p._buf, m._buf, v._buf,
               beta1, beta2, eps, l2, decay, lr / bias1, inv_bias2_sqrt)
        return p, m, v, None
    p = param * decay if decay != 1.0 else param
    g = grad + param * l2 if l2 else grad
    m = exp_avg * beta1 + g * (1.0 - beta1)
    v = exp_avg_sq * beta2 + g * g * (1.0 - beta2)
    v_hat = v
    if max_exp_avg_sq is not None:
        max_exp_avg_sq = v_hat = max_exp_avg_sq.maximum(v)
    denom = v_hat.sqrt() * inv_bias2_sqrt + eps
    return p - (m / denom) * (lr / bias1), m, v, max_exp_avg_sq
