"""nn.init: gains against PyTorch's table, bounds and statistics of each initialiser."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from lamina import autograd as ag
from lamina.nn import ShapeError, init


@pytest.mark.parametrize("name,param", [("linear", None), ("sigmoid", None), ("tanh", None),
                                        ("relu", None), ("leaky_relu", None),
                                        ("leaky_relu", 0.2), ("selu", None), ("conv2d", None)])
def test_calculate_gain_matches_torch(name, param):
    assert init.calculate_gain(name, param) == pytest.approx(
        torch.nn.init.calculate_gain(name, param))


def _stats(fill, shape=(300, 200)):
    ag.manual_seed(0)
    t = ag.empty(*shape)
    assert fill(t) is t
    return t.numpy()


def test_constant_zeros_ones():
    assert (_stats(lambda t: init.constant_(t, 2.5)) == 2.5).all()
    assert (_stats(init.zeros_) == 0).all() and (_stats(init.ones_) == 1).all()


def test_uniform_and_normal():
    u = _stats(lambda t: init.uniform_(t, -2, 3))
    assert u.min() >= -2 and u.max() <= 3 and abs(u.mean() - 0.5) < 0.05
    n = _stats(lambda t: init.normal_(t, 1.0, 0.5))
    assert abs(n.mean() - 1.0) < 0.01 and abs(n.std() - 0.5) < 0.01


@pytest.mark.parametrize("fn,expected_std", [
    (lambda t: init.xavier_uniform_(t, gain=2.0), 2.0 * math.sqrt(2.0 / 500)),
    (lambda t: init.xavier_normal_(t), math.sqrt(2.0 / 500)),
    (lambda t: init.kaiming_uniform_(t, nonlinearity="relu"), math.sqrt(2.0 / 200)),
    (lambda t: init.kaiming_normal_(t, mode="fan_out", nonlinearity="relu"),
     math.sqrt(2.0 / 300)),
    (lambda t: init.kaiming_normal_(t, nonlinearity="tanh"), 5 / 3 / math.sqrt(200)),
    (lambda t: init.kaiming_uniform_(t, a=math.sqrt(5)), 1 / math.sqrt(3 * 200)),
])
def test_fan_based_initialisers(fn, expected_std):
    values = _stats(fn)
    assert abs(values.std() - expected_std) < 0.02 * expected_std
    assert abs(values.mean()) < 0.05 * expected_std * 10


def test_fans_with_receptive_field_and_errors():
    values = _stats(lambda t: init.xavier_uniform_(t), shape=(16, 8, 3, 3))
    bound = math.sqrt(6.0 / (8 * 9 + 16 * 9))
    assert np.abs(values).max() <= bound
    with pytest.raises(ShapeError, match="at least 2 dims"):
        init.kaiming_uniform_(ag.empty(5))
    with pytest.raises(ValueError, match="mode"):
        init.kaiming_normal_(ag.empty(2, 2), mode="fan_avg")
    with pytest.raises(ValueError, match="nonlinearity"):
        init.calculate_gain("swish")


def test_manual_seed_makes_init_reproducible():
    a, b = _stats(init.xavier_normal_), _stats(init.xavier_normal_)
    np.testing.assert_array_equal(a, b)
