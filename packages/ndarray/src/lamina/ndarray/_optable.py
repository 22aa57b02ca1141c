"""The op table: every elementwise op of the stack, declared once.

An :class:`Op` says all that the layers need to know of one op: how many
operands it takes, which dtypes its kernels accept, how the result dtype
follows from the operands', which kernel forms exist (``ewise_NAME``,
``scalar_NAME``, ``scalar_rNAME``, ``ewise_strided_NAME``), the Python
operator it backs, the interface version that added it, and its numpy
reference (the executable specification every backend is checked against).

What derives from :data:`OPS` instead of naming ops again:

- the backend interface's op lists and kernel names (``_interface``);
- the numpy reference backend's kernels and ``kernel_dtypes``;
- NDArray's operators and methods, and the dtype rules of ``_compute``;
- the conformance kit's cases and operand domains;
- lamina.autograd's functions, Tensor operators and methods, and in-place
  forms (``lamina.autograd._ops.table``), where each op adds its gradient.

Adding an elementwise op is one entry here, its gradient rule in autograd,
and one kernel per compiled backend (``docs/guides/design.md`` walks
through it).

Example:
    >>> from lamina.ndarray._optable import OPS
    >>> OPS["remainder"].dtypes, OPS["remainder"].operator
    ('numbers', 'mod')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

DTYPE_SETS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "all": ("float32", "float64", "int64", "bool"),
    "numbers": ("float32", "float64", "int64"),
    "floats": ("float32", "float64"),
    "integral": ("int64", "bool"),
})
"""The dtype sets an op's kernels may accept, by the name :attr:`Op.dtypes` uses."""


@dataclass(frozen=True, slots=True)
class Op:
    """One elementwise op.

    Attributes:
        name: the op's name; its kernels are ``ewise_NAME`` and, where it has
            them, ``scalar_NAME``, ``scalar_rNAME`` and ``ewise_strided_NAME``.
        arity: 1 (``ewise_NAME(a, out)``) or 2 (``ewise_NAME(a, b, out)``).
        reference: the numpy ufunc that defines the result.
        dtypes: the dtypes its kernels accept (a key of :data:`DTYPE_SETS`).
        result: ``"same"`` (the operands' dtype), ``"bool"`` (a comparison) or
            ``"float"`` (integer operands are computed in the default float
            dtype, as PyTorch's true division and float functions).
        scalar: a binary op with a ``scalar_NAME(a, value, out)`` kernel; without
            one, a Python scalar operand becomes a 0-d array.
        reversed: has ``scalar_rNAME(a, value, out)``, ``out = value OP a``.
        operator: the Python operator it backs (``"add"``: ``__add__``), if any.
        reflected: how ``other OP a`` is computed: ``"same"`` (commutative:
            ``__radd__`` is ``__add__``), ``"reversed"`` (``value OP a``) or
            ``""`` (no reflected operator).
        method: NDArray and Tensor have a method of the op's name.
        since: the interface version that added the kernel.
        required: every backend must have the kernel (else it is optional and
            an op needing it raises a DTypeError naming the device).
        fast: float arithmetic that the operator fast paths serve.
        may_warn: numpy announces its IEEE results (inf, nan) with warnings,
            which the reference backend silences.
        domain: where the conformance kit samples operands: ``"any"``,
            ``"positive"`` (log, sqrt), ``"divisor"`` (the second operand is
            away from zero; for int64 a zero divisor raises) or ``"exponent"``.
        bool_error: why a bool operand is refused (PyTorch's rule), if it is.
        logical: the ``logical_*`` op computed with this one on truth values.
        torch_name: the op's name in PyTorch and lamina.autograd where it
            differs (``floordiv`` is ``torch.floor_divide``).
    """

    name: str
    arity: int
    reference: Any
    dtypes: str = "all"
    result: str = "same"
    scalar: bool = False
    reversed: bool = False
    operator: str = ""
    reflected: str = ""
    method: bool = False
    since: tuple[int, int] = (1, 0)
    required: bool = True
    fast: bool = False
    may_warn: bool = False
    domain: str = "any"
    bool_error: str = ""
    logical: str = ""
    torch_name: str = ""

    @property
    def public(self) -> str:
        """The name of the op's function and Tensor method in lamina.autograd."""
        return self.torch_name or self.name

    @property
    def integral(self) -> bool:
        """Only integer and bool operands (the bitwise ops)."""
        return self.dtypes == "integral"


def _binary(name: str, reference: Any, **kw: Any) -> Op:
    return Op(name, 2, reference, **kw)


def _unary(name: str, reference: Any, **kw: Any) -> Op:
    return Op(name, 1, reference, **kw)


_ARITH = {"scalar": True, "fast": True}
_COMPARE = {"scalar": True, "result": "bool"}
_BITWISE = {"dtypes": "integral", "since": (1, 1), "required": False, "reflected": "same"}
_FLOAT_FN = {"dtypes": "floats", "result": "float", "method": True, "may_warn": True}

OPS: Mapping[str, Op] = MappingProxyType({op.name: op for op in (
    # binary arithmetic: ewise, scalar and (not commutative) reversed kernels
    _binary("add", np.add, operator="add", reflected="same", **_ARITH),
    _binary("sub", np.subtract, dtypes="numbers", reversed=True, operator="sub",
            reflected="reversed", bool_error="subtraction with a bool operand is not "
            "supported; use ^ (bitwise_xor) or logical_xor instead", **_ARITH),
    _binary("mul", np.multiply, operator="mul", reflected="same", **_ARITH),
    _binary("div", np.true_divide, dtypes="floats", result="float", reversed=True,
            operator="truediv", reflected="reversed", may_warn=True, domain="divisor",
            **_ARITH),
    _binary("power", np.power, dtypes="numbers", reversed=True, operator="pow",
            reflected="reversed", may_warn=True, domain="exponent", torch_name="pow",
            **_ARITH),
    _binary("maximum", np.maximum, method=True, **_ARITH),
    _binary("minimum", np.minimum, method=True, **_ARITH),
    # comparisons: a bool result
    _binary("eq", np.equal, operator="eq", **_COMPARE),
    _binary("ne", np.not_equal, operator="ne", **_COMPARE),
    _binary("lt", np.less, operator="lt", **_COMPARE),
    _binary("le", np.less_equal, operator="le", **_COMPARE),
    _binary("gt", np.greater, operator="gt", **_COMPARE),
    _binary("ge", np.greater_equal, operator="ge", **_COMPARE),
    # interface v1.1, optional: ewise kernels only (a scalar operand is a 0-d array)
    _binary("floordiv", np.floor_divide, dtypes="numbers", since=(1, 1), required=False,
            operator="floordiv", reflected="reversed", may_warn=True, domain="divisor",
            torch_name="floor_divide"),
    _binary("remainder", np.remainder, dtypes="numbers", since=(1, 1), required=False,
            operator="mod", reflected="reversed", may_warn=True, domain="divisor"),
    _binary("bitwise_and", np.bitwise_and, operator="and", logical="logical_and",
            **_BITWISE),
    _binary("bitwise_or", np.bitwise_or, operator="or", logical="logical_or", **_BITWISE),
    _binary("bitwise_xor", np.bitwise_xor, operator="xor", logical="logical_xor",
            **_BITWISE),
    # unary
    _unary("neg", np.negative, dtypes="numbers", operator="neg",
           bool_error="not supported for bool arrays; to invert a mask use ~ (bitwise_not) "
           "or logical_not"),
    _unary("abs", np.abs, dtypes="numbers", operator="abs", method=True,
           bool_error="not supported for bool arrays; to invert a mask use ~ (bitwise_not) "
           "or logical_not"),
    _unary("exp", np.exp, **_FLOAT_FN),
    _unary("log", np.log, domain="positive", **_FLOAT_FN),
    _unary("sqrt", np.sqrt, domain="positive", **_FLOAT_FN),
    _unary("tanh", np.tanh, **_FLOAT_FN),
    _unary("sin", np.sin, **_FLOAT_FN),
    _unary("cos", np.cos, **_FLOAT_FN),
    _unary("sign", np.sign, dtypes="numbers", method=True),
    _unary("erf", None, since=(1, 1), required=False, **_FLOAT_FN),
    _unary("bitwise_not", np.invert, dtypes="integral", since=(1, 1), required=False,
           operator="invert"),
)})
"""Every elementwise op, by name, in the interface's order."""


def ops(*, arity: int | None = None, required: bool | None = None,
        **flags: Any) -> tuple[str, ...]:
    """The names of the ops matching every given attribute, in table order.

    Example:
        >>> ops(arity=2, result="bool")
        ('eq', 'ne', 'lt', 'le', 'gt', 'ge')
    """
    want = dict(flags)
    if arity is not None:
        want["arity"] = arity
    if required is not None:
        want["required"] = required
    return tuple(op.name for op in OPS.values()
                 if all(getattr(op, k) == v for k, v in want.items()))
