"""Bool masks, masked_fill and nonzero on Tensors against PyTorch, gradients included."""

from __future__ import annotations

import lamina.autograd as ag
import lamina.ndarray as nd
import numpy as np
import pytest
import torch
from conftest import DEVICES


def _pair(x: np.ndarray, device: str):
    return (ag.tensor(x, device=device, requires_grad=True),
            torch.tensor(x, requires_grad=True))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape,lead", [((3, 4), 2), ((3, 4), 1), ((2, 3, 2), 2), ((0, 3), 1)])
def test_mask_reads_and_their_gradients(device, shape, lead):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    mask = rng.integers(0, 2, shape[:lead]).astype(bool)
    a, t = _pair(x, device)
    got, want = a[mask], t[torch.from_numpy(mask)]
    assert got.shape == tuple(want.shape)
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    w = rng.standard_normal(tuple(want.shape)).astype(np.float32)
    (got * ag.tensor(w, device=device)).sum().backward()
    (want * torch.from_numpy(w)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize("device", DEVICES)
def test_the_issues_mask_lines(device):
    if "bool" not in nd.get_device(device).dtypes:
        pytest.skip(f"device {device} lists no bool (its comparisons give 1/0)")
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    a, t = _pair(x, device)
    assert a[a > 2].tolist() == t[t > 2].tolist()
    rows = a[(a > 2).long()]  # an int tensor gathers rows, as PyTorch
    assert rows.shape == tuple(t[(t > 2).long()].shape) == (3, 4, 4)
    out = a.masked_fill(a > 5, 0.5)
    want = t.masked_fill(t > 5, 0.5)
    assert out.tolist() == want.tolist()
    out.sum().backward()
    want.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), t.grad.numpy())
    assert a.nonzero().tolist() == t.nonzero().tolist()
    cond = ag.where(a > 5, a, 0.0)
    assert cond.tolist() == torch.where(t > 5, t, 0.0).tolist()


def test_mask_errors():
    a = ag.zeros(2, 3, device="numpy")
    with pytest.raises(IndexError, match=r"getitem: the shape of the mask \(3,\) does not"):
        a[np.array([True, False, True])]
    with pytest.raises(nd.DTypeError, match="masked_fill: the mask must be bool, got "):
        a.masked_fill(ag.ones(2, 3, device="numpy"), 1.0)
