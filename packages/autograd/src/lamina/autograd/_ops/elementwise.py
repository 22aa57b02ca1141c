"""Elementwise ops: the gradient rules of the op table's ops, activations, where.

The op table (``lamina.ndarray._optable``) declares each elementwise op once;
this module adds what the table cannot say: the gradient rule of each
differentiable op (registered with :func:`gradient`), the public functions
with scalar fast paths (registered with :func:`public`), and the ops that are
not NDArray ops (relu, gelu, where, clamp, ...). ``_ops.table`` makes the
rest: the other public functions, the non-differentiable Functions
(comparisons, bitwise ops, sign, floor_divide) and Tensor's operators.

Binary ops broadcast like numpy. Their rules return gradients with the
broadcast shape; the engine sums them back to each input's shape.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

import lamina.ndarray as nd
from lamina.ndarray import NDArray
from lamina.ndarray._fused import gelu_slope
from lamina.ndarray._optable import OPS

from .. import _grad_mode as grad_mode
from .._function import Function
from .._tensor_base import Tensor, TensorBase, make
from ._util import lift, operands

GRADIENTS: dict[str, type[Function]] = {}
"""The gradient rule of each op of the op table that has one, by the op's public name
(``lamina.autograd._ops.table`` makes the others non-differentiable Functions)."""
PUBLIC: dict[str, Callable[..., Tensor]] = {}
"""Hand-written public functions of op table ops (their scalar fast paths), by name."""

_C = TypeVar("_C", bound=type[Function])
_F = TypeVar("_F", bound=Callable[..., Tensor])


def gradient(cls: _C) -> _C:
    """Registers ``cls`` as the gradient rule of the op table's op ``cls.name``."""
    GRADIENTS[str(cls.name)] = cls
    return cls


def public(fn: _F) -> _F:
    """Registers ``fn`` as the public function of the op table's op ``fn.__name__``."""
    PUBLIC[fn.__name__] = fn
    return fn


@gradient
class Add(Function):
    """``a + b``, broadcast. Shapes: ``(*A)``, ``(*B)`` -> ``broadcast(A, B)``."""

    name = "add"

    def forward(self, a: NDArray, b: NDArray) -> NDArray:
        return a + b

    def backward(self, g: TensorBase) -> tuple[TensorBase, TensorBase]:
        return g, g


@gradient
class Sub(Function):
    """``a - b``, broadcast."""

    name = "sub"

    def forward(self, a: NDArray, b: NDArray) -> NDArray:
        return a - b

    def backward(self, g: TensorBase) -> tuple[TensorBase, TensorBase]:
        return g, -g


@gradient
class Mul(Function):
    """``a * b``, broadcast."""

    name = "mul"
    save_inputs = True

    def forward(self, a: NDArray, b: NDArray) -> NDArray:
        return a * b

    def backward(self, g: TensorBase) -> tuple[TensorBase | None, TensorBase | None]:
        a, b = self.inputs
        need_a, need_b = self.needs_input_grad
        return (g * b if need_a else None), (g * a if need_b else None)


@gradient
class Div(Function):
    """``a / b``, broadcast."""

    name = "div"
    save_inputs = True

    def forward(self, a: NDArray, b: NDArray) -> NDArray:
        return a / b

    def backward(self, g: TensorBase) -> tuple[TensorBase, TensorBase | None]:
        a, b = self.inputs
        ga = g / b
        return ga, (-ga * a / b if self.needs_input_grad[1] else None)


@gradient
class Pow(Function):
    """``a ** b`` with a tensor exponent."""

    name = "pow"
    save_inputs = True

    def forward(self, a: NDArray, b: NDArray) -> NDArray:
        return a**b

    def backward(self, g: TensorBase) -> tuple[TensorBase | None, TensorBase | None]:
        a, b = self.inputs
        need_a, need_b = self.needs_input_grad
        ga = g * b * a ** (b - 1) if need_a else None
        gb = None
        if need_b:
            # d(a**b)/db = a**b * log(a); PyTorch defines it as 0 where a == 0 <= b.
            gb = where((a == 0) * (b >= 0), 0.0, g * a**b * a.log())
        return ga, gb


class PowScalar(Function):
    """``a ** exponent`` with a Python number exponent."""

    name = "pow_scalar"
    save_inputs = True

    def forward(self, a: NDArray, exponent: float) -> NDArray:
        self.exponent = exponent
        return a**exponent

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        (a,) = self.inputs
        if self.exponent == 0:
            return (g * 0.0,)
        return (g * self.exponent * a ** (self.exponent - 1),)


class AddScalar(Function):
    """``a + value`` for a Python number (``a - value`` is ``a + (-value)``, exactly)."""

    name = "add_scalar"

    def forward(self, a: NDArray, value: float) -> NDArray:
        return a + value

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        return (g,)


class MulScalar(Function):
    """``a * value`` for a Python number: no broadcast operand, no gradient to reduce."""

    name = "mul_scalar"

    def forward(self, a: NDArray, value: float) -> NDArray:
        self.value = value
        return a * value

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        return (g * self.value,)


class DivScalar(Function):
    """``a / value`` for a Python number (a division, not a multiply by 1/value)."""

    name = "div_scalar"

    def forward(self, a: NDArray, value: float) -> NDArray:
        self.value = value
        return a / value

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        return (g / self.value,)


class RSubScalar(Function):
    """``value - a`` for a Python number."""

    name = "rsub_scalar"

    def forward(self, a: NDArray, value: float) -> NDArray:
        return value - a

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        return (-g,)


class RDivScalar(Function):
    """``value / a`` for a Python number."""

    name = "rdiv_scalar"
    save_inputs = True
    save_output = True

    def forward(self, a: NDArray, value: float) -> NDArray:
        return value / a

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        (a,) = self.inputs
        return (-(g * self.output) / a,)


@gradient
class Neg(Function):
    """``-x``."""

    name = "neg"

    def forward(self, a: NDArray) -> NDArray:
        return -a

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        return (-g,)


@gradient
class Exp(Function):
    """``e ** x``, elementwise."""

    name = "exp"
    save_output = True

    def forward(self, a: NDArray) -> NDArray:
        return a.exp()

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        return (g * self.output,)


@gradient
class Log(Function):
    """Natural logarithm, elementwise."""

    name = "log"
    save_inputs = True

    def forward(self, a: NDArray) -> NDArray:
        return a.log()

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        return (g / self.inputs[0],)


@gradient
class Sqrt(Function):
    """Square root, elementwise."""

    name = "sqrt"
    save_output = True

    def forward(self, a: NDArray) -> NDArray:
        return a.sqrt()

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        return (g / (self.output * 2),)


@gradient
class Tanh(Function):
    """Hyperbolic tangent, elementwise."""

    name = "tanh"
    save_output = True

    def forward(self, a: NDArray) -> NDArray:
        return a.tanh()

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        out = self.output
        return (g * (1 - out * out),)


@gradient
class Sin(Function):
    """Sine, elementwise."""

    name = "sin"
    save_inputs = True

    def forward(self, a: NDArray) -> NDArray:
        return a.sin()

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        return (g * self.inputs[0].cos(),)


@gradient
class Cos(Function):
    """Cosine, elementwise."""

    name = "cos"
    save_inputs = True

    def forward(self, a: NDArray) -> NDArray:
        return a.cos()

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        return (-g * self.inputs[0].sin(),)


@gradient
class Abs(Function):
    """Absolute value; its gradient at 0 is 0 (as PyTorch)."""

    name = "abs"
    save_inputs = True

    def forward(self, a: NDArray) -> NDArray:
        return a.abs()

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        return (g * self.inputs[0].sign(),)


class Relu(Function):
    name = "relu"
    save_inputs = True

    def forward(self, a: NDArray) -> NDArray:
        return a.maximum(0)

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        # PyTorch's threshold rule: 0 where x <= 0, g elsewhere, so a NaN input passes g
        x = self.inputs[0]
        if grad_mode._state.enabled:  # create_graph: recorded
            return (where(x <= 0, 0.0, g),)
        return (make(nd.relu_backward(x._data, g._data)),)  # one kernel where the device has it


@gradient
class Erf(Function):
    """The error function: ``NDArray.erf`` forward, the exact derivative backward.

    The forward is exact on backends with the optional ``ewise_erf`` kernel
    and otherwise the Abramowitz & Stegun 7.1.26 approximation (absolute
    error below 1.5e-7: float32 round-off, but not float64 precision). The
    backward is ``2 / sqrt(pi) * exp(-x**2)``.
    """

    name = "erf"
    save_inputs = True

    def forward(self, a: NDArray) -> NDArray:
        return a.erf()

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        (a,) = self.inputs
        return (g * (2 / math.sqrt(math.pi)) * (-(a * a)).exp(),)


class Gelu(Function):
    """``x * Phi(x)`` as one node (a Transformer's MLP calls it on its widest activation).

    Exact form ``x/2 * (1 + erf(x / sqrt 2))``, whose derivative is
    ``Phi(x) + x * phi(x)``; or the tanh form ``x/2 * (1 + tanh(u))``,
    ``u = sqrt(2/pi) * (x + 0.044715 x^3)``, whose derivative is
    ``(1 + tanh(u))/2 + x/2 * (1 - tanh(u)^2) * du/dx``. The one rule,
    ``gelu_slope`` of lamina.ndarray, runs on NDArrays for a first-order backward (in one
    ``ewise_program`` pass where the device has it: ``nd.gelu_backward``) and on
    Tensors with ``create_graph``, where it records and can be differentiated again.
    """

    name = "gelu"
    save_inputs = True

    def forward(self, a: NDArray, approximate: str) -> NDArray:
        self.approximate = approximate
        return nd.gelu(a, approximate)  # one buffer, its steps in place

    def backward(self, g: TensorBase) -> tuple[TensorBase]:
        (x,) = self.inputs
        if grad_mode._state.enabled:  # create_graph: the rule on Tensors, recorded
            return (g * gelu_slope(x, self.approximate),)
        return (make(nd.gelu_backward(x._data, g._data, self.approximate)),)


@gradient
class Maximum(Function):
    """Elementwise maximum; at ties the gradient is split evenly (as PyTorch)."""

    name = "maximum"
    save_inputs = True

    def forward(self, a: NDArray, b: NDArray) -> NDArray:
        return a.maximum(b)

    def backward(self, g: TensorBase) -> tuple[TensorBase, TensorBase]:
        a, b = self.inputs
        share = (a > b) + (a == b) * 0.5
        return g * share, g * (1 - share)


@gradient
class Minimum(Function):
    """Elementwise minimum; at ties the gradient is split evenly (as PyTorch)."""

    name = "minimum"
    save_inputs = True

    def forward(self, a: NDArray, b: NDArray) -> NDArray:
        return a.minimum(b)

    def backward(self, g: TensorBase) -> tuple[TensorBase, TensorBase]:
        a, b = self.inputs
        share = (a < b) + (a == b) * 0.5
        return g * share, g * (1 - share)


class Where(Function):
    """``a`` where ``cond`` is nonzero, else ``b``; ``cond`` gets no gradient."""

    name = "where"
    save_inputs = True

    def forward(self, cond: NDArray, a: NDArray, b: NDArray) -> NDArray:
        return nd.where(cond, a, b)

    def backward(self, g: TensorBase) -> tuple[None, TensorBase | None, TensorBase | None]:
        cond = self.inputs[0]
        need = self.needs_input_grad
        if grad_mode._state.enabled:  # create_graph: recorded
            return (None, where(cond, g, 0.0) if need[1] else None,
                    where(cond, 0.0, g) if need[2] else None)
        c, gd = cond._data, g._data
        return (None, make(nd.where(c, gd, 0.0)) if need[1] else None,
                make(nd.where(c, 0.0, gd)) if need[2] else None)


@gradient
class Remainder(Function):
    """``a % b`` with the sign of ``b`` (as Python and PyTorch); d/da = 1 and
    d/db = -floor(a / b), as PyTorch's."""

    name = "remainder"
    save_inputs = True

    def forward(self, a: NDArray, b: NDArray) -> NDArray:
        return a % b

    def backward(self, g: TensorBase) -> tuple[TensorBase, TensorBase]:
        a, b = self.inputs
        return g, -(g * (a // b))


# Public functions of the op table's ops with scalar fast paths; the table
# (lamina.autograd._ops.table) makes the other ops' functions. Each takes
# Tensors or Python numbers.

# A Tensor with a Python number takes the *_scalar ops: the number goes to the
# backend's scalar kernel instead of becoming a 0-d tensor that is broadcast
# (allocated, filled and expanded to the full shape) for every use.
_NUMBER = (int, float)


@public
def add(a: Any, b: Any) -> Any:
    """``a + b``, broadcast. Shapes: ``(*A)``, ``(*B)`` -> ``broadcast(A, B)``."""
    if isinstance(a, TensorBase) and isinstance(b, _NUMBER):
        return AddScalar.apply(a, value=b)
    if isinstance(b, TensorBase) and isinstance(a, _NUMBER):
        return AddScalar.apply(b, value=a)
    if isinstance(b, TensorBase) and isinstance(a, TensorBase):  # common: no operands()
        return Add.apply(a, b)
    return Add.apply(*operands(a, b, "add"))


@public
def sub(a: Any, b: Any) -> Any:
    """``a - b``, broadcast."""
    if isinstance(a, TensorBase) and isinstance(b, _NUMBER):
        if isinstance(b, bool) or a.dtype.name == "bool":  # as ndarray's sub; -b would pass
            raise nd.DTypeError(f"sub: {OPS['sub'].bool_error}")
        return AddScalar.apply(a, value=-b)
    if isinstance(b, TensorBase) and isinstance(a, _NUMBER):
        return RSubScalar.apply(b, value=a)
    if isinstance(b, TensorBase) and isinstance(a, TensorBase):  # common: no operands()
        return Sub.apply(a, b)
    return Sub.apply(*operands(a, b, "sub"))


@public
def mul(a: Any, b: Any) -> Any:
    """``a * b``, broadcast."""
    if isinstance(a, TensorBase) and isinstance(b, _NUMBER):
        return MulScalar.apply(a, value=b)
    if isinstance(b, TensorBase) and isinstance(a, _NUMBER):
        return MulScalar.apply(b, value=a)
    if isinstance(b, TensorBase) and isinstance(a, TensorBase):  # common: no operands()
        return Mul.apply(a, b)
    return Mul.apply(*operands(a, b, "mul"))


@public
def div(a: Any, b: Any) -> Any:
    """``a / b``, broadcast."""
    if isinstance(a, TensorBase) and isinstance(b, _NUMBER):
        return DivScalar.apply(a, value=b)
    if isinstance(b, TensorBase) and isinstance(a, _NUMBER):
        return RDivScalar.apply(b, value=a)
    if isinstance(b, TensorBase) and isinstance(a, TensorBase):  # common: no operands()
        return Div.apply(a, b)
    return Div.apply(*operands(a, b, "div"))


@public
def pow(a: Any, exponent: Any) -> Any:  # noqa: A001 (PyTorch's name)
    """``a ** exponent``; the exponent is a Tensor or a number, ``a`` may be a number."""
    if isinstance(a, TensorBase) and isinstance(exponent, (int, float)):
        return PowScalar.apply(a, exponent=exponent)
    if isinstance(exponent, TensorBase) and isinstance(a, (int, float)):
        # c ** x = exp(x * log c), differentiable in x; an int c with an int or bool x
        # stays integral (as PyTorch), so it takes the power kernel.
        if a > 0 and (isinstance(a, float) or exponent.dtype.is_floating):
            return Exp.apply(exponent * math.log(a))
        return Pow.apply(*operands(a, exponent, "pow"))
    return Pow.apply(*operands(a, exponent, "pow"))


def relu(x: Tensor) -> Tensor:
    """``max(x, 0)``; its gradient at 0 is 0, at NaN 1 (as PyTorch's). Not for bool."""
    if x.dtype == nd.bool_:
        raise nd.DTypeError("relu: bool inputs are not supported (as in PyTorch); convert "
                            "with .long() or .float()")
    return Relu.apply(x)


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit, ``x * Phi(x)``, as ``torch.nn.functional.gelu``; one node.

    Args:
        x: input of any shape.
        approximate: ``"none"`` for the exact form ``x/2 * (1 + erf(x/sqrt 2))``
            (erf's forward is accurate to 1.5e-7), or ``"tanh"`` for
            ``x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x**3)))``.
    """
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return Gelu.apply(x, approximate=approximate)


def where(cond: Tensor, a: Any, b: Any) -> Tensor:
    """``a`` where ``cond`` is nonzero, else ``b``; all three broadcast.

    Args:
        cond: a Tensor of any dtype, nonzero meaning true.
        a: Tensor or number taken where ``cond`` holds.
        b: Tensor or number taken elsewhere.
    """
    like = a if isinstance(a, TensorBase) else b if isinstance(b, TensorBase) else None
    if like is None:
        like = make(nd.zeros((), device=cond._data.device))
    return Where.apply(cond, lift(a, like), lift(b, like))


# Composite ops: built from the primitives above, no backward code of their own.

def sigmoid(x: Tensor) -> Tensor:
    """``1 / (1 + exp(-x))``, computed as ``(1 + tanh(x / 2)) / 2``.

    The tanh form never overflows, so its gradient stays finite for large |x|.
    """
    return (Tanh.apply(x * 0.5) + 1) * 0.5


def gelu_reference(x: Tensor, approximate: str = "none") -> Tensor:
    """GELU from composite ops (differentiable to any order); see :func:`gelu`."""
    if approximate == "tanh":
        inner = (x + x * x * x * 0.044715) * math.sqrt(2 / math.pi)
        return x * 0.5 * (Tanh.apply(inner) + 1)
    if approximate != "none":
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return x * 0.5 * (Erf.apply(x * (1 / math.sqrt(2))) + 1)


def clamp(x: Tensor, min: float | None = None, max: float | None = None) -> Tensor:  # noqa: A002
    """Limits ``x`` to ``[min, max]``, as ``torch.clamp``.

    ``min(max(x, min), max)`` (so ``max`` wins when ``min > max``); a NaN in
    ``x`` or a NaN bound gives NaN. The gradient is 1 where ``min <= x <= max``
    (bounds included) and 0 elsewhere, NaN inputs and NaN bounds included.
    """
    if min is None and max is None:
        raise ValueError("clamp: at least one of min and max must be given")
    if min is not None:
        x = _clamp_side(x, min, x >= min, x < min)
    if max is not None:  # tested on the clamped x: when min > max, max wins
        x = _clamp_side(x, max, x <= max, x > max)
    return x


def _clamp_side(x: Tensor, bound: float, keep: Tensor, beyond: Tensor) -> Tensor:
    """``x`` where ``keep``; elsewhere ``bound`` where ``beyond``, else (a NaN in ``x`` or
    a NaN bound) NaN. Only the kept elements get a gradient, as in PyTorch."""
    if bound != bound:
        return where(keep, x, bound)  # keep is all false: NaN everywhere
    return where(keep, x, where(beyond, bound, x.detach()))


def dropout(x: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Zeroes each element with probability ``p`` and scales the rest by ``1/(1-p)``.

    The mask is drawn from ``lamina.ndarray``'s generator (``manual_seed``).
    """
    if not 0 <= p <= 1:
        raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    if not training or p == 0:
        return x
    if p == 1:
        return x * 0.0
    keep = nd.rand(x.shape, dtype=x._data.dtype, device=x._data.device) >= p
    return x * make(keep * (1 / (1 - p)))


# The Functions of no op table op (the table's own are listed by _ops.table.PRIMITIVES).
PRIMITIVES = (AddScalar, MulScalar, DivScalar, RSubScalar, RDivScalar, PowScalar, Relu, Gelu,
              Where)
COMPOSITES = (sigmoid, gelu_reference, clamp, dropout)
