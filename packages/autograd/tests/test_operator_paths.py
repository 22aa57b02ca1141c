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
from conftest import DEVICES

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
