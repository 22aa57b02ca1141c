"""clip_grad_norm_ against torch.nn.utils.clip_grad_norm_: every norm order, NaN and inf
gradients in any parameter (not only the first), on every device."""

from __future__ import annotations

import math

import lamina.autograd as ag
import numpy as np
import pytest
import torch
from lamina import nn

NAN, INF = math.nan, math.inf
ORDERS = [2.0, 1.0, 0.5, 3.0, 0, INF, -INF, -1.0]


def _grads(bad_last: float | None = None) -> list[np.ndarray]:
    """Three gradients with zeros in them; ``bad_last`` goes into the last one."""
    grads = [np.array([1.0, -5.0, 0.0]), np.array([[0.0, 2.0], [0.5, 0.0]]),
             np.array([0.25, -3.0, 0.0, 1.0])]
    if bad_last is not None:
        grads[-1][1] = bad_last
    return grads


def _clip_both(device: str, grads: list[np.ndarray], max_norm: float, norm_type: float,
               **kwargs) -> tuple[tuple[float, list[np.ndarray]], tuple[float, list[np.ndarray]]]:
    """(total, clipped grads) from Lamina and from PyTorch for the same gradients."""
    ours = [ag.zeros(*g.shape, device=device, requires_grad=True) for g in grads]
    theirs = [torch.zeros(g.shape, requires_grad=True) for g in grads]
    for p, q, g in zip(ours, theirs, grads):
        p.grad = ag.tensor(g.astype(np.float32), device=device)
        q.grad = torch.tensor(g, dtype=torch.float32)
    total = nn.utils.clip_grad_norm_(ours, max_norm, norm_type, **kwargs)
    total_t = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type, **kwargs)
    return ((float(total), [p.grad.numpy() for p in ours]),
            (float(total_t), [q.grad.numpy() for q in theirs]))


def _assert_same(ours: tuple[float, list[np.ndarray]], theirs: tuple[float, list[np.ndarray]]
                 ) -> None:
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5)  # NaN == NaN here
    for got, want in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("norm_type", ORDERS)
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_every_norm_order_matches_torch(device, norm_type, max_norm):
    _assert_same(*_clip_both(device, _grads(), max_norm, norm_type))


@pytest.mark.parametrize("norm_type", ORDERS)
@pytest.mark.parametrize("bad", [NAN, INF])
def test_a_nonfinite_gradient_in_the_last_parameter_propagates_like_torch(device, norm_type,
                                                                         bad):
    ours, theirs = _clip_both(device, _grads(bad), 1.0, norm_type)
    _assert_same(ours, theirs)
    if norm_type == INF:  # the case that used to drop a late NaN: the norm is NaN
        assert math.isnan(ours[0]) == (bad != bad)
        assert all(np.isnan(g).all() for g in ours[1]) == (bad != bad)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, INF])
def test_error_if_nonfinite_sees_a_nan_in_any_parameter(device, norm_type):
    with pytest.raises(RuntimeError):  # the reference raises too
        _clip_both(device, _grads(NAN), 1.0, norm_type, error_if_nonfinite=True)
    params = [ag.zeros(*g.shape, device=device, requires_grad=True) for g in _grads()]
    for p, g in zip(params, _grads(NAN)):
        p.grad = ag.tensor(g.astype(np.float32), device=device)
    with pytest.raises(RuntimeError, match=f"clip_grad_norm_: the total norm of order "
                                           f"{norm_type} of the gradients is nan"):
        nn.utils.clip_grad_norm_(params, 1.0, norm_type, error_if_nonfinite=True)
    np.testing.assert_array_equal(params[0].grad.numpy(), _grads()[0])  # left unscaled


def test_norm_type_zero_counts_parameters_with_a_nonzero_gradient(device):
    (total, grads), _ = _clip_both(device, _grads(), 1.0, 0)
    assert total == 3.0  # as torch: the 0-norm of the per-parameter counts (2, 2, 3)
    np.testing.assert_allclose(grads[0], _grads()[0] / 3.0, rtol=1e-5)
