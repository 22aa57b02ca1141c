"""DLPack exchange with numpy: zero copy on the host devices, copies elsewhere, clear errors."""

from __future__ import annotations

import gc
from types import SimpleNamespace

import lamina.ndarray as nd
import numpy as np
import pytest
from lamina.ndarray import NDArray, from_dlpack
from numpy.lib.stride_tricks import as_strided

# Devices whose buffers live in host memory: numpy, and cpu (buffer protocol + wrap_numpy).
HOST = [b.name for b in nd.list_backends()
        if b.status == "available" and nd.get_device(b.name).kernels.wrap_numpy is not None]


def _address(a: np.ndarray) -> int:
    return int(a.__array_interface__["data"][0])


def _base_address(a: NDArray) -> int:
    """Address of element 0 of the host buffer under ``a``."""
    buf = a.buffer
    flat = buf.data if a.device.type == "numpy" else np.frombuffer(memoryview(buf), buf.dtype)
    return _address(flat)


VIEWS = {
    "compact": lambda a: a,
    "transposed": lambda a: a.T,
    "sliced with steps": lambda a: a[1:, ::2],
    "offset row": lambda a: a[2],
    "broadcast": lambda a: a[1:2].broadcast_to(4, 4),
    "0-d": lambda a: a[1, 2],
}


@pytest.mark.parametrize("host", HOST)
@pytest.mark.parametrize("view", VIEWS, ids=list(VIEWS))
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_export_to_numpy_shares_memory_and_strides(host: str, view: str, dtype: str) -> None:
    base = nd.arange(12, device=host).astype(dtype).reshape(3, 4)
    a = VIEWS[view](base)
    host = np.from_dlpack(a)
    itemsize = np.dtype(dtype).itemsize
    assert host.dtype == dtype and host.shape == a.shape
    assert host.strides == tuple(s * itemsize for s in a.strides)
    assert _address(host) == _base_address(base) + a.offset * itemsize
    np.testing.assert_array_equal(host, a.numpy())
    assert a.__dlpack_device__() == (1, 0)


@pytest.mark.parametrize("host", HOST)
def test_writes_show_through_both_ways(host: str) -> None:
    a = nd.zeros((2, 3), device=host)
    view = np.from_dlpack(a.T)
    view[2, 1] = 5.0
    assert a.tolist() == [[0.0, 0.0, 0.0], [0.0, 0.0, 5.0]]
    back = from_dlpack(view, device=host)
    back[0, 0] = 7.0
    assert a[0, 0].item() == 7.0 and back.strides == (1, 3)
    a[:, :] = a + 1.0  # a kernel writing into the buffer shows in the view
    assert view[0, 0] == 8.0 and view[2, 1] == 6.0


@pytest.mark.parametrize("host", HOST)
def test_a_shared_view_outlives_its_array(host: str) -> None:
    a = nd.arange(4096.0, device=host).reshape(64, 64)
    view = np.from_dlpack(a[1:, ::2])
    imported = from_dlpack(np.arange(4096.0).reshape(64, 64)[::3], device=host)
    del a
    gc.collect()
    # Fresh arrays of the same size: a recycled block would be overwritten.
    junk = [nd.full((64, 64), -1.0, device=host) for _ in range(8)]
    np.testing.assert_array_equal(view, np.arange(4096.0).reshape(64, 64)[1:, ::2])
    np.testing.assert_array_equal(imported.numpy(), np.arange(4096.0).reshape(64, 64)[::3])
    del junk


@pytest.mark.parametrize("make", [
    lambda: np.arange(24.0).reshape(2, 3, 4),
    lambda: np.arange(24.0).reshape(2, 3, 4)[:, ::2, 1::3],
    lambda: np.arange(24.0).reshape(2, 3, 4).transpose(2, 0, 1),
    lambda: np.arange(24.0).reshape(2, 3, 4)[::-1, :, ::-2],
    lambda: as_strided(np.arange(4.0), (3, 4), (0, 8)),
    lambda: np.full((), 3.5, np.float32),
    lambda: np.arange(6, dtype=np.int64)[1::2],
], ids=["compact", "strided", "permuted", "negative strides", "broadcast", "0-d", "int64"])
@pytest.mark.parametrize("host", HOST)
def test_import_from_numpy_is_zero_copy_with_any_strides(host: str, make) -> None:
    src = make()
    a = from_dlpack(src, device=host)
    itemsize = src.itemsize
    assert a.shape == src.shape and a.dtype == src.dtype.name
    assert a.strides == tuple(s // itemsize for s in src.strides)
    np.testing.assert_array_equal(a.numpy(), src)
    # element (0, 0, ...) of the view is the first element of the source
    assert _base_address(a) + a.offset * itemsize == _address(src)


@pytest.mark.parametrize("host", HOST)
def test_flipped_views_export_a_copy_because_consumers_cannot_take_negative_strides(
        host: str) -> None:
    a = nd.arange(6.0, device=host).reshape(2, 3).flip(1)
    host = np.from_dlpack(a)
    assert all(s > 0 for s in host.strides)
    np.testing.assert_array_equal(host, [[2.0, 1.0, 0.0], [5.0, 4.0, 3.0]])
    with pytest.raises(BufferError, match="negative strides"):
        a.__dlpack__(copy=False)


@pytest.mark.parametrize("host", HOST)
def test_read_only_memory_is_copied_or_refused(host: str) -> None:
    src = np.broadcast_to(np.arange(4.0), (3, 4))
    a = from_dlpack(src, device=host)
    a[0, 0] = 5.0
    assert src[0, 0] == 0.0
    with pytest.raises(BufferError, match="read-only"):
        from_dlpack(src, device=host, copy=False)


@pytest.mark.parametrize("host", HOST)
def test_copy_true_gives_independent_memory(host: str) -> None:
    src = np.zeros(3)
    a = from_dlpack(src, device=host, copy=True)
    src[0] = 1.0
    assert a.tolist() == [0.0, 0.0, 0.0]
    host = np.from_dlpack(a, copy=True)
    host[1] = 2.0
    assert a.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("host", HOST)
def test_array_protocol_keeps_working_and_honours_copy_false(host: str) -> None:
    a = nd.arange(4.0, device=host)
    copied = np.asarray(a)
    copied[0] = 9.0
    assert a[0].item() == 0.0
    shared = np.asarray(a, copy=False)
    assert _address(shared) == _base_address(a)


def test_other_devices_copy_and_refuse_copy_false(device: str) -> None:
    src = np.arange(6.0).reshape(2, 3)
    a = from_dlpack(src[:, ::2], device=device)
    np.testing.assert_array_equal(a.numpy(), src[:, ::2])
    np.testing.assert_array_equal(np.from_dlpack(a.T), src[:, ::2].T)
    if device in HOST:
        return
    src[0, 0] = 100.0
    assert a[0, 0].item() == 0.0  # a copy
    with pytest.raises(BufferError, match="copy=False"):
        from_dlpack(src, device=device, copy=False)
    with pytest.raises(BufferError, match="no host pointer"):
        a.__dlpack__(copy=False)
    with pytest.raises(ValueError, match="without a copy"):
        np.asarray(a, copy=False)


class _Hidden:
    """A buffer that, like a plugin's, exposes no memory: no buffer protocol."""

    def __init__(self, inner: object) -> None:
        self.inner = inner


def test_a_backend_without_host_memory_access_copies_both_ways() -> None:
    numpy_backend = nd.get_device("numpy").backend
    kernels = {k: getattr(numpy_backend, k) for k in dir(numpy_backend)
               if not k.startswith("_") and k != "wrap_numpy"}
    kernels["to_numpy"] = lambda buf, *layout: numpy_backend.to_numpy(
        getattr(buf, "inner", buf), *layout)
    dev = nd.Device("plain", 0, "plain", SimpleNamespace(**kernels))
    src = np.arange(6.0).reshape(2, 3)
    a = from_dlpack(src[:, ::2], device=dev)  # imported as a copy
    src[0, 0] = 100.0
    assert a.tolist() == [[0.0, 2.0], [3.0, 5.0]]
    with pytest.raises(BufferError, match="no wrap_numpy.*copy=False"):
        from_dlpack(src, device=dev, copy=False)
    hidden = NDArray._view(_Hidden(a.buffer), a.shape, a.strides, a.offset, a.dtype, dev)
    host = np.from_dlpack(hidden.T)  # exported as a copy
    host[0, 0] = -1.0
    np.testing.assert_array_equal(host, [[-1.0, 3.0], [2.0, 5.0]])
    assert a[0, 0].item() == 0.0
    with pytest.raises(BufferError, match="no host pointer"):
        hidden.__dlpack__(copy=False)


def test_ndarray_input_moves_or_returns_itself(device: str) -> None:
    a = nd.arange(3.0, device="numpy")
    assert from_dlpack(a, device="numpy") is a
    assert from_dlpack(a, device="numpy", copy=True) is not a
    np.testing.assert_array_equal(from_dlpack(a, device=device).numpy(), [0.0, 1.0, 2.0])


def test_unsupported_dtype_and_non_dlpack_objects_raise() -> None:
    assert from_dlpack(np.ones(2, dtype=bool), device="numpy").dtype is nd.bool_
    with pytest.raises(nd.DTypeError, match="from_dlpack: unsupported dtype"):
        from_dlpack(np.ones(2, dtype=np.int32), device="numpy")
    with pytest.raises(nd.DTypeError, match="from_dlpack: unsupported dtype"):
        from_dlpack(np.ones(2, dtype=np.uint8), device="numpy")
    with pytest.raises(TypeError, match="DLPack protocol"):
        from_dlpack([1.0, 2.0])


class _FakeCudaProducer:
    def __dlpack__(self, **kwargs: object) -> object:
        raise AssertionError("must not be asked for a capsule")

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, 1)


def test_device_memory_is_refused_on_import() -> None:
    with pytest.raises(BufferError, match="CUDA:1.*host"):
        from_dlpack(_FakeCudaProducer(), device="numpy")


def test_cuda_arrays_report_kdlcuda_and_export_only_a_host_copy() -> None:
    # A stand-in for a cuda:1 device: the export path sees only the device's
    # type and index and the backend's to_numpy.
    numpy_dev = nd.get_device("numpy")
    src = nd.arange(6.0, device="numpy").reshape(2, 3)
    backend = SimpleNamespace(to_numpy=lambda buf, *layout: numpy_dev.backend.to_numpy(
        src.buffer, *layout))
    dev = SimpleNamespace(type="cuda", index=1, name="cuda:1", backend=backend, kernels=backend)
    a = NDArray._view(SimpleNamespace(), (3, 2), (1, 3), 0, src.dtype, dev)  # type: ignore[arg-type]
    assert a.__dlpack_device__() == (2, 1)
    with pytest.raises(BufferError, match="cuda:1 cannot export.*CUDA pointer"):
        np.from_dlpack(a)
    with pytest.raises(BufferError, match="cuda:1"):
        a.__dlpack__(dl_device=(2, 0))
    host = np.from_dlpack(a, device="cpu")
    np.testing.assert_array_equal(host, [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]])
