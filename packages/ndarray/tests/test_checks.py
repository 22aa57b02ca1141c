"""The public argument checks every layer shares."""

from __future__ import annotations

import numpy as np
import pytest
from lamina import ndarray as nd


def test_normalize_axis() -> None:
    assert nd.normalize_axis(-1, 3, "sum") == 2 and nd.normalize_axis(np.int64(1), 3, "s") == 1
    with pytest.raises(nd.ShapeError, match=r"^sum: axis 3 is out of range for an array of 3 "
                       r"dims \(expected -3 <= axis < 3\)$"):
        nd.normalize_axis(3, 3, "sum")
    with pytest.raises(nd.ShapeError, match="^softmax: dim -2 is out of range for an array of 1 "
                       "dim "):
        nd.normalize_axis(-2, 1, "softmax", name="dim")
    with pytest.raises(TypeError, match="^sum: axis must be an int, got float 1.0$"):
        nd.normalize_axis(1.0, 3, "sum")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got bool True"):
        nd.normalize_axis(True, 3, "sum")


def test_normalize_axes_and_permutation() -> None:
    assert nd.normalize_axes(None, 3, "sum") == (0, 1, 2)
    assert nd.normalize_axes([-1, 0], 3, "sum") == (0, 2)
    with pytest.raises(nd.ShapeError, match=r"^flip: repeated axis in \(0, -3\)$"):
        nd.normalize_axes((0, -3), 3, "flip")
    assert nd.normalize_permutation((-1, 0, 1), 3, "permute") == (2, 0, 1)
    with pytest.raises(nd.ShapeError, match=r"^permute: axes \(0, 0\) are not a permutation of "
                       r"2 dims of an array of shape \(2, 3\)$"):
        nd.normalize_permutation((0, 0), 2, "permute", (2, 3))
    with pytest.raises(nd.ShapeError, match="not a permutation of 2 dims$"):
        nd.normalize_permutation((0,), 2, "permute")


def test_pair_and_conv_output_size() -> None:
    assert nd.pair(2, "conv2d") == (2, 2) and nd.pair([1, 3], "conv2d") == (1, 3)
    with pytest.raises(ValueError, match=r"^conv2d: stride must be an int >= 1 or a pair of "
                       r"them, got \(1, 0\)$"):
        nd.pair((1, 0), "conv2d", "stride", minimum=1)
    with pytest.raises(ValueError, match="got 1.5"):
        nd.pair(1.5, "pool", "kernel")
    x = np.zeros((1, 1, 9, 7))
    for k, s, p, d in [(3, 1, 1, 1), (2, 2, 0, 1), (3, 2, 1, 2)]:
        cols = nd.im2col(nd.array(x, device="numpy"), k, s, p, d)
        assert cols.shape[1:3] == (nd.conv_output_size(9, k, s, p, d),
                                   nd.conv_output_size(7, k, s, p, d))


def test_check_same_device_dtype() -> None:
    a = nd.zeros(2, device="numpy")
    nd.check_same_device_dtype((a, a, a), "op")
    with pytest.raises(nd.DTypeError, match=r"^op: dtypes differ, float32 \(arg 0\) and int64 "
                       r"\(arg 2\); convert one with .astype\(\)$"):
        nd.check_same_device_dtype((a, a, a.astype("int64")), "op")


def test_check_device_dtype() -> None:
    dev = nd.get_device("numpy")
    nd.check_device_dtype(dev, nd.float64, "op")

    class OneDType:
        name, dtypes = "tiny", ("float32", "int64")

    with pytest.raises(nd.DTypeError, match=r"^astype: device tiny does not support float64 "
                       r"\(it lists float32, int64\)$"):
        nd.check_device_dtype(OneDType(), nd.float64, "astype")
