"""Gradients of several slices of one tensor, summed in place by the engine, against torch.

The engine adds a slice's gradient into one buffer per sliced tensor
(``Slice.add_grad_into``); whole rows along axis 0 (``qkv[0]``, ``qkv[1]``,
``qkv[2]``) go into a buffer whose other rows it zeroes only when the buffer is
read, and a slice of a permuted view gets its buffer in that view's memory order.
Each case mixes these paths: every row written, some, one twice, rows and other
slices, and the sliced tensor also used whole.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import lamina.autograd as ag
import numpy as np
import pytest
import torch
from conftest import DEVICES


def _qkv(x: Any) -> Any:
    n, t, c = x.shape
    return x.reshape(n, t, 3, 2, c // 6).permute(2, 0, 3, 1, 4)


CASES: dict[str, Callable[[Any], Any]] = {
    "every_row": lambda x: x[0] * 2 + x[1] * x[2],
    "every_row_of_a_permuted_view":
        lambda x: (_qkv(x)[0] * _qkv(x)[1]).sum(-1) + _qkv(x)[2].sum(-1),
    "some_rows": lambda x: x[0] * 3 + x[2],
    "a_row_twice": lambda x: x[1] * x[1] + x[1],
    "negative_row": lambda x: x[-1] * 2 + x[0],
    "rows_and_columns": lambda x: x[1] + x[:, 0:1].sum(0) + x[2],
    "rows_and_the_whole": lambda x: x[0] + x[2] + x.sum(0),
    "row_of_a_row": lambda x: x[1][0].sum() + x[1].sum(),
}


@pytest.mark.parametrize("leaf", [True, False], ids=["leaf", "intermediate"])
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(CASES))
def test_slice_gradients_match_torch(name: str, device: str, leaf: bool) -> None:
    values = np.random.default_rng(len(name)).standard_normal((3, 4, 12))
    fn = CASES[name] if leaf else (lambda x, f=CASES[name]: f(x * 1.5))
    x = ag.tensor(values, dtype="float64", device=device, requires_grad=True)
    tx = torch.tensor(values, requires_grad=True)
    y, ty = fn(x), fn(tx)
    g = np.random.default_rng(1).standard_normal(tuple(ty.shape))
    (y * ag.tensor(g, dtype="float64", device=device)).sum().backward()
    (ty * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_rows_of_an_intermediate_are_zero_where_no_slice_reads_them(device: str) -> None:
    x = ag.tensor(np.ones((4, 3)), dtype="float64", device=device, requires_grad=True)
    y = x * 2.0  # the slices' tensor is an intermediate: its gradient flows on
    (y[1] * 3.0 + y[3]).sum().backward()
    assert x.grad.tolist() == [[0.0] * 3, [6.0] * 3, [0.0] * 3, [2.0] * 3]
