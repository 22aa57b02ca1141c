"""Finite differences in float64: every differentiable op, and second order on a subset."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import lamina.autograd as ag
import numpy as np
import pytest
from conftest import float64_device
from harness import as_list, build
from op_records import RECORDS, OpRecord, Sample

DIFFERENTIABLE = [pytest.param(rec, id=rec.name) for rec in RECORDS
                  if rec.differentiable and rec.gradcheck]
SECOND_ORDER = [pytest.param(rec, id=rec.name) for rec in RECORDS if rec.second_order]


def _as_function(rec: OpRecord, sample: Sample) -> tuple[Callable[..., Any], list[ag.Tensor]]:
    """``rec.fn`` as a function of its differentiable inputs only, and those inputs."""
    args, _, leaves = build(rec, sample, float64_device(rec.kernel), "float64")
    slots = [i for i, a in enumerate(args) if any(a is x for x, _ in leaves)]

    def fn(*xs: ag.Tensor) -> Any:
        call = list(args)
        for i, x in zip(slots, xs):
            call[i] = x
        return rec.fn(*call, **sample.kwargs)

    return fn, [x for x, _ in leaves]


@pytest.mark.parametrize("rec", DIFFERENTIABLE)
def test_gradcheck(rec: OpRecord) -> None:
    for sample in rec.samples:
        if sample.smooth:
            fn, inputs = _as_function(rec, sample)
            assert ag.gradcheck(fn, inputs)


@pytest.mark.parametrize("rec", SECOND_ORDER)
def test_second_order_gradcheck(rec: OpRecord) -> None:
    """Checks the gradient of the gradient: backward rules are differentiable."""
    for sample in rec.samples:
        fn, inputs = _as_function(rec, sample)
        outs = as_list(fn(*inputs))
        rng = np.random.default_rng(1)
        cots = [ag.tensor(rng.standard_normal(o.shape), dtype="float64", device=o.device)
                for o in outs]

        assert ag.gradcheck(_first_order(fn, cots), inputs, atol=1e-4)


def _first_order(fn: Callable[..., Any], cots: list[ag.Tensor]) -> Callable[..., Any]:
    """``xs -> d(sum(fn(xs) * cots))/dxs``, recorded so it can be differentiated again."""

    def first_order(*xs: ag.Tensor) -> tuple[ag.Tensor, ...]:
        ys = as_list(fn(*xs))
        total = sum((y * u).sum() for y, u in zip(ys, cots))
        grads = ag.grad(total, xs, create_graph=True, allow_unused=True)
        return tuple(g if g is not None else ag.zeros_like(x) for g, x in zip(grads, xs))

    return first_order


def test_gradcheck_reports_output_and_input_on_a_wrong_rule() -> None:
    class BadSquare(ag.Function):
        name = "bad_square"
        save_inputs = True

        def forward(self, a: Any) -> Any:
            return a * a

        def backward(self, g: ag.Tensor) -> tuple[ag.Tensor]:
            return (g * self.inputs[0] * 3,)  # should be 2

    x = ag.rand(3, dtype="float64", requires_grad=True)
    with pytest.raises(ag.GradcheckError, match="output 0 with respect to input 0"):
        ag.gradcheck(lambda t: BadSquare.apply(t), [x])
    assert not ag.gradcheck(lambda t: BadSquare.apply(t), [x], raise_exception=False)
    big = ag.rand(200, dtype="float64", requires_grad=True)
    with pytest.raises(ag.GradcheckError, match="random direction"):
        ag.gradcheck(lambda t: BadSquare.apply(t), [big])
    with pytest.raises(TypeError, match="float64"):
        ag.gradcheck(lambda t: t * 2, [ag.rand(3, requires_grad=True)])
