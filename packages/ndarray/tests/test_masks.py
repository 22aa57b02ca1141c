"""Bool masks, integer-array reads, nonzero and masked_fill against numpy and
PyTorch, on every device (masks given as numpy arrays need no bool dtype on
the device; masks made by a comparison need it)."""

from __future__ import annotations

import lamina.ndarray as nd
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=1, max_size=3), lead=st.integers(1, 3),
       seed=st.integers(0, 2**16))
def test_boolean_mask_of_leading_dims_matches_numpy(shape, lead, seed):
    lead = min(lead, len(shape))
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    mask = rng.integers(0, 2, shape[:lead]).astype(bool)
    for device in [b.name for b in nd.list_backends() if b.status == "available"]:
        got = nd.array(x, device=device)[mask]
        np.testing.assert_array_equal(got.numpy(), x[mask])
        np.testing.assert_array_equal(got.numpy(), torch.from_numpy(x)[torch.from_numpy(mask)])


def test_comparison_masks_and_int_index_tensors_as_pytorch(device):
    if "bool" not in nd.get_device(device).dtypes:
        pytest.skip(f"device {device} lists no bool")
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    a, t = nd.array(x, device=device), torch.from_numpy(x)
    assert a[a > 2].tolist() == t[t > 2].tolist()
    # an int64 index tensor gathers rows, as PyTorch, even when it holds 0/1
    gathered = a[(a > 2).astype("int64")]
    assert gathered.shape == (3, 4, 4)
    np.testing.assert_array_equal(gathered.numpy(), t[(t > 2).long()].numpy())
    assert a[nd.array([2, 0], device=device)].tolist() == t[torch.tensor([2, 0])].tolist()
    assert a[[0, 2]].tolist() == t[[0, 2]].tolist()


def test_nonzero_and_masked_fill_as_pytorch(device):
    x = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]], np.float32)
    a, t = nd.array(x, device=device), torch.from_numpy(x)
    assert a.nonzero().dtype == nd.int64 and a.nonzero().tolist() == t.nonzero().tolist()
    assert nd.nonzero(nd.zeros((0, 3), device=device)).shape == (0, 2)
    mask = np.array([True, False, True])
    assert a.masked_fill(mask, 9.0).tolist() == t.masked_fill(torch.from_numpy(mask),
                                                               9.0).tolist()
    i = nd.array([1, 2, 3], device=device)
    filled = i.masked_fill(np.array([False, True, False]), 7.9)
    assert filled.dtype == nd.int64 and filled.tolist() == [1, 7, 3]  # keeps the dtype
    with pytest.raises(nd.ShapeError, match="masked_fill: mask of shape .2, 3. does not "):
        i.masked_fill(np.ones((2, 3), bool), 0)
    with pytest.raises(nd.DTypeError, match="masked_fill: a mask must be bool, got int64"):
        i.masked_fill(np.ones(3, np.int64), 0)
