"""sort, argsort, topk and max/min with indices against PyTorch, on every backend.

Values must equal torch's exactly; indices too where no values tie (ties: the
first index first, which is torch's answer with ``stable=True``).
"""

from __future__ import annotations

import dataclasses

import lamina.ndarray as nd
import numpy as np
import pytest
import torch
from lamina.ndarray import ShapeError

NAN = float("nan")


def _distinct(*shape: int, seed: int = 0) -> np.ndarray:
    """float32 values without ties."""
    rng = np.random.default_rng(seed)
    return (rng.permutation(int(np.prod(shape))).reshape(shape) * 0.25 - 3.0).astype(
        np.float32)


def _check(ours: tuple[nd.NDArray, nd.NDArray], theirs: tuple[torch.Tensor, torch.Tensor],
           device: str) -> None:
    values, indices = ours
    assert values.device is indices.device is nd.get_device(device)
    assert indices.dtype is nd.int64
    np.testing.assert_array_equal(values.numpy(), theirs[0].numpy())
    np.testing.assert_array_equal(indices.numpy(), theirs[1].numpy())


@pytest.mark.parametrize("shape,axis", [((7,), 0), ((3, 5), 1), ((3, 5), 0), ((2, 3, 4), -2),
                                        ((4, 0), 1), ((0, 3), 0)])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_matches_torch(device: str, shape, axis: int, descending: bool) -> None:
    x = _distinct(*shape)
    _check(nd.sort(nd.array(x, device=device), axis, descending),
           torch.sort(torch.from_numpy(x), axis, descending), device)
    order = nd.argsort(nd.array(x, device=device), axis, descending)
    np.testing.assert_array_equal(order.numpy(),
                                  torch.argsort(torch.from_numpy(x), axis, descending).numpy())


def test_sort_of_a_strided_view(device: str) -> None:
    x = _distinct(4, 6)
    view = nd.array(x, device=device).T[::2]  # non-contiguous, offset 0, stride 2 rows
    _check(nd.sort(view, 0), torch.sort(torch.from_numpy(x).T[::2], 0), device)


@pytest.mark.parametrize("descending", [False, True])
def test_ties_keep_the_first_index_first_and_nan_is_largest(device: str,
                                                            descending: bool) -> None:
    x = np.array([[2.0, NAN, 1.0, 2.0, -np.inf, NAN, 1.0, np.inf]], np.float32)
    ours = nd.sort(nd.array(x, device=device), -1, descending)
    theirs = torch.sort(torch.from_numpy(x), stable=True, dim=-1, descending=descending)
    _check(ours, theirs, device)


@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_sort_integers_and_bools(device: str, dtype: str) -> None:
    x = np.array([[3, 1, 0, 1, 2], [1, 0, 0, 1, 1]]).astype(dtype)
    for descending in (False, True):
        _check(nd.sort(nd.array(x, device=device), 1, descending),
               torch.sort(torch.from_numpy(x), stable=True, dim=1, descending=descending),
               device)


def test_sort_0d(device: str) -> None:
    values, indices = nd.sort(nd.array(2.5, device=device), 0)
    assert values.shape == indices.shape == ()
    assert values.item() == 2.5 and indices.item() == 0


@pytest.mark.parametrize("k,axis,largest", [(2, -1, True), (3, 0, False), (0, 1, True),
                                            (5, 1, True), (1, 0, True)])
def test_topk_matches_torch(device: str, k: int, axis: int, largest: bool) -> None:
    x = _distinct(4, 5, seed=1)
    _check(nd.topk(nd.array(x, device=device), k, axis, largest),
           torch.topk(torch.from_numpy(x), k, axis, largest), device)


def test_topk_puts_nan_first_as_torch(device: str) -> None:
    x = np.array([2.0, NAN, 1.0, -np.inf, 5.0], np.float32)
    for largest in (True, False):
        _check(nd.topk(nd.array(x, device=device), 3, 0, largest),
               torch.topk(torch.from_numpy(x), 3, 0, largest), device)


def test_topk_errors(device: str) -> None:
    a = nd.array(_distinct(2, 3), device=device)
    with pytest.raises(ShapeError, match=r"topk: k=4 is out of range for dim 1 of size 3"):
        nd.topk(a, 4)
    with pytest.raises(ShapeError, match=r"topk: k=-1 is out of range"):
        nd.topk(a, -1)
    with pytest.raises(TypeError, match=r"topk: k must be an int, got float"):
        nd.topk(a, 1.0)  # type: ignore[arg-type]
    with pytest.raises(ShapeError, match=r"sort: axis 2 is out of range"):
        nd.sort(a, 2)


@pytest.mark.parametrize("keepdims", [False, True])
def test_max_min_with_indices_match_torch(device: str, keepdims: bool) -> None:
    x = _distinct(3, 4, 5, seed=2)
    x[1, 2, 3] = NAN  # NaN wins both, at its first index
    x[1, 0, 3] = NAN
    t = torch.from_numpy(x)
    for axis in (0, 1, 2, -1):
        a = nd.array(x, device=device)
        _check(nd.max_with_indices(a, axis, keepdims), torch.max(t, axis, keepdims), device)
        _check(nd.min_with_indices(a, axis, keepdims), torch.min(t, axis, keepdims), device)


def test_max_with_ties_gives_the_first_index(device: str) -> None:
    x = np.array([[1, 3, 3, 0], [2, 2, 2, 2]])
    values, indices = nd.max_with_indices(nd.array(x, device=device), 1)
    assert values.tolist() == [3, 2] and indices.tolist() == [1, 0]
    values, indices = nd.min_with_indices(nd.array(x, device=device), 1)
    assert values.tolist() == [0, 2] and indices.tolist() == [3, 0]


def test_max_with_indices_of_an_empty_dim_raises(device: str) -> None:
    a = nd.zeros(0, 3, device=device)
    with pytest.raises(ShapeError, match=r"max: cannot reduce dim 0 of size 0 \(shape \(0, 3\)\)"):
        nd.max_with_indices(a, 0)
    values, indices = nd.min_with_indices(a, 1)  # a non-empty dim of an empty array
    assert values.shape == indices.shape == (0,)


# ------------------------------------------------ the sort_last kernel (interface v2.1)
SPECIAL = [NAN, -np.inf, np.inf, -0.0, 0.0, 1.0, -1.0, 1.0, NAN, 0.0, -0.0, 2.0]


def _stable(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """numpy's stable argsort in PyTorch's order (descending: ties first index first)."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    flipped = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return x.shape[axis] - 1 - np.flip(flipped, axis)


def _sort_cases() -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    floats = np.stack([rng.permutation(SPECIAL) for _ in range(4)])
    ints = np.array([[5, -2**63, 2**63 - 1, -1, 0, -2**63], [0, 0, 1, 1, 0, 0]], np.int64)
    return [floats.astype(np.float32), floats, ints, rng.integers(-3, 3, (5, 6, 7)),
            np.zeros((3, 1), np.float32), np.zeros((2, 0), np.float32)]


@pytest.mark.parametrize("case", range(6))
@pytest.mark.parametrize("descending", [False, True])
def test_sort_kernel_matches_numpys_stable_argsort(device: str, case: int,
                                                   descending: bool) -> None:
    x = _sort_cases()[case]
    for axis in range(x.ndim):
        want = _stable(x, axis, descending)
        values, indices = nd.sort(nd.array(x, device=device), axis, descending)
        np.testing.assert_array_equal(indices.numpy(), want)
        np.testing.assert_array_equal(values.numpy(), np.take_along_axis(x, want, axis))
        n = x.shape[axis]
        for k in sorted({0, 1, n} & set(range(n + 1))):
            got = nd.topk(nd.array(x, device=device), k, axis, largest=descending)
            np.testing.assert_array_equal(got[1].numpy(), np.take(want, range(k), axis))


def test_sort_kernel_reads_non_compact_views(device: str) -> None:
    x = _sort_cases()[3]
    view = nd.array(x, device=device).permute(2, 0, 1)[::-2, 1:]  # negative step, offset
    host = x.transpose(2, 0, 1)[::-2, 1:]
    for axis in range(3):
        np.testing.assert_array_equal(nd.argsort(view, axis, True).numpy(),
                                      _stable(host, axis, True))
        values, indices = nd.min_with_indices(view, axis)
        np.testing.assert_array_equal(indices.numpy(), np.argmin(host, axis))


def test_min_max_with_indices_of_int64_extremes_and_nan(device: str) -> None:
    ints = np.array([[3, -2**63, 2**63 - 1, -2**63, 2**63 - 1]], np.int64)
    for op, ref in ((nd.max_with_indices, torch.max), (nd.min_with_indices, torch.min)):
        _check(op(nd.array(ints, device=device), 1), ref(torch.from_numpy(ints), 1), device)
        x = np.array([[1.0, -0.0, NAN, 0.0, NAN], [0.0, -0.0, 2.0, 2.0, -0.0]], np.float32)
        values, indices = op(nd.array(x, device=device), 1)
        theirs = ref(torch.from_numpy(x), 1)
        np.testing.assert_array_equal(values.numpy(), theirs[0].numpy())
        np.testing.assert_array_equal(indices.numpy(), theirs[1].numpy())


def test_compiled_devices_sort_with_their_kernel(device: str) -> None:
    dev = nd.get_device(device)
    if dev.type in ("numpy", "cpu", "cuda"):  # this repository's backends all have it
        assert dev.kernels.sort_last is not None
        # every dtype but the 16-bit floats, which it sorts as float32 (_narrow.py)
        assert set(dev.kernel_dtypes["sort_last"]) == set(dev.dtypes) - {"float16", "bfloat16"}


def test_a_device_without_sort_last_sorts_through_the_host(device: str,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    if device == "numpy":
        pytest.skip("the numpy backend's kernels are the host path")
    x = _sort_cases()[0]
    want = [nd.sort(nd.array(x, device=device), 1, True), nd.topk(nd.array(x, device=device), 3)]
    dev = nd.get_device(device)
    monkeypatch.setattr(dev, "kernels", dataclasses.replace(dev.kernels, sort_last=None))
    got = [nd.sort(nd.array(x, device=device), 1, True), nd.topk(nd.array(x, device=device), 3)]
    for ours, theirs in zip(got, want):
        for a, b in zip(ours, theirs):
            assert a.device is b.device is dev
            np.testing.assert_array_equal(a.numpy(), b.numpy())
