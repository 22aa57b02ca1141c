"""Elementwise ops: arithmetic, math functions, activations, comparisons, where.

Binary ops broadcast like numpy. Their rules return gradients with the
broadcast shape; the engine sums them back to each input's shape.
"""

from __future__ import annotations

import math
from typing import Any

import lamina.ndarray as nd
from lamina.ndarray import NDArray

from .. import _grad_mode as grad_mode
from .._function import Function
from .._tensor import Tensor
from ._util import lift, operands


class Add(Function):
    name = "add"

    def forward(self, a: NDArray, b: NDArray) -> NDArray:
        return a + b

    def backward(self, g: Tensor) -> tuple[Tensor, Tensor]:
        return g, g


class Sub(Function):
    name = "sub"

    def forward(self, a: NDArray, b: NDArray) -> NDArray:
        return a - b

    def backward(self, g: Tensor) -> tuple[Tensor, Tensor]:
        return g, -g


class Mul(Function):
    name = "mul"
    save_inputs = True

    def forward(self, a: NDArray, b: NDArray) -> NDArray:
        return a * b

    def backward(self, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
        a, b = self.inputs
        need_a, need_b = self.needs_input_grad
        return (g * b if need_a else None), (g * a if need_b else None)


class Div(Function):
    name = "div"
    save_inputs = True

    def forward(self, a: NDArray, b: NDArray) -> NDArray:
        return a / b

    def backward(self, g: Tensor) -> tuple[Tensor, Tensor | None]:
        a, b = self.inputs
        ga = g / b
        return ga, (-ga * a / b if self.needs_input_grad[1] else None)


class Pow(Function):
    """``a ** b`` with a tensor exponent."""

    name = "pow"
    save_inputs = True

    def forward(self, a: NDArray, b: NDArray) -> NDArray:
        return a**b

    def backward(self, g: Tensor) -> tuple[Tensor | None, Tensor | None]:
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

    def backward(self, g: Tensor) -> tuple[Tensor]:
        (a,) = self.inputs
        if self.exponent == 0:
            return (g * 0.0,)
        return (g * self.exponent * a ** (self.exponent - 1),)


class AddScalar(Function):
    """``a + value`` for a Python number (``a - value`` is ``a + (-value)``, exactly)."""

    name = "add_scalar"

    def forward(self, a: NDArray, value: float) -> NDArray:
        return a + value

    def backward(self, g: Tensor) -> tuple[Tensor]:
        return (g,)


class MulScalar(Function):
    """``a * value`` for a Python number: no broadcast operand, no gradient to reduce."""

    name = "mul_scalar"

    def forward(self, a: NDArray, value: float) -> NDArray:
        self.value = value
        return a * value

    def backward(self, g: Tensor) -> tuple[Tensor]:
        return (g * self.value,)


class DivScalar(Function):
    """``a / value`` for a Python number (a division, not a multiply by 1/value)."""

    name = "div_scalar"

    def forward(self, a: NDArray, value: float) -> NDArray:
        self.value = value
        return a / value

    def backward(self, g: Tensor) -> tuple[Tensor]:
        return (g / self.value,)


class RSubScalar(Function):
    """``value - a`` for a Python number."""

    name = "rsub_scalar"

    def forward(self, a: NDArray, value: float) -> NDArray:
        return value - a

    def backward(self, g: Tensor) -> tuple[Tensor]:
        return (-g,)


class RDivScalar(Function):
    """``value / a`` for a Python number."""

    name = "rdiv_scalar"
    save_inputs = True
    save_output = True

    def forward(self, a: NDArray, value: float) -> NDArray:
        return value / a

    def backward(self, g: Tensor) -> tuple[Tensor]:
        (a,) = self.inputs
        return (-(g * self.output) / a,)


class Neg(Function):
    name = "neg"

    def forward(self, a: NDArray) -> NDArray:
        return -a

    def backward(self, g: Tensor) -> tuple[Tensor]:
        return (-g,)


class Exp(Function):
    name = "exp"
    save_output = True

    def forward(self, a: NDArray) -> NDArray:
        return a.exp()

    def backward(self, g: Tensor) -> tuple[Tensor]:
        return (g * self.output,)


class Log(Function):
    name = "log"
    save_inputs = True

    def forward(self, a: NDArray) -> NDArray:
        return a.log()

    def backward(self, g: Tensor) -> tuple[Tensor]:
        return (g / self.inputs[0],)


class Sqrt(Function):
    name = "sqrt"
    save_output = True

    def forward(self, a: NDArray) -> NDArray:
        return a.sqrt()

    def backward(self, g: Tensor) -> tuple[Tensor]:
        return (g / (self.output * 2),)


class Tanh(Function):
    name = "tanh"
    save_output = True

    def forward(self, a: NDArray) -> NDArray:
        return a.tanh()

    def backward(self, g: Tensor) -> tuple[Tensor]:
        out = self.output
        return (g * (1 - out * out),)


class Sin(Function):
    name = "sin"
    save_inputs = True

    def forward(self, a: NDArray) -> NDArray:
        return a.sin()

    def backward(self, g: Tensor) -> tuple[Tensor]:
        return (g * self.inputs[0].cos(),)


class Cos(Function):
    name = "cos"
    save_inputs = True

    def forward(self, a: NDArray) -> NDArray:
        return a.cos()

    def backward(self, g: Tensor) -> tuple[Tensor]:
        return (-g * self.inputs[0].sin(),)


class Abs(Function):
    name = "abs"
    save_inputs = True

    def forward(self, a: NDArray) -> NDArray:
        return a.abs()

    def backward(self, g: Tensor) -> tuple[Tensor]:
        return (g * self.inputs[0].sign(),)


class Relu(Function):
    name = "relu"
    save_inputs = True

    def forward(self, a: NDArray) -> NDArray:
        return a.maximum(0)

    def backward(self, g: Tensor) -> tuple[Tensor]:
        # PyTorch's threshold rule: 0 where x <= 0, g elsewhere, so a NaN input passes g
        return (where(self.inputs[0] <= 0, 0.0, g),)


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

    def backward(self, g: Tensor) -> tuple[Tensor]:
        (a,) = self.inputs
        return (g * (2 / math.sqrt(math.pi)) * (-(a * a)).exp(),)


class Gelu(Function):
    """``x * Phi(x)`` as one node (a Transformer's MLP calls it on its widest activation).

    Exact form ``x/2 * (1 + erf(x / sqrt 2))``, whose derivative is
    ``Phi(x) + x * phi(x)``; or the tanh form ``x/2 * (1 + tanh(u))``,
    ``u = sqrt(2/pi) * (x + 0.044715 x^3)``, whose derivative is
    ``(1 + tanh(u))/2 + x/2 * (1 - tanh(u)^2) * du/dx``. With ``create_graph``
    the backward differentiates :func:`gelu_reference` instead, so higher-order
    gradients are exact.
    """

    name = "gelu"
    save_inputs = True

    def forward(self, a: NDArray, approximate: str) -> NDArray:
        self.approximate = approximate
        return nd.gelu(a, approximate)  # one buffer, its steps in place

    def backward(self, g: Tensor) -> tuple[Tensor | None, ...]:
        if grad_mode.is_grad_enabled():
            (x,) = self.inputs
            from .._engine import grad  # (create_graph only)
            return grad(gelu_reference(x, self.approximate), x, g, create_graph=True)
        a = self.inputs[0].data
        if self.approximate == "tanh":
            t = ((a + a * a * a * 0.044715) * _SQRT_2_OVER_PI).tanh()
            du = (a * a * (3 * 0.044715) + 1) * _SQRT_2_OVER_PI
            slope = (t + 1) * 0.5 + a * 0.5 * (1 - t * t) * du
        else:
            pdf = (a * a * -0.5).exp() * _INV_SQRT_2PI
            slope = ((a * _SQRT_HALF).erf() + 1) * 0.5 + a * pdf
        return (Tensor._make(g.data * slope),)


_SQRT_HALF = 1 / math.sqrt(2)
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)


class Maximum(Function):
    """Elementwise maximum; at ties the gradient is split evenly (as PyTorch)."""

    name = "maximum"
    save_inputs = True

    def forward(self, a: NDArray, b: NDArray) -> NDArray:
        return a.maximum(b)

    def backward(self, g: Tensor) -> tuple[Tensor, Tensor]:
        a, b = self.inputs
        share = (a > b) + (a == b) * 0.5
        return g * share, g * (1 - share)


class Minimum(Function):
    """Elementwise minimum; at ties the gradient is split evenly (as PyTorch)."""

    name = "minimum"
    save_inputs = True

    def forward(self, a: NDArray, b: NDArray) -> NDArray:
        return a.minimum(b)

    def backward(self, g: Tensor) -> tuple[Tensor, Tensor]:
        a, b = self.inputs
        share = (a < b) + (a == b) * 0.5
        return g * share, g * (1 - share)


class Where(Function):
    """``a`` where ``cond`` is nonzero, else ``b``; ``cond`` gets no gradient."""

    name = "where"
    save_inputs = True

    def forward(self, cond: NDArray, a: NDArray, b: NDArray) -> NDArray:
        return nd.where(cond, a, b)

    def backward(self, g: Tensor) -> tuple[None, Tensor, Tensor]:
        cond = self.inputs[0]
        return None, where(cond, g, 0.0), where(cond, 0.0, g)


class Remainder(Function):
    """``a % b`` with the sign of ``b`` (as Python and PyTorch); d/da = 1 and
    d/db = -floor(a / b), as PyTorch's."""

    name = "remainder"
    save_inputs = True

    def forward(self, a: NDArray, b: NDArray) -> NDArray:
        return a % b

    def backward(self, g: Tensor) -> tuple[Tensor, Tensor]:
        a, b = self.inputs
        return g, -(g * floor_divide(a, b))


def _non_differentiable(op_name: str, kernel: Any) -> type[Function]:
    """A Function whose output never requires grad (comparisons, sign)."""

    class Op(Function):
        name = op_name
        differentiable = False

        def forward(self, *arrays: NDArray) -> NDArray:
            return kernel(*arrays)

    Op.__name__ = Op.__qualname__ = op_name.capitalize()
    return Op


Sign = _non_differentiable("sign", NDArray.sign)  # derivative 0 almost everywhere
FloorDivide = _non_differentiable("floor_divide", NDArray.__floordiv__)  # as sign
Eq = _non_differentiable("eq", NDArray.__eq__)
Ne = _non_differentiable("ne", NDArray.__ne__)
Lt = _non_differentiable("lt", NDArray.__lt__)
Le = _non_differentiable("le", NDArray.__le__)
Gt = _non_differentiable("gt", NDArray.__gt__)
Ge = _non_differentiable("ge", NDArray.__ge__)
# integer and bool operands only (a float raises DTypeError), never differentiable
BitwiseAnd = _non_differentiable("bitwise_and", NDArray.__and__)
BitwiseOr = _non_differentiable("bitwise_or", NDArray.__or__)
BitwiseXor = _non_differentiable("bitwise_xor", NDArray.__xor__)
BitwiseNot = _non_differentiable("bitwise_not", NDArray.__invert__)


# Public functions of the primitives. Each takes Tensors or Python numbers.

# A Tensor with a Python number takes the *_scalar ops: the number goes to the
# backend's scalar kernel instead of becoming a 0-d tensor that is broadcast
# (allocated, filled and expanded to the full shape) for every use.
_NUMBER = (int, float)


def add(a: Any, b: Any) -> Tensor:
    """``a + b``, broadcast. Shapes: ``(*A)``, ``(*B)`` -> ``broadcast(A, B)``."""
    if isinstance(a, Tensor) and isinstance(b, _NUMBER):
        return AddScalar.apply(a, value=b)
    if isinstance(b, Tensor) and isinstance(a, _NUMBER):
        return AddScalar.apply(b, value=a)
    if isinstance(b, Tensor) and isinstance(a, Tensor):  # the common case, without operands()
        return Add.apply(a, b)
    return Add.apply(*operands(a, b, "add"))


def sub(a: Any, b: Any) -> Tensor:
    """``a - b``, broadcast."""
    if isinstance(a, Tensor) and isinstance(b, _NUMBER):
        if isinstance(b, bool) or a.dtype.name == "bool":  # as ndarray's sub; -b would pass
            raise nd.DTypeError("sub: subtraction with a bool operand is not supported; use ^ "
                                "(bitwise_xor) or logical_xor instead")
        return AddScalar.apply(a, value=-b)
    if isinstance(b, Tensor) and isinstance(a, _NUMBER):
        return RSubScalar.apply(b, value=a)
    if isinstance(b, Tensor) and isinstance(a, Tensor):  # the common case, without operands()
        return Sub.apply(a, b)
    return Sub.apply(*operands(a, b, "sub"))


def mul(a: Any, b: Any) -> Tensor:
    """``a * b``, broadcast."""
    if isinstance(a, Tensor) and isinstance(b, _NUMBER):
        return MulScalar.apply(a, value=b)
    if isinstance(b, Tensor) and isinstance(a, _NUMBER):
        return MulScalar.apply(b, value=a)
    if isinstance(b, Tensor) and isinstance(a, Tensor):  # the common case, without operands()
        return Mul.apply(a, b)
    return Mul.apply(*operands(a, b, "mul"))


def div(a: Any, b: Any) -> Tensor:
    """``a / b``, broadcast."""
    if isinstance(a, Tensor) and isinstance(b, _NUMBER):
        return DivScalar.apply(a, value=b)
    if isinstance(b, Tensor) and isinstance(a, _NUMBER):
        return RDivScalar.apply(b, value=a)
    if isinstance(b, Tensor) and isinstance(a, Tensor):  # the common case, without operands()
        return Div.apply(a, b)
    return Div.apply(*operands(a, b, "div"))


def pow(a: Any, exponent: Any) -> Tensor:  # noqa: A001 (PyTorch's name)
    """``a ** exponent``; the exponent is a Tensor or a number, ``a`` may be a number."""
    if isinstance(a, Tensor) and isinstance(exponent, (int, float)):
        return PowScalar.apply(a, exponent=exponent)
    if isinstance(exponent, Tensor) and isinstance(a, (int, float)):
        # c ** x = exp(x * log c), differentiable in x; an int c with an int or bool x
        # stays integral (as PyTorch), so it takes the power kernel.
        if a > 0 and (isinstance(a, float) or exponent.dtype.is_floating):
            return exp(exponent * math.log(a))
        return Pow.apply(*operands(a, exponent, "pow"))
    return Pow.apply(*operands(a, exponent, "pow"))


def neg(x: Tensor) -> Tensor:
    """``-x``."""
    return Neg.apply(x)


def exp(x: Tensor) -> Tensor:
    """``e ** x``, elementwise."""
    return Exp.apply(x)


def log(x: Tensor) -> Tensor:
    """Natural logarithm, elementwise."""
    return Log.apply(x)


def sqrt(x: Tensor) -> Tensor:
    """Square root, elementwise."""
    return Sqrt.apply(x)


def tanh(x: Tensor) -> Tensor:
    """Hyperbolic tangent, elementwise."""
    return Tanh.apply(x)


def sin(x: Tensor) -> Tensor:
    """Sine, elementwise."""
    return Sin.apply(x)


def cos(x: Tensor) -> Tensor:
    """Cosine, elementwise."""
    return Cos.apply(x)


def abs(x: Tensor) -> Tensor:  # noqa: A001
    """Absolute value; its gradient at 0 is 0 (as PyTorch)."""
    return Abs.apply(x)


def sign(x: Tensor) -> Tensor:
    """-1, 0 or 1 by the sign of each element; not differentiable."""
    return Sign.apply(x)


def relu(x: Tensor) -> Tensor:
    """``max(x, 0)``; its gradient at 0 is 0, at NaN 1 (as PyTorch's). Not for bool."""
    if x.dtype == nd.bool_:
        raise nd.DTypeError("relu: bool inputs are not supported (as in PyTorch); convert "
                            "with .long() or .float()")
    return Relu.apply(x)


def erf(x: Tensor) -> Tensor:
    """The error function (forward accurate to 1.5e-7, see ``Erf``)."""
    return Erf.apply(x)


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


def maximum(a: Any, b: Any) -> Tensor:
    """Elementwise maximum, broadcast."""
    return Maximum.apply(*operands(a, b, "maximum"))


def minimum(a: Any, b: Any) -> Tensor:
    """Elementwise minimum, broadcast."""
    return Minimum.apply(*operands(a, b, "minimum"))


def floor_divide(a: Any, b: Any) -> Tensor:
    """``a // b``, rounded toward minus infinity (as PyTorch), broadcast; not
    differentiable (its derivative is 0 almost everywhere, as ``sign``'s)."""
    return FloorDivide.apply(*operands(a, b, "floor_divide"))


def remainder(a: Any, b: Any) -> Tensor:
    """``a % b`` with the sign of ``b`` (as PyTorch), broadcast."""
    return Remainder.apply(*operands(a, b, "remainder"))


def where(cond: Tensor, a: Any, b: Any) -> Tensor:
    """``a`` where ``cond`` is nonzero, else ``b``; all three broadcast.

    Args:
        cond: a Tensor of any dtype, nonzero meaning true.
        a: Tensor or number taken where ``cond`` holds.
        b: Tensor or number taken elsewhere.
    """
    like = a if isinstance(a, Tensor) else b if isinstance(b, Tensor) else None
    if like is None:
        like = Tensor._make(nd.zeros((), device=cond.data.device))
    return Where.apply(cond, lift(a, like), lift(b, like))


def eq(a: Any, b: Any) -> Tensor:
    """``a == b`` as bool (1/0 in the operands' dtype on a device without bool);
    not differentiable."""
    return Eq.apply(*operands(a, b, "eq"))


def ne(a: Any, b: Any) -> Tensor:
    """``a != b`` as bool; not differentiable."""
    return Ne.apply(*operands(a, b, "ne"))


def lt(a: Any, b: Any) -> Tensor:
    """``a < b`` as bool; not differentiable."""
    return Lt.apply(*operands(a, b, "lt"))


def le(a: Any, b: Any) -> Tensor:
    """``a <= b`` as bool; not differentiable."""
    return Le.apply(*operands(a, b, "le"))


def gt(a: Any, b: Any) -> Tensor:
    """``a > b`` as bool; not differentiable."""
    return Gt.apply(*operands(a, b, "gt"))


def ge(a: Any, b: Any) -> Tensor:
    """``a >= b`` as bool; not differentiable."""
    return Ge.apply(*operands(a, b, "ge"))


def bitwise_and(a: Any, b: Any) -> Tensor:
    """``a & b`` of integer or bool tensors (logical and on bool)."""
    return BitwiseAnd.apply(*operands(a, b, "bitwise_and"))


def bitwise_or(a: Any, b: Any) -> Tensor:
    """``a | b`` of integer or bool tensors (logical or on bool)."""
    return BitwiseOr.apply(*operands(a, b, "bitwise_or"))


def bitwise_xor(a: Any, b: Any) -> Tensor:
    """``a ^ b`` of integer or bool tensors."""
    return BitwiseXor.apply(*operands(a, b, "bitwise_xor"))


def bitwise_not(x: Tensor) -> Tensor:
    """``~x`` of an integer or bool tensor (logical not on bool)."""
    return BitwiseNot.apply(x)


# Composite ops: built from the primitives above, no backward code of their own.

def sigmoid(x: Tensor) -> Tensor:
    """``1 / (1 + exp(-x))``, computed as ``(1 + tanh(x / 2)) / 2``.

    The tanh form never overflows, so its gradient stays finite for large |x|.
    """
    return (tanh(x * 0.5) + 1) * 0.5


def gelu_reference(x: Tensor, approximate: str = "none") -> Tensor:
    """GELU from composite ops (differentiable to any order); see :func:`gelu`."""
    if approximate == "tanh":
        inner = (x + x * x * x * 0.044715) * math.sqrt(2 / math.pi)
        return x * 0.5 * (tanh(inner) + 1)
    if approximate != "none":
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return x * 0.5 * (erf(x * (1 / math.sqrt(2))) + 1)


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
    keep = nd.rand(x.shape, dtype=x.data.dtype, device=x.data.device) >= p
    return x * Tensor._make(keep * (1 / (1 - p)))


PRIMITIVES = (Add, Sub, Mul, Div, AddScalar, MulScalar, DivScalar, RSubScalar, RDivScalar,
              Pow, PowScalar, Neg, Exp, Log, Sqrt, Tanh, Sin, Cos, Abs,
              Relu, Erf, Gelu, Maximum, Minimum, Where, Sign, Eq, Ne, Lt, Le, Gt, Ge,
              FloorDivide, Remainder,
              BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot)
COMPOSITES = (sigmoid, gelu_reference, clamp, dropout)
