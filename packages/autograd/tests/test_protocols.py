"""Python protocols on Tensor against PyTorch: __index__, __format__, __len__, iteration,
__bool__ and __hash__ (what a PyTorch program does with a tensor besides its ops)."""

from __future__ import annotations

import lamina.autograd as ag
import numpy as np
import pytest
import torch
from conftest import DEVICES


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("value", [1, [2], [[0]], True], ids=repr)
def test_a_one_element_integer_tensor_is_an_index(device, value):
    items = [10, 20, 30]
    t, u = ag.tensor(value, device=device), torch.tensor(value)
    assert items[t] == items[u]
    assert np.arange(5)[t] == np.arange(5)[u]
    assert list(range(5))[t:] == list(range(5))[u:]
    assert range(ag.tensor(3, device=device)) == range(3)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("value", [1.0, [1, 2]], ids=repr)
def test_a_float_or_larger_tensor_is_not_an_index(device, value):
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        [1, 2, 3][ag.tensor(value, device=device)]
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        [1, 2, 3][torch.tensor(value)]


@pytest.mark.parametrize("device", DEVICES)
def test_format_spec_formats_the_value(device):
    loss = ag.tensor(0.123456, device=device)
    assert f"{loss:.4f}" == f"{torch.tensor(0.123456):.4f}" == "0.1235"
    assert f"{ag.tensor(7, device=device):>4}" == f"{torch.tensor(7):>4}"
    assert f"{loss}" == f"{torch.tensor(0.123456).item()}"  # a 0-d tensor formats its value
    assert f"{ag.tensor([[2.5]], device=device):.2f}" == "2.50"  # one element, any ndim
    t = ag.tensor([1.0, 2.0], device=device)
    assert f"{t}" == str(t)
    with pytest.raises(TypeError, match="unsupported format string"):
        f"{t:.2f}"
    with pytest.raises(TypeError, match="unsupported format string"):
        f"{torch.tensor([1.0, 2.0]):.2f}"


@pytest.mark.parametrize("device", DEVICES)
def test_len_and_iteration_walk_the_first_dim(device):
    x0 = np.arange(6.0).reshape(3, 2)
    x = ag.tensor(x0, device=device, requires_grad=True)
    assert len(x) == len(torch.tensor(x0)) == 3
    rows = list(x)
    assert [r.tolist() for r in rows] == [r.tolist() for r in torch.tensor(x0)]
    (rows[0] * 2 + rows[2]).sum().backward()
    assert x.grad.tolist() == [[2.0, 2.0], [0.0, 0.0], [1.0, 1.0]]
    scalar = ag.tensor(1.0, device=device)
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(scalar)
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(scalar)
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(torch.tensor(1.0))


@pytest.mark.parametrize("device", DEVICES)
def test_bool_of_one_element_and_the_ambiguous_cases(device):
    assert bool(ag.tensor([[3.0]], device=device)) is True
    assert bool(ag.tensor(0.0, device=device)) is False
    with pytest.raises(RuntimeError, match="with more than one value is ambiguous"):
        bool(ag.tensor([1.0, 2.0], device=device))
    with pytest.raises(RuntimeError, match="with no values is ambiguous"):
        bool(ag.zeros(0, device=device))
    with pytest.raises(RuntimeError, match="with no values is ambiguous"):
        bool(torch.zeros(0))


def test_hash_is_identity():
    a, b = ag.tensor([1.0]), ag.tensor([1.0])
    assert hash(a) == hash(a) and hash(a) != hash(b)
    assert {a: 1, b: 2}[b] == 2
