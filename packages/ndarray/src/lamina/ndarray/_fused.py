"""Fused ops that chain kernels in place on the one buffer they allocate.

``linear`` (a GEMM and its bias) and ``gelu`` (scale, erf or tanh, shift,
products) are each several elementwise steps. Written with the operators,
every step allocates its result and runs a Python frame; here the first step
allocates and the others update that new buffer in place, which the backend
interface allows for elementwise kernels (``out`` may be an input). Nothing
else holds the buffer, so no caller can see a half-done result.
``adam_step`` (a dozen steps) is one pass of the backend's optional
``adam_step`` kernel where it has one, else the composite; ``add_scaled_``
(an optimizer's ``p -= lr * g``) and ``adadelta_step_`` (sixteen steps) are
each one ``ewise_program`` pass that updates ``p`` in place.

``gelu`` and ``gelu_backward`` run as one ``ewise_program`` call where the
device has that optional kernel for the dtype: the same kernels in the same
order, bit for bit, but block by block in cache, so a wide activation is read
and written once rather than once per step (its backward has about fifteen).
"""

from __future__ import annotations

import functools
import math
from math import prod
from typing import TYPE_CHECKING, Any

import numpy as np

from ._compute import erf, matmul
from ._dtypes import DEFAULT_FLOAT
from ._errors import DTypeError, ShapeError
from ._interface import PROGRAM_OPS
from ._narrow import kernels_for, kernels_of
from ._select import where

if TYPE_CHECKING:
    from ._ndarray import NDArray

_SQRT_HALF = 1 / math.sqrt(2)
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_GELU_CUBIC = 0.044715
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)

# ----- ewise_program listings -------------------------------------------------------
_OPCODE = {name: i for i, (name, _) in enumerate(PROGRAM_OPS)}
T0, T1, T2, T3, T4 = -1, -2, -3, -4, -5  # block temporaries


Program = tuple[np.ndarray, np.ndarray, frozenset[str]]


def _assemble(*steps: tuple[Any, ...]) -> Program:
    """``(code, scalars, kernels)`` of an ``ewise_program`` from ``(op, dst, a[, b])``
    steps: an operand >= 0 is a buffer, T0.. a temporary, and a scalar op's b is its
    value; ``kernels`` names each op's own kernel (a device must have them all)."""
    code: list[int] = []
    scalars: list[float] = []
    kernels = frozenset(op if op.startswith("scalar_") else f"ewise_{op}" for op, *_ in steps)
    for op, dst, a, *rest in steps:
        b = 0
        if op.startswith("scalar_"):
            b = len(scalars)
            scalars.append(float(rest[0]))
        elif rest:
            b = rest[0]
        code += [_OPCODE[op], dst, a, b]
    return np.asarray(code, np.int64), np.asarray(scalars, np.float64), kernels


def _gelu_tail(dst: int, x: int) -> tuple[tuple[Any, ...], ...]:
    """``dst = (dst + 1) * 0.5 * x``: both forms of GELU end so."""
    return (("scalar_add", dst, dst, 1.0), ("scalar_mul", dst, dst, 0.5), ("mul", dst, dst, x))


# GELU forward on buffers (x, out), each step the composite's below, in its order.
_GELU_PROGRAM = {
    "none": _assemble(("scalar_mul", 1, 0, _SQRT_HALF), ("erf", 1, 1), *_gelu_tail(1, 0)),
    "tanh": _assemble(("mul", 1, 0, 0), ("mul", 1, 1, 0), ("scalar_mul", 1, 1, _GELU_CUBIC),
                      ("add", 1, 1, 0), ("scalar_mul", 1, 1, _SQRT_2_OVER_PI), ("tanh", 1, 1),
                      *_gelu_tail(1, 0)),
}
# grad * GELU'(x) on buffers (x, grad, out): gelu_slope's steps, in its order.
_GELU_GRAD_PROGRAM = {
    "none": _assemble(
        ("mul", T1, 0, 0), ("scalar_mul", T1, T1, -0.5), ("exp", T1, T1),
        ("scalar_mul", T1, T1, _INV_SQRT_2PI),                       # pdf
        ("scalar_mul", T0, 0, _SQRT_HALF), ("erf", T0, T0), ("scalar_add", T0, T0, 1.0),
        ("scalar_mul", T0, T0, 0.5), ("mul", T1, 0, T1), ("add", T0, T0, T1),
        ("mul", 2, 1, T0)),
    "tanh": _assemble(
        ("mul", T0, 0, 0), ("mul", T0, T0, 0), ("scalar_mul", T0, T0, _GELU_CUBIC),
        ("add", T0, 0, T0), ("scalar_mul", T0, T0, _SQRT_2_OVER_PI), ("tanh", T0, T0),  # t
        ("mul", T1, 0, 0), ("scalar_mul", T1, T1, 3 * _GELU_CUBIC), ("scalar_add", T1, T1, 1.0),
        ("scalar_mul", T1, T1, _SQRT_2_OVER_PI),                                       # du
        ("scalar_add", T2, T0, 1.0), ("scalar_mul", T2, T2, 0.5),
        ("scalar_mul", T3, 0, 0.5), ("mul", T4, T0, T0), ("scalar_rsub", T4, T4, 1.0),
        ("mul", T3, T3, T4), ("mul", T3, T3, T1), ("add", T2, T2, T3),
        ("mul", 2, 1, T2)),
}


def _run_program(arrays: list[NDArray], program: Program) -> bool:
    """Runs ``program`` over ``arrays`` (one dtype and size; the program's code says
    which it writes: a new result, or an operand in place as ``add_scaled_``'s first)
    with the device's ``ewise_program``; False, running nothing, where that cannot be
    (no such kernel, or no kernel of one of its ops, for the dtype; an operand that
    does not start its buffer)."""
    first = arrays[0]
    device, n, dtype = first._device, first.size, first._dtype.name
    kernel, listed = device.kernels.ewise_program, device.kernel_dtypes
    if kernel is None or not n or dtype not in listed.get("ewise_program", ()):
        return False
    for name in program[2]:
        if dtype not in listed.get(name, ()):
            return False
    if not _whole_buffers(arrays):
        return False
    kernel([x._buf for x in arrays], program[0], program[1], n)
    return True


def _whole_buffers(arrays: list[NDArray]) -> bool:
    """Whether every array lies compactly from the start of its buffer, where a
    kernel over flat buffers reads and writes it."""
    return all(not x._offset and (x._compact or x.is_compact()) for x in arrays)


def _run_gelu_kernel(name: str, arrays: list[NDArray], approximate: str) -> bool:
    """Runs the device's optional ``gelu`` or ``gelu_backward`` kernel over ``arrays``
    (one dtype and size, the last the result): the steps of the ``ewise_program``
    listings below in one pass. A float16/bfloat16 array the kernel takes only as
    float32 runs it on float32 copies, rounded once at the end (PyTorch's rule; the
    op-by-op fallback would round every step). False, running nothing, where the
    device lacks it for the dtype or an operand does not start its buffer compactly."""
    first = arrays[0]
    device, dtype = first._device, first._dtype
    listed = device.kernel_dtypes.get(name, ())
    if dtype.name in listed:
        table = device.kernels
    elif dtype.is_narrow and "float32" in listed:
        table = kernels_for(device, name, dtype, name)
    else:
        return False
    kernel = getattr(table, name)
    if kernel is None or not _whole_buffers(arrays):
        return False
    kernel(*[x._buf for x in arrays], approximate == "tanh")
    return True


# a += alpha * b on buffers (a, b): b * alpha rounded, then the add, into a.
_ADD_SCALED_CODE = _assemble(("scalar_mul", T0, 1, 0.0), ("add", 0, 0, T0))


def add_scaled_(a: NDArray, b: Any, alpha: float = 1.0) -> NDArray:
    """``a += alpha * b`` in place (``torch.Tensor.add_(b, alpha=alpha)``); returns ``a``.

    ``b``, an NDArray or a number, must give a result that fits ``a`` (as
    ``a += b``: the same errors). For ``b`` of ``a``'s shape, dtype and
    device and both compact, it is one ``ewise_program`` pass where the
    device has one (an optimizer's ``p -= lr * g`` reads and writes ``p``
    once): bit for bit ``b * alpha`` rounded, then the add, as elsewhere.

    Example:
        >>> import lamina.ndarray as nd
        >>> p = nd.array([1.0, 2.0], device="numpy")
        >>> add_scaled_(p, nd.array([10.0, 10.0], device="numpy"), -0.5).tolist()
        [-4.0, -3.0]
    """
    if alpha == 1:
        return a.__iadd__(b)
    if type(b) is type(a) and b._shape == a._shape and b._dtype is a._dtype \
            and b._device is a._device and a._dtype.is_floating:
        code, _, kernels = _ADD_SCALED_CODE
        if _run_program([a, b], (code, np.asarray([alpha], np.float64), kernels)):
            return a
    return a.__iadd__(b * alpha)


# a = a * keep + b * take on buffers (a, b): b * take, a * keep, each rounded, then the add.
_BLEND_CODE = _assemble(("scalar_mul", T0, 1, 0.0), ("scalar_mul", 0, 0, 0.0), ("add", 0, 0, T0))


def blend_(a: NDArray, b: NDArray, keep: float, take: float) -> NDArray:
    """``a = a * keep + b * take`` in place, each product rounded, then the sum: a
    running average's update (BatchNorm's statistics). Shapes: ``a`` and ``b`` alike.

    One ``ewise_program`` pass where the device has it for the dtype and both arrays
    start their buffers compactly; else the three kernels and a copy into ``a``, which
    give the same bits. Returns ``a``.
    """
    if type(b) is type(a) and b._shape == a._shape and b._dtype is a._dtype \
            and b._device is a._device and a._dtype.is_floating:
        code, _, kernels = _BLEND_CODE
        if _run_program([a, b], (code, np.asarray([take, keep], np.float64), kernels)):
            return a
    a[...] = a * keep + b * take
    return a


def linear(x: NDArray, weight: NDArray, bias: NDArray | None = None) -> NDArray:
    """``x @ weight^T + bias``: the affine map of a ``Linear`` layer.

    Shapes: x (*, in), weight (out, in), bias (out,) or None -> (*, out).
    One GEMM reads W^T where it lies (the backend's strided GEMM; no
    transposed copy of W); where the device has ``matmul_bias`` the bias goes
    into that GEMM (added to each tile of the output as it is stored), else it
    is added in place into the GEMM's new output, as a fused ``addmm`` would.

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
    fused = _linear_bias(x, weight, bias) if bias is not None else None
    if fused is not None:
        return fused
    out = matmul(x, weight.T)
    if bias is None:
        return out
    if bias._dtype is out._dtype and out._dtype.is_wide_float and bias._device is out._device \
            and (out._compact or out.is_compact()) and (bias._compact or bias.is_compact()):
        # into matmul's new buffer, in place: a second (rows, out) buffer cost more than the
        # add (2048 x 384 float32, Zen 3: 0.7 ms, where the add alone takes 0.1)
        rows, kernels = prod(xs[:-1]), out._device.kernels
        if rows == 1:
            kernels.ewise["add"](out._buf, bias._buf, out._buf)
            return out
        strided = kernels.ewise_strided.get("add")
        if strided is not None:
            shape = (rows, ws[0])
            strided(out._buf, bias._buf, out._buf, shape, (ws[0], 1), out._offset, (0, 1),
                    bias._offset)
            return out
    return out + bias


def _linear_bias(x: NDArray, weight: NDArray, bias: NDArray) -> NDArray | None:
    """``x @ weight^T + bias`` as one ``matmul_bias`` call, the bias added to each tile of
    the product while it is in cache; None where the device lacks the kernel for the dtype
    or an operand would need a copy (matmul's path then runs, and the bias is added)."""
    kernel = x._device.kernels.matmul_bias
    if kernel is None or not (x._dtype is weight._dtype is bias._dtype) \
            or not (x._device is weight._device is bias._device) or not x._dtype.is_wide_float \
            or x._dtype.name not in x._device.kernel_dtypes.get("matmul_bias", ()):
        return None
    rows, (out_f, in_f) = prod(x._shape[:-1]), weight._shape
    if x._compact or x.is_compact():
        a_offset, a_rs, a_cs = x._offset, in_f, 1
    elif len(x._shape) == 2 and min(x._strides) >= 0:
        a_offset, (a_rs, a_cs) = x._offset, x._strides
    else:
        return None
    if min(weight._strides) < 0 or not (bias._compact or bias.is_compact()):
        return None
    out = x._empty(x._shape[:-1] + (out_f,), x._dtype, x._device, "linear")
    if rows and out_f:
        w_rs, w_cs = weight._strides
        kernel(x._buf, weight._buf, bias.compact()._buf if bias._offset else bias._buf,
               out._buf, rows, in_f, out_f, a_offset, a_rs, a_cs, weight._offset, w_cs, w_rs)
    return out


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
    out = src._like()
    if _run_gelu_kernel("gelu", [src, out], approximate) \
            or _run_program([src, out], _GELU_PROGRAM[approximate]):
        return out
    kernels = kernels_of(a, "ewise_mul", "gelu")
    ewise, scalar = kernels.ewise, kernels.scalar
    if approximate == "tanh":
        ewise["mul"](src._buf, src._buf, out._buf)  # x^2, then in place:
        ewise["mul"](out._buf, src._buf, out._buf)  # x^3
        scalar["mul"](out._buf, _GELU_CUBIC, out._buf)
        ewise["add"](out._buf, src._buf, out._buf)  # x + 0.044715 x^3
        scalar["mul"](out._buf, _SQRT_2_OVER_PI, out._buf)
        ewise["tanh"](out._buf, out._buf)
    elif "erf" in ewise:
        scalar["mul"](src._buf, _SQRT_HALF, out._buf)
        ewise["erf"](out._buf, out._buf)
    else:  # erf's composite form allocates its steps; the rest is in place as above
        out = erf(src * _SQRT_HALF)
    scalar["add"](out._buf, 1.0, out._buf)
    scalar["mul"](out._buf, 0.5, out._buf)
    ewise["mul"](out._buf, src._buf, out._buf)
    return out


def _check_input_and_gradient(op: str, a: NDArray, grad: NDArray) -> None:
    """An activation's backward takes its input and the output's gradient alike."""
    if a._shape != grad._shape:
        raise ShapeError(f"{op}: input {a._shape} and gradient {grad._shape} differ in shape")
    if a._dtype is not grad._dtype:
        raise DTypeError(f"{op}: input {a._dtype.name} and gradient {grad._dtype.name} "
                         f"differ in dtype")


def gelu_backward(a: NDArray, grad: NDArray, approximate: str = "none") -> NDArray:
    """``grad * gelu'(a)``: the gradient of :func:`gelu` at ``a``, given the output's.

    ``gelu'`` is ``Phi(x) + x * phi(x)`` (``approximate="none"``) or the tanh
    form's derivative (:func:`gelu_slope`). Shapes: ``a`` and ``grad`` alike.

    Raises:
        ValueError: ``approximate`` is neither ``"none"`` nor ``"tanh"``.
        ShapeError: the shapes differ.
        DTypeError: the dtypes differ.
    """
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu_backward: approximate must be 'none' or 'tanh', got "
                         f"{approximate!r}")
    _check_input_and_gradient("gelu_backward", a, grad)
    if a._dtype.is_floating:
        out = a._like()
        if _run_gelu_kernel("gelu_backward", [a, grad, out], approximate) \
                or _run_program([a, grad, out], _GELU_GRAD_PROGRAM[approximate]):
            return out
    return grad * gelu_slope(a, approximate)


def relu_backward(a: NDArray, grad: NDArray) -> NDArray:
    """``grad`` where ``a > 0`` or is NaN, 0 elsewhere: the gradient of ReLU at ``a``,
    given the output's (PyTorch's threshold rule). Shapes: ``a`` and ``grad`` alike.

    One pass of the device's optional ``relu_backward`` kernel where it has one for
    the dtype, else ``where(a <= 0, 0.0, grad)``.

    Raises:
        ShapeError: the shapes differ.
        DTypeError: the dtypes differ.
    """
    _check_input_and_gradient("relu_backward", a, grad)
    device = a._device
    kernel = device.kernels.relu_backward
    if kernel is not None and grad._device is device and _whole_buffers([a, grad]) \
            and a._dtype.name in device.kernel_dtypes.get("relu_backward", ()):
        out = a._like()
        if out.size:
            kernel(a._buf, grad._buf, out._buf)
        return out
    return where(a <= 0, 0.0, grad)


def gelu_slope(a: Any, approximate: str = "none") -> Any:
    """GELU's derivative at ``a``, an NDArray or a Tensor (which records: lamina.autograd's
    ``create_graph`` backward differentiates it again)."""
    if approximate == "tanh":
        t = ((a + a * a * a * _GELU_CUBIC) * _SQRT_2_OVER_PI).tanh()
        du = (a * a * (3 * _GELU_CUBIC) + 1) * _SQRT_2_OVER_PI
        return (t + 1) * 0.5 + a * 0.5 * (1 - t * t) * du
    pdf = (a * a * -0.5).exp() * _INV_SQRT_2PI
    return ((a * _SQRT_HALF).erf() + 1) * 0.5 + a * pdf


@functools.lru_cache(maxsize=64)
def _adadelta_program(lr: float, rho: float, eps: float, weight_decay: float) -> Program:
    """adadelta_step_'s composite as an ``ewise_program`` on buffers (param, grad,
    square_avg, acc_delta, square_avg out, acc_delta out), param updated in place.
    Cached: a step calls it once per parameter with the same hyperparameters."""
    g = 1
    decay: tuple[tuple[Any, ...], ...] = ()
    if weight_decay:
        g, decay = T0, (("scalar_mul", T0, 0, weight_decay), ("add", T0, 1, T0))
    return _assemble(
        *decay,
        ("scalar_mul", 4, 2, rho), ("mul", T1, g, g), ("scalar_mul", T1, T1, 1.0 - rho),
        ("add", 4, 4, T1),                                                    # square_avg
        ("scalar_add", T1, 3, eps), ("sqrt", T1, T1), ("scalar_add", T2, 4, eps),
        ("sqrt", T2, T2), ("div", T1, T1, T2), ("mul", T1, T1, g),            # delta
        ("scalar_mul", 5, 3, rho), ("mul", T2, T1, T1), ("scalar_mul", T2, T2, 1.0 - rho),
        ("add", 5, 5, T2),                                                    # acc_delta
        ("scalar_mul", T2, T1, lr), ("sub", 0, 0, T2))                        # param


def adadelta_step_(param: NDArray, grad: NDArray, square_avg: NDArray, acc_delta: NDArray, *,
                   lr: float, rho: float, eps: float, weight_decay: float = 0.0
                   ) -> tuple[NDArray, NDArray, NDArray]:
    """One Adadelta update, as ``torch.optim.Adadelta``; ``param`` changes in place.

    With ``g = grad`` (all arrays of the parameter's shape)::

        weight_decay:  g = g + param * weight_decay
        v = square_avg * rho + g * g * (1 - rho)
        d = sqrt(acc_delta + eps) / sqrt(v + eps) * g
        u = acc_delta * rho + d * d * (1 - rho)
        param = param - d * lr

    One ``ewise_program`` pass where the device has one (compact float operands
    of one dtype: sixteen steps read and write memory once); otherwise the
    same kernels op by op, bit for bit the same.

    Returns:
        ``(param, v, u)``: ``param`` itself and new state arrays (the old ones
        are left as they were).
    """
    arrays = [param, grad, square_avg, acc_delta]
    if param._dtype.is_floating and all(
            x._dtype is param._dtype and x._device is param._device and x._shape == param._shape
            for x in arrays):
        v, u = param._like(), param._like()
        if _run_program([*arrays, v, u], _adadelta_program(lr, rho, eps, weight_decay)):
            return param, v, u
    if weight_decay:
        grad = grad + param * weight_decay
    v = square_avg * rho + grad * grad * (1.0 - rho)
    d = (acc_delta + eps).sqrt() / (v + eps).sqrt() * grad
    u = acc_delta * rho + d * d * (1.0 - rho)
    param -= d * lr
    return param, v, u


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
