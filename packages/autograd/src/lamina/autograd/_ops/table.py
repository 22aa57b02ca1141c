"""lamina.autograd's surface of the op table: each op's Function, function and Tensor methods.

For every op of :data:`lamina.ndarray._optable.OPS` this module makes, without
naming the op:

- its Function (:data:`NODES`): the gradient rule that ``elementwise``
  registered for it, or else a non-differentiable Function whose forward is
  the NDArray op (comparisons, bitwise ops, sign, floor_divide: their
  derivative is zero or undefined);
- its public function ``lamina.autograd.<op.public>`` (:data:`FUNCTIONS`): the
  hand-written one of ``elementwise.PUBLIC`` (scalar fast paths), else
  ``Function.apply`` on the operands, a Python number lifted to a 0-d tensor;
- the ``logical_*`` function of each bitwise op that declares one;
- and, through :func:`install`, Tensor's operators (``__mul__``, ``__rmul__``),
  in-place operators (``__imul__``) and methods (``t.maximum(b)``,
  ``t.mul_(b)``, ``t.logical_xor(b)``).

Adding an elementwise op to the table adds all of these; only its gradient
rule is written by hand (in ``elementwise``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lamina.ndarray import NDArray
from lamina.ndarray._optable import OPS, Op

from .._function import Function
from .._tensor_base import Tensor
from . import elementwise
from ._util import operands


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def _non_differentiable(name: str, kernel: Callable[..., NDArray]) -> type[Function]:
    """A Function named ``name`` whose output never requires grad; forward is ``kernel``."""

    def forward(self: Function, *arrays: NDArray) -> NDArray:
        return kernel(*arrays)

    doc = f"``{name}`` of the op table; not differentiable (no graph node is recorded)."
    return type(_camel(name), (Function,), {
        "name": name, "differentiable": False, "forward": forward, "__doc__": doc,
        "__module__": __name__})


def _kernel(op: Op) -> Callable[..., NDArray]:
    """The NDArray operator or method that computes ``op``."""
    return getattr(NDArray, f"__{op.operator}__" if op.operator else op.name)


def _binary(name: str, node: type[Function]) -> Callable[[Any, Any], Any]:
    apply = node.apply

    def function(a: Any, b: Any) -> Any:
        return apply(*operands(a, b, name))

    return function


def _unary(node: type[Function]) -> Callable[[Tensor], Tensor]:
    apply = node.apply

    def function(x: Tensor) -> Tensor:
        return apply(x)

    return function


def _documented(fn: Callable[..., Any], name: str, node: type[Function],
                arity: int) -> Callable[..., Any]:
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = __name__
    operand = "a Tensor" if arity == 1 else "Tensors or numbers, broadcast"
    fn.__doc__ = node.__doc__ or f"``{name}`` of {operand}, elementwise, as ``torch.{name}``."
    if not node.differentiable:
        fn.__doc__ += " Not differentiable."
    return fn


def _function(name: str, node: type[Function], arity: int) -> Callable[..., Any]:
    """The public function ``name`` of an op whose Function is ``node``."""
    if name in elementwise.PUBLIC:
        return elementwise.PUBLIC[name]
    fn = _binary(name, node) if arity == 2 else _unary(node)
    return _documented(fn, name, node, arity)


def _build() -> tuple[dict[str, type[Function]], dict[str, Callable[..., Any]]]:
    nodes: dict[str, type[Function]] = {}
    functions: dict[str, Callable[..., Any]] = {}
    for op in OPS.values():
        node = elementwise.GRADIENTS.get(op.public) or _non_differentiable(op.public, _kernel(op))
        nodes[op.public] = node
        functions[op.public] = _function(op.public, node, op.arity)
        if op.logical:  # logical_xor: the bitwise op on truth values, a bool result
            nodes[op.logical] = _non_differentiable(op.logical, getattr(NDArray, op.logical))
            functions[op.logical] = _function(op.logical, nodes[op.logical], 2)
    unknown = set(elementwise.GRADIENTS) - set(nodes)
    if unknown:
        raise RuntimeError(f"op table: gradient rules for ops the table does not declare: "
                           f"{sorted(unknown)}; add them to lamina.ndarray._optable.OPS")
    return nodes, functions


NODES, FUNCTIONS = _build()
"""The Function and the public function of every op of the table (and logical_*), by name."""

PRIMITIVES = tuple(NODES.values())
COMPOSITES: tuple[Callable[..., Any], ...] = ()


# ----- Tensor's operators and methods -----------------------------------------------

def _operator(function: Callable[[Any, Any], Tensor], apply: Callable[..., Any],
              tensor: type[Tensor]) -> Callable[[Tensor, Any], Tensor]:
    """``t OP other``: two Tensors go straight to ``Function.apply`` (what the function
    would call for them, minus its dispatch on operand types), else the function."""

    def operator(self: Tensor, other: Any) -> Tensor:
        if type(other) is tensor:
            return apply(self, other)
        return function(self, other)

    return operator


def _reflected(function: Callable[[Any, Any], Tensor]) -> Callable[[Tensor, Any], Tensor]:
    """``other OP t``, for a left operand that is not a Tensor."""

    def reflected(self: Tensor, other: Any) -> Tensor:
        return function(other, self)

    return reflected


def _in_place(name: str, function: Callable[..., Any], arity: int,
              direct: Callable[[NDArray, Any], NDArray] | None = None) -> Callable[..., Any]:
    """``t.NAME(...)``: the out-of-place ``function`` written into ``t`` (see _inplace);
    ``direct``, the NDArray's in-place operator, where nothing needs recording."""
    from .. import _inplace  # loaded by install() time; it imports this package

    if arity == 2:
        binary = _inplace._binary

        def method(self: Tensor, other: Any) -> Tensor:
            return binary(self, other, name, function, direct)
    else:
        unary = _inplace._unary

        def method(self: Tensor) -> Tensor:  # type: ignore[misc]
            return unary(self, name, function)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``{name[:-1]}`` in place: writes the result into this tensor."
    return method


def _has_in_place(op: Op) -> bool:
    """PyTorch's in-place forms: every unary op and every binary operator, but not the
    comparisons (their bool result) nor maximum/minimum (PyTorch has no ``maximum_``)."""
    return op.result != "bool" and (op.arity == 1 or bool(op.operator))


def install(cls: type[Tensor]) -> None:
    """Sets the operators and methods of every op of the table on ``cls`` (Tensor).

    A method that ``cls`` defines itself is kept (``add_`` and ``sub_`` take
    PyTorch's ``alpha``); everything else comes from the table.
    """

    def put(name: str, value: Callable[..., Any]) -> None:
        if name not in vars(cls):
            setattr(cls, name, value)

    for op in OPS.values():
        name, fn, node = op.public, FUNCTIONS[op.public], NODES[op.public]
        put(name, fn)
        if op.logical:
            put(op.logical, FUNCTIONS[op.logical])
        if _has_in_place(op):
            direct = getattr(NDArray, f"__i{op.operator}__") if op.fast and op.operator else None
            method = _in_place(f"{name}_", fn, op.arity, direct)
            put(f"{name}_", method)
            if op.operator and op.arity == 2:
                put(f"__i{op.operator}__", method)
        if not op.operator:
            continue
        if op.arity == 1:
            put(f"__{op.operator}__", fn)
            continue
        put(f"__{op.operator}__", _operator(fn, node.apply, cls))
        if op.reflected:
            put(f"__r{op.operator}__", _reflected(fn))
