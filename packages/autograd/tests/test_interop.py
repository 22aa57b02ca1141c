"""Interop with PyTorch and numpy: DLPack, torch.tensor/as_tensor, from_numpy."""

from __future__ import annotations

import gc

import lamina.autograd as ag
import lamina.ndarray as nd
import numpy as np
import pytest
import torch
from conftest import DEVICES

# Devices whose buffers live in host memory and are shared: numpy and cpu.
HOST = [d for d in DEVICES if nd.get_device(d).kernels.wrap_numpy is not None]
# Devices whose tensors DLPack reports as CPU memory (a cuda tensor is kDLCUDA: a
# CPU-only PyTorch refuses it, as it refuses its own CUDA tensors' capsules).
CPU_KIND = [d for d in DEVICES if nd.get_device(d).type != "cuda"]


def _address(t: ag.Tensor) -> int:
    """Address of element 0 of a host-device tensor's view."""
    buf = t._data.buffer
    flat = buf.data if t.device.type == "numpy" else np.frombuffer(memoryview(buf), buf.dtype)
    return int(flat.ctypes.data) + t._data.offset * t.dtype.itemsize


VIEWS = {
    "compact": lambda t: t,
    "transposed": lambda t: t.t(),
    "sliced": lambda t: t[1:, ::2],
    "permuted 3-d": lambda t: t.reshape(2, 3, 2).permute(2, 0, 1),
    "0-d": lambda t: t[2, 1],
}


@pytest.mark.parametrize("host", HOST)
@pytest.mark.parametrize("view", VIEWS, ids=list(VIEWS))
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_torch_from_dlpack_is_zero_copy_on_host_devices(host: str, view: str,
                                                         dtype: str) -> None:
    x = VIEWS[view](ag.arange(12, device=host).to(dtype=dtype).reshape(3, 4))
    t = torch.from_dlpack(x)
    assert t.data_ptr() == _address(x)
    assert tuple(t.shape) == x.shape and t.stride() == x._data.strides
    assert str(t.dtype) == f"torch.{dtype}"
    np.testing.assert_array_equal(t.numpy(), x.numpy())
    assert torch.as_tensor(x).data_ptr() == _address(x)


@pytest.mark.parametrize("host", HOST)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_from_dlpack_of_torch_views_is_zero_copy_on_host_devices(host: str,
                                                                  dtype: torch.dtype) -> None:
    base = torch.arange(24).to(dtype).reshape(2, 3, 4)
    for t in (base, base[:, 1:, ::3], base.transpose(0, 2), base[1, 2]):
        x = ag.from_dlpack(t, device=host)
        assert _address(x) == t.data_ptr()
        assert x.shape == tuple(t.shape) and x._data.strides == t.stride()
        np.testing.assert_array_equal(x.numpy(), t.numpy())
    x = ag.from_dlpack(base, device=host)
    base[0, 0, 0] = 42
    assert x[0, 0, 0].item() == 42


@pytest.mark.parametrize("host", HOST)
def test_writes_through_a_shared_tensor_show_in_torch(host: str) -> None:
    x = ag.zeros(2, 3, device=host)
    t = torch.from_dlpack(x)
    t[1, 2] = 3.0
    assert x.tolist() == [[0.0, 0.0, 0.0], [0.0, 0.0, 3.0]]
    x._data[0, :] = 2.0  # a lamina kernel's write shows in torch
    assert t.tolist() == [[2.0, 2.0, 2.0], [0.0, 0.0, 3.0]]


@pytest.mark.parametrize("host", HOST)
def test_a_torch_view_outlives_the_tensor(host: str) -> None:
    x = ag.arange(4096.0, device=host).reshape(64, 64)
    t = torch.from_dlpack(x.t())
    src = torch.arange(4096.0).reshape(64, 64)
    y = ag.from_dlpack(src[:, 1::2], device=host)
    del x, src
    gc.collect()
    # Fresh tensors of the same size: a recycled block would be overwritten.
    junk = [ag.full((64, 64), -1.0, device=host) for _ in range(8)]
    junk += [torch.full((64, 64), -1.0) for _ in range(8)]
    want = torch.arange(4096.0).reshape(64, 64)
    torch.testing.assert_close(t, want.t())
    torch.testing.assert_close(torch.from_dlpack(y), want[:, 1::2])
    del junk


@pytest.mark.parametrize("device", CPU_KIND)
def test_torch_tensor_and_as_tensor_take_lamina_tensors(device: str) -> None:
    x = ag.tensor([[1.0, 2.0], [3.0, 4.0]], device=device)
    for make in (torch.tensor, torch.as_tensor):
        t = make(x)
        assert t.dtype == torch.float32
        torch.testing.assert_close(t, torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert torch.tensor(ag.tensor(3.0, device=device)).item() == 3.0  # 0-d
    assert torch.tensor(ag.tensor([1, 2], device=device)).dtype == torch.int64
    copied = torch.tensor(x)
    copied[0, 0] = 9.0
    assert x[0, 0].item() == 1.0  # torch.tensor always copies
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(ag.tensor(1.0, device=device))


def test_tensors_that_require_grad_export_their_values() -> None:
    w = ag.tensor([1.0, 2.0], requires_grad=True, device=CPU_KIND[0])
    assert torch.tensor(w).tolist() == [1.0, 2.0]
    assert np.from_dlpack(w).tolist() == [1.0, 2.0]


@pytest.mark.parametrize("device", DEVICES)
def test_torch_round_trip_on_every_device(device: str) -> None:
    t = torch.arange(12.0).reshape(3, 4)[:, 1::2]
    x = ag.from_dlpack(t, device=device)
    assert x.device == nd.get_device(device)
    back = torch.from_dlpack(x if device in CPU_KIND else x.cpu())
    torch.testing.assert_close(back, t)
    t[0, 0] = -1.0
    if device in HOST:  # shared both ways
        assert x[0, 0].item() == -1.0 and back.data_ptr() == t.data_ptr()
    else:  # a device backend holds its own buffers: copies
        assert x[0, 0].item() == 1.0
        with pytest.raises(BufferError, match="copy=False"):
            ag.from_dlpack(t, device=device, copy=False)


def test_from_numpy_shares_memory_on_host_devices_and_copies_elsewhere() -> None:
    a = np.arange(6.0).reshape(2, 3)[:, ::2]
    x = ag.from_numpy(a, device="numpy")
    assert _address(x) == a.ctypes.data and x.dtype == "float64"
    a[0, 0] = 8.0
    assert x[0, 0].item() == 8.0
    x._data[1, 1] = 9.0  # an NDArray write lands in the numpy array
    assert a[1, 1] == 9.0
    for device in DEVICES:
        y = ag.from_numpy(a, device=device)
        np.testing.assert_array_equal(y.numpy(), a)
        a[0, 0] = 0.0
        if device in HOST:
            assert _address(y) == a.ctypes.data and y[0, 0].item() == 0.0
        else:
            assert y[0, 0].item() == 8.0
        a[0, 0] = 8.0
    with pytest.raises(TypeError, match="from_numpy: expected a numpy.ndarray"):
        ag.from_numpy([1.0, 2.0])  # type: ignore[arg-type]
    with pytest.raises(ag.DTypeError, match="from_dlpack: unsupported dtype"):
        ag.from_numpy(np.ones(2, np.int32))


def test_device_memory_cannot_be_imported() -> None:
    class OnCuda:
        def __dlpack__(self, **kwargs: object) -> object:
            raise AssertionError("must not be asked for a capsule")

        def __dlpack_device__(self) -> tuple[int, int]:
            return (2, 0)

    with pytest.raises(BufferError, match="CUDA:0.*\\.cpu\\(\\)"):
        ag.from_dlpack(OnCuda())
    with pytest.raises(TypeError, match="DLPack protocol"):
        ag.from_dlpack(object())
