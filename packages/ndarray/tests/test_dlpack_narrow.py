"""DLPack exchange of the 16-bit floats with PyTorch, the consumer and producer that has both.

numpy has float16 but no bfloat16: a bfloat16 array travels as its uint16 bits in a
capsule whose dtype code says bfloat16 (``_dlpack.retag``).
"""

from __future__ import annotations

import lamina.ndarray as nd
import numpy as np
import pytest
import torch
from lamina.ndarray import from_dlpack

HOST = [b.name for b in nd.list_backends()
        if b.status == "available" and nd.get_device(b.name).kernels.wrap_numpy is not None]
NARROW = {"float16": torch.float16, "bfloat16": torch.bfloat16}
VALUES = [[1.0, -2.5, 3.0e4, 1.0e-3], [0.0, -0.0, 7.75, 65504.0], [0.1, 2.0e-5, -1.0, 9.0]]

VIEWS = {
    "compact": lambda a: a,
    "transposed": lambda a: a.T,
    "sliced with steps": lambda a: a[1:, ::2],
    "offset row": lambda a: a[2],
    "broadcast": lambda a: a[1:2].broadcast_to(4, 4),
    "flipped": lambda a: a.flip(1),
    "0-d": lambda a: a[1, 2],
}


def _bits(t: torch.Tensor) -> np.ndarray:
    return t.contiguous().view(torch.int16).numpy()


def _expected(dtype: str, view: str) -> torch.Tensor:
    """What PyTorch holds for VALUES in ``dtype`` after ``view``."""
    return VIEWS[view](torch.tensor(VALUES).to(NARROW[dtype]))


@pytest.mark.parametrize("view", VIEWS, ids=list(VIEWS))
@pytest.mark.parametrize("dtype", NARROW)
def test_export_to_torch_gives_the_same_bits(device: str, dtype: str, view: str) -> None:
    a = VIEWS[view](nd.array(VALUES, device=device).astype(dtype))
    # a device without host memory exports a host copy when asked for one
    capsule = a.__dlpack__(dl_device=(1, 0)) if device not in HOST else a
    t = torch.from_dlpack(capsule)
    assert t.dtype is NARROW[dtype]
    np.testing.assert_array_equal(_bits(t), _bits(_expected(dtype, view)))


@pytest.mark.parametrize("host", HOST)
@pytest.mark.parametrize("dtype", NARROW)
def test_export_shares_memory_on_host_devices(host: str, dtype: str) -> None:
    a = nd.array(VALUES, device=host).astype(dtype)
    t = torch.from_dlpack(a.T)
    t[1, 0] = 42.0  # element (0, 1) of a
    assert a[0, 1].item() == 42.0
    del a
    assert t[1, 0].item() == 42.0  # the consumer's view keeps the memory alive


@pytest.mark.parametrize("dtype", NARROW)
def test_import_from_torch_keeps_bits_shape_and_strides(device: str, dtype: str) -> None:
    src = torch.tensor(VALUES).to(NARROW[dtype])
    for view in (src, src.T, src[:, 1::2], src[1]):
        a = from_dlpack(view, device=device)
        assert a.dtype.name == dtype and a.shape == tuple(view.shape)
        np.testing.assert_array_equal(_bits(torch.from_dlpack(a.__dlpack__(dl_device=(1, 0)))),
                                      _bits(view))


@pytest.mark.parametrize("host", HOST)
def test_imported_bfloat16_is_a_copy_and_copy_false_is_refused(host: str) -> None:
    src = torch.ones(3, dtype=torch.bfloat16)
    a = from_dlpack(src, device=host)
    src[0] = 5.0
    assert a.tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(BufferError, match="bfloat16.*copy=False"):
        from_dlpack(src, device=host, copy=False)


@pytest.mark.parametrize("host", HOST)
def test_numpy_never_sees_bfloat16_bits_as_numbers(host: str) -> None:
    a = nd.array([1.0, 2.0], device=host).astype("bfloat16")
    np.testing.assert_array_equal(np.asarray(a), np.array([1.0, 2.0], np.float32))
    with pytest.raises(ValueError, match="without a copy"):
        np.asarray(a, copy=False)
    with pytest.raises((BufferError, TypeError, RuntimeError)):
        np.from_dlpack(a)  # numpy cannot type a bfloat16 capsule: it refuses, never bits


@pytest.mark.parametrize("host", HOST)
def test_float16_round_trips_through_numpy(host: str) -> None:
    a = nd.array([1.5, -2.0], device=host).astype("float16")
    shared = np.from_dlpack(a)
    assert shared.dtype == np.float16
    shared[0] = 8.0
    assert a[0].item() == 8.0
