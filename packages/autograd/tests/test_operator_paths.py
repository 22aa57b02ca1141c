"""Every Tensor operator against its ``ag.`` function: one path, the same graph.

The operators take a shortcut past the functions' dispatch on operand types;
these tests hold them to the functions' results on the cases a shortcut gets
wrong: a view made stale by a write through its base (history it must pick up),
saved inputs modified in place (the version check), and no_grad.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import lamina.autograd as ag
import numpy as np
import pytest
import torch
from conftest import DEVICES
from lamina.autograd._ops.table import NODES
from lamina.ndarray._optable import OPS, Op

# operator -> the ag function it must agree with; float operands
FLOAT_OPS: dict[str, tuple[Callable[[Any, Any], Any], Callable[[Any, Any], Any]]] = {
    "add": (operator.add, ag.add), "sub": (operator.sub, ag.sub),
    "mul": (operator.mul, ag.mul), "truediv": (operator.truediv, ag.div),
    "pow": (operator.pow, ag.pow), "floordiv": (operator.floordiv, ag.floor_divide),
    "mod": (operator.mod, ag.remainder), "lt": (operator.lt, ag.lt),
    "le": (operator.le, ag.le), "gt": (operator.gt, ag.gt), "ge": (operator.ge, ag.ge),
    "eq": (operator.eq, ag.eq), "ne": (operator.ne, ag.ne),
}
UNARY_OPS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "neg": (operator.neg, ag.neg), "abs": (abs, ag.abs),
}


def _stale_view(device: str) -> Any:
    """``v``, a view of ``b`` taken before a write gave ``b`` history (issue's example)."""
    b = ag.zeros(3, device=device)
    v = b[0:1]
    b[1:] = ag.ones(2, device=device, requires_grad=True)
    return v


def _kind(t: Any) -> str | None:
    return None if t.grad_fn is None else type(t.grad_fn).__name__


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(FLOAT_OPS))
def test_binary_operator_on_a_stale_view_records_like_the_function(name: str,
                                                                   device: str) -> None:
    op, fn = FLOAT_OPS[name]
    for swap in (False, True):
        other = ag.full((1,), 2.0, device=device)
        args = (other, _stale_view(device)) if swap else (_stale_view(device), other)
        ours, theirs = op(*args), fn(*args)
        assert _kind(ours) == _kind(theirs), (name, swap)
        np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
    # the example of the issue, spelled out: the graph must not be dropped
    if name in ("add", "sub", "mul", "truediv"):
        assert op(_stale_view(device), ag.ones(1, device=device)).grad_fn is not None


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(UNARY_OPS))
def test_unary_operator_on_a_stale_view_records_like_the_function(name: str,
                                                                  device: str) -> None:
    op, fn = UNARY_OPS[name]
    ours, theirs = op(_stale_view(device)), fn(_stale_view(device))
    assert _kind(ours) == _kind(theirs) and _kind(ours) is not None
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())


def _backward_after_write(build: Callable[[Any, Any], Any], device: str) -> str:
    """Runs ``build(a, w)``, writes ``a`` in place, then backward: 'ok' or the error."""
    x = ag.tensor([0.5, 1.5, 2.5], device=device, requires_grad=True)
    w = ag.tensor([1.5, 0.5, 2.0], device=device, requires_grad=True)
    a = x * 1.0
    out = build(a, w)
    a.add_(1.0)
    try:
        out.sum().backward()
    except RuntimeError as e:
        return "modified by an inplace operation" if "inplace" in str(e) else str(e)
    return "ok"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["add", "sub", "mul", "truediv", "pow"])
def test_operator_and_function_agree_on_the_version_check(name: str, device: str) -> None:
    op, fn = FLOAT_OPS[name]
    assert _backward_after_write(op, device) == _backward_after_write(fn, device)
    if name in ("mul", "truediv", "pow"):  # they save their inputs
        assert _backward_after_write(op, device) == "modified by an inplace operation"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["add", "sub", "mul", "truediv"])
def test_operator_under_no_grad_records_nothing(name: str, device: str) -> None:
    op, fn = FLOAT_OPS[name]
    x = ag.tensor([0.5, 1.5], device=device, requires_grad=True)
    with ag.no_grad():
        ours, theirs = op(x, x), fn(x, x)
    assert ours.grad_fn is None and theirs.grad_fn is None
    assert not ours.requires_grad
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())


# ----- the sweep over the op table: every operator Tensor gets from it ------------------

_BINARY = [op for op in OPS.values() if op.operator and op.arity == 2]
_IN_PLACE = [op for op in _BINARY if hasattr(ag.Tensor, f"__i{op.operator}__")]


def _operands(op: Op, device: str) -> tuple[Any, Any]:
    """A stale view and a second operand of a dtype ``op`` accepts (ints for bitwise ops)."""
    if op.integral:
        return (ag.tensor([6, -3, 5], device=device)[0:1], ag.tensor([3], device=device))
    return _stale_view(device), ag.full((1,), 2.0, device=device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", _BINARY, ids=lambda op: op.operator)
def test_every_table_operator_matches_its_function(op: Op, device: str) -> None:
    """``v OP w``, ``w OP v`` and ``2 OP v`` against ``ag.<op>`` on a stale view."""
    forward = getattr(operator, f"__{op.operator}__")
    fn = getattr(ag, op.public)
    if op.integral and "int64" not in ag.zeros(1, device=device).device.dtypes:
        pytest.skip(f"{device} has no int64")
    cases: list[tuple[Any, Any]] = []
    for swap in (False, True):
        v, w = _operands(op, device)
        cases.append((w, v) if swap else (v, w))
    if op.reflected:
        cases.append((2, _operands(op, device)[0]))
    for a, b in cases:
        try:
            ours = forward(a, b)
        except (TypeError, ValueError) as e:  # an optional kernel the device lacks
            with pytest.raises(type(e)):
                fn(a, b)
            continue
        theirs = fn(a, b)
        assert _kind(ours) == _kind(theirs), (op.name, a, b)
        assert ours.dtype == theirs.dtype
        np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())


def _written(op: Op, device: str, spelling: str) -> tuple[Any, Any, Any]:
    """``a[1:] OP= w`` on ``a = x * 1`` (history from the leaf ``x``) in one of three
    spellings: the augmented operator, the ``_`` method, or out of place (the reference).
    Returns ``(x, a, the version of a after the write)``."""
    if op.integral:
        x = ag.tensor([6, -3, 5], device=device)
        a, w = x * 1, ag.tensor([3], device=device)
    else:
        x = ag.tensor([1.5, 2.5, 3.5], device=device, requires_grad=True)
        a, w = x * 1.0, ag.full((1,), 2.0, device=device)
    fn = getattr(ag, op.public)
    if spelling == "reference":
        a = ag.cat([a[:1], fn(a[1:], w)])
        return x, a, None
    view, before = a[1:], a._version
    if spelling == "operator":
        view = getattr(operator, f"__i{op.operator}__")(view, w)
    else:
        view = getattr(view, f"{op.public}_")(w)
    assert a._version == before + 1  # one write, one bump, through the view too
    return x, a, a._version


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", _IN_PLACE, ids=lambda op: f"i{op.operator}")
def test_every_table_in_place_operator_records_like_its_method(op: Op, device: str) -> None:
    """``v OP= w`` on a view of a leaf-derived tensor: the same values, history (the
    gradient of the out-of-place formulation) and version bump as ``v.<op>_(w)``."""
    if op.integral and "int64" not in ag.zeros(1, device=device).device.dtypes:
        pytest.skip(f"{device} has no int64")
    outcomes = []
    for spelling in ("operator", "method", "reference"):
        try:
            x, a, version = _written(op, device, spelling)
        except (TypeError, ValueError, RuntimeError) as e:  # a kernel the device lacks, or
            outcomes.append(type(e).__name__)               # a non-differentiable write
            continue
        if not x.requires_grad:
            outcomes.append((a.tolist(), version))
            continue
        a.sum().backward()
        outcomes.append((a.tolist(), x.grad.tolist(), version))  # type: ignore[union-attr]
    ours, method, reference = outcomes
    assert ours == method, op.name
    if isinstance(ours, str):  # refused: a kernel the device lacks (the reference too), or
        # a non-differentiable op written into a tensor that requires grad
        assert isinstance(reference, str) or (ours == "RuntimeError"
                                               and not NODES[op.public].differentiable)
        return
    assert not isinstance(reference, str)
    np.testing.assert_allclose(ours[0], reference[0])  # values
    if len(ours) == 3:
        np.testing.assert_allclose(ours[1], reference[1])  # the history the write recorded


def test_a_non_differentiable_write_into_a_tensor_that_requires_grad_raises() -> None:
    # as PyTorch: "derivative for aten::floor_divide_ is not implemented"; it used to keep
    # the old grad_fn and pass gradients through the floored values
    x = ag.tensor([1.5, 2.5], requires_grad=True)
    a = x * 1.0
    with pytest.raises(RuntimeError, match="floor_divide_: derivative"):
        a //= 2
    with pytest.raises(RuntimeError, match="sign_: derivative"):
        a.sign_()
    with ag.no_grad():
        a //= 2
    assert a.tolist() == [0.0, 1.0]


def test_the_table_installs_pytorch_s_methods() -> None:
    x = ag.tensor([0.5, -2.0, 4.0])
    t = torch.tensor([0.5, -2.0, 4.0])
    for name in ("remainder", "floor_divide", "eq", "lt", "maximum", "logical_xor"):
        np.testing.assert_array_equal(getattr(x, name)(ag.tensor([1.0, 0.0, 4.0])).numpy(),
                                      getattr(t, name)(torch.tensor([1.0, 0.0, 4.0])).numpy())
    for name in ("exp_", "neg_", "abs_", "sqrt_"):
        ours, theirs = ag.tensor([0.25, 4.0]), torch.tensor([0.25, 4.0])
        getattr(ours, name)()
        getattr(theirs, name)()
        assert ours._version == 1
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    assert not hasattr(ag.Tensor, "maximum_") and not hasattr(torch.Tensor, "maximum_")
